import type * as grpc from '@grpc/grpc-js';
import type { AnalyticsStore } from '../../analytics/port.js';
import { ServiceError } from '../../lib/errors.js';
import { findRequest, listRequests, type RawRow, shapeRequest } from '../../query/requests.js';
import { monthlyUsageSnapshot } from '../../query/snapshot.js';
import { parseWindow } from '../../query/window.js';
import type { ListRequestsResponse__Output } from './generated/svc/query/v1/ListRequestsResponse.js';
import type { MonthlyUsageSnapshotResponse__Output } from './generated/svc/query/v1/MonthlyUsageSnapshotResponse.js';
import type { QueryServiceHandlers } from './generated/svc/query/v1/QueryService.js';
import type { RequestRow__Output } from './generated/svc/query/v1/RequestRow.js';
import { loadService } from './server.js';
import { unary } from './unary.js';

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const row = (r: RawRow): RequestRow__Output => {
  const s = shapeRequest(r);
  const text = (k: string) => (s[k] === null || s[k] === undefined ? '' : String(s[k]));
  return {
    request_id: text('request_id'),
    org_id: text('org_id'),
    project_id: text('project_id'),
    workspace_id: text('workspace_id'),
    api_key_id: text('api_key_id'),
    route: text('route'),
    model_requested: text('model_requested'),
    model_served: text('model_served'),
    provider: text('provider'),
    stream: s.stream === true,
    status: text('status'),
    http_status: Number(s.http_status),
    started_at: text('started_at'),
    finished_at: text('finished_at'),
    latency_ms: Number(s.latency_ms),
    prompt_tokens: text('prompt_tokens'),
    completion_tokens: text('completion_tokens'),
    total_tokens: text('total_tokens'),
    total_cost_usd: text('total_cost_usd'),
    billing_status: text('billing_status'),
    session_id: text('session_id'),
    error_code: text('error_code'),
  };
};

const requireOrg = (r: { org_id: unknown }): string => {
  const org = str(r.org_id);
  if (!org) throw new ServiceError('bad_request', 'org_id is required');
  return org;
};

/** QueryService (SPEC 4.8); the service token is the admin token, as for the control plane. */
export const addQueryService = (
  server: grpc.Server,
  analytics: AnalyticsStore,
  serviceToken: string,
): void => {
  server.addService(loadService('svc/query/v1/query.proto', 'svc.query.v1.QueryService'), {
    ListRequests: unary(serviceToken, async (r): Promise<ListRequestsResponse__Output> => {
      const limit = Number(r.limit) || 50;
      const page = await listRequests(analytics, {
        orgIds: [requireOrg(r)],
        projectId: str(r.project_id) || null,
        window: parseWindow({ from: str(r.from) || undefined, to: str(r.to) || undefined }),
        filters: { provider: str(r.provider), model: str(r.model), session_id: str(r.session_id) },
        limit: Math.min(limit, 1000),
        offset: Number(r.offset) || 0,
      });
      return { requests: page.data.map(row), total: String(page.total), has_more: page.has_more };
    }),
    GetRequest: unary(serviceToken, async (r): Promise<RequestRow__Output> => {
      const found = await findRequest(analytics, requireOrg(r), null, str(r.request_id));
      if (!found) throw new ServiceError('not_found', 'request not found');
      return row(found);
    }),
    MonthlyUsageSnapshot: unary(serviceToken, async (r): Promise<MonthlyUsageSnapshotResponse__Output> => {
      const ids = Array.isArray(r.org_ids) ? r.org_ids.filter((x): x is string => typeof x === 'string') : [];
      const snap = await monthlyUsageSnapshot(analytics, str(r.month), new Date(), ids);
      return { ...snap, entries: snap.entries.map((e) => ({ ...e, requests: String(e.requests) })) };
    }),
  } satisfies QueryServiceHandlers);
};
