import * as grpc from '@grpc/grpc-js';
import type { MonthlySpend } from '../../gateway/spend-caps.js';
import type { QueryServiceClient } from './generated/svc/query/v1/QueryService.js';
import { loadService } from './server.js';

/**
 * QueryService MonthlyUsageSnapshot over gRPC, for a gateway that runs without the query role
 * (SVC_GATEWAY_QUERY_GRPC_ENDPOINT). The service token is the administrator token, as on every
 * internal gRPC service. Each call has a deadline so a hung query service cannot stall the refresh.
 */
export const grpcMonthlySpend = (endpoint: string, serviceToken: string, deadlineMs = 10_000) => {
  const Ctor = grpc.makeGenericClientConstructor(
    loadService('svc/query/v1/query.proto', 'svc.query.v1.QueryService'),
    'QueryService',
  );
  const client = new Ctor(endpoint, grpc.credentials.createInsecure()) as unknown as QueryServiceClient;
  return {
    spend: (month: string, orgIds: readonly string[]): Promise<MonthlySpend> =>
      new Promise((resolve, reject) => {
        const md = new grpc.Metadata();
        md.set('authorization', `Bearer ${serviceToken}`);
        client.MonthlyUsageSnapshot(
          { month, org_ids: [...orgIds] },
          md,
          { deadline: Date.now() + deadlineMs },
          (err, res) => (err ? reject(err) : resolve(res as MonthlySpend)),
        );
      }),
    close: () => client.close(),
  };
};
