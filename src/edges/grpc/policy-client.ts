import * as grpc from '@grpc/grpc-js';
import { PolicyUnreachableError } from '../../gateway/policy.js';
import { ServiceError } from '../../lib/errors.js';
import type { PolicyDecision, PolicyQuery } from '../../policy/evaluate.js';
import type { PolicyDecision__Output } from './generated/svc/policy/v1/PolicyDecision.js';
import type { PolicyServiceClient } from './generated/svc/policy/v1/PolicyService.js';
import { POLICY_PROTO, POLICY_SERVICE } from './policy.js';
import { decisionFromWire, queryToWire } from './policy-wire.js';
import { loadService } from './server.js';

/** Statuses that mean the service did not answer: the gateway's fail mode decides. */
const UNREACHABLE: ReadonlySet<number> = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.CANCELLED,
  grpc.status.RESOURCE_EXHAUSTED,
]);

const clientError = (err: grpc.ServiceError): Error => {
  if (UNREACHABLE.has(err.code))
    return new PolicyUnreachableError(err.details || err.message, { cause: err });
  if (err.code === grpc.status.INVALID_ARGUMENT)
    return new ServiceError('bad_request', `the policy service refused this request: ${err.details}`);
  return new Error(`PolicyService.Evaluate failed: ${grpc.status[err.code]} ${err.details}`, { cause: err });
};

/**
 * PolicyService.Evaluate over gRPC, for a gateway with POLICY_GRPC_ENDPOINT set: the service token
 * is the administrator token, as on every internal service; each call carries the deadline given.
 * The cache and the fail mode are the gateway's (gateway/policy.ts RemotePolicy).
 */
export const grpcPolicy = (endpoint: string, serviceToken: string) => {
  const Ctor = grpc.makeGenericClientConstructor(loadService(POLICY_PROTO, POLICY_SERVICE), 'PolicyService');
  const client = new Ctor(endpoint, grpc.credentials.createInsecure()) as unknown as PolicyServiceClient;
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${serviceToken}`);
  return {
    evaluate: (query: PolicyQuery, deadlineMs: number): Promise<PolicyDecision> =>
      new Promise((resolve, reject) => {
        client.Evaluate(queryToWire(query), metadata, { deadline: Date.now() + deadlineMs }, (err, res) => {
          if (err) reject(clientError(err));
          else
            try {
              resolve(decisionFromWire(res as PolicyDecision__Output, query.candidates.length));
            } catch (e) {
              reject(e);
            }
        });
      }),
    close: () => client.close(),
  };
};
