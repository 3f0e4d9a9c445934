import type { AnalyticsStore } from '../analytics/port.js';
import { ServiceError } from '../lib/errors.js';
import { tenantWhere } from './filters.js';
import { int, money, type TimeWindow } from './window.js';

export interface UsageQuery {
  orgId: string;
  projectId: string | null;
  window: TimeWindow;
  granularity?: string;
}

interface Bucket {
  bucket: string;
  requests: string;
  errors: string;
  prompt_tokens: string;
  completion_tokens: string;
  total_tokens: string;
  cost_usd: string;
}

const shape = <T extends Omit<Bucket, 'bucket'>>(r: T) => ({
  ...r,
  requests: int(r.requests),
  errors: int(r.errors),
  prompt_tokens: int(r.prompt_tokens),
  completion_tokens: int(r.completion_tokens),
  total_tokens: int(r.total_tokens),
  cost_usd: money(r.cost_usd),
});

const AGGREGATES = `count() AS requests, countIf(http_status >= 400) AS errors, sum(prompt_tokens) AS prompt_tokens,
  sum(completion_tokens) AS completion_tokens, sum(total_tokens) AS total_tokens, sum(total_cost_usd) AS cost_usd`;

// Reads requests FINAL, not the per-minute rollup: the rollup may double count after redelivery.
export const usage = async (a: AnalyticsStore, q: UsageQuery) => {
  const g = q.granularity ?? 'day';
  if (g !== 'day' && g !== 'hour')
    throw new ServiceError('bad_request', 'granularity must be day or hour', { param: 'granularity' });
  const bucket =
    g === 'day'
      ? "formatDateTime(toStartOfDay(started_at, 'UTC'), '%Y-%m-%d', 'UTC')"
      : "formatDateTime(toStartOfHour(started_at, 'UTC'), '%Y-%m-%dT%H:00:00Z', 'UTC')";
  const w = tenantWhere({ orgIds: [q.orgId], projectId: q.projectId, window: q.window });
  const [series, byModel, totals] = await Promise.all([
    a.query<Bucket>(
      `SELECT ${bucket} AS bucket, ${AGGREGATES} FROM requests FINAL ${w.sql} GROUP BY bucket ORDER BY bucket`,
      w.params,
    ),
    a.query<Bucket & { provider: string | null; model: string | null }>(
      `SELECT provider, model_served AS model, ${AGGREGATES} FROM requests FINAL ${w.sql}
       GROUP BY provider, model ORDER BY cost_usd DESC, provider, model`,
      w.params,
    ),
    a.query<Bucket>(`SELECT ${AGGREGATES} FROM requests FINAL ${w.sql}`, w.params),
  ]);
  return {
    org_id: q.orgId,
    project_id: q.projectId,
    granularity: g,
    totals: shape(
      totals[0] ?? {
        requests: '0',
        errors: '0',
        prompt_tokens: '0',
        completion_tokens: '0',
        total_tokens: '0',
        cost_usd: '0',
      },
    ),
    series: series.map(shape),
    by_model: byModel.map(shape),
  };
};

export const overview = async (a: AnalyticsStore, q: UsageQuery) => {
  const w = tenantWhere({ orgIds: [q.orgId], projectId: q.projectId, window: q.window });
  const rows = await a.query<Record<string, unknown>>(
    `SELECT ${AGGREGATES}, uniqExactIf(session_id, session_id IS NOT NULL) AS sessions,
       uniqExact(api_key_id) AS active_api_keys, countIf(stream) AS streamed,
       quantileExact(0.5)(latency_ms) AS latency_p50_ms, quantileExact(0.95)(latency_ms) AS latency_p95_ms,
       countIf(billing_status = 'failed') AS billing_failures
     FROM requests FINAL ${w.sql}`,
    w.params,
  );
  const r = rows[0] ?? {};
  const base = shape({
    requests: String(r.requests ?? '0'),
    errors: String(r.errors ?? '0'),
    prompt_tokens: String(r.prompt_tokens ?? '0'),
    completion_tokens: String(r.completion_tokens ?? '0'),
    total_tokens: String(r.total_tokens ?? '0'),
    cost_usd: String(r.cost_usd ?? '0'),
  });
  const requests = base.requests;
  return {
    org_id: q.orgId,
    project_id: q.projectId,
    ...base,
    error_rate: requests === 0 ? 0 : base.errors / requests,
    sessions: int(r.sessions),
    active_api_keys: int(r.active_api_keys),
    streamed: int(r.streamed),
    billing_failures: int(r.billing_failures),
    latency_p50_ms: requests === 0 ? null : Number(r.latency_p50_ms),
    latency_p95_ms: requests === 0 ? null : Number(r.latency_p95_ms),
  };
};
