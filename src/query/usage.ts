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
// One scan for the three answers: grouping sets by bucket, by provider and model, and the total;
// grouping() tells them apart (a bit per column left out of the set: 3 = bucket, 4 = provider and
// model, 7 = total). Three FINAL scans cost three times as much on 1M rows (bench/query).
const BY_BUCKET = '3';
const BY_MODEL = '4';
const TOTAL = '7';

export const usage = async (a: AnalyticsStore, q: UsageQuery) => {
  const g = q.granularity ?? 'day';
  if (g !== 'day' && g !== 'hour')
    throw new ServiceError('bad_request', 'granularity must be day or hour', { param: 'granularity' });
  const bucket =
    g === 'day'
      ? "formatDateTime(toStartOfDay(started_at, 'UTC'), '%Y-%m-%d', 'UTC')"
      : "formatDateTime(toStartOfHour(started_at, 'UTC'), '%Y-%m-%dT%H:00:00Z', 'UTC')";
  const w = tenantWhere({ orgIds: [q.orgId], projectId: q.projectId, window: q.window });
  const rows = await a.query<
    Bucket & { grouping_set: string; provider: string | null; model: string | null }
  >(
    `SELECT grouping(bucket, provider, model) AS grouping_set, ${bucket} AS bucket, provider, model_served AS model, ${AGGREGATES}
     FROM requests FINAL ${w.sql}
     GROUP BY GROUPING SETS ((bucket), (provider, model), ())
     ORDER BY grouping_set, bucket, cost_usd DESC, provider, model`,
    w.params,
  );
  const figures = ({
    grouping_set: _set,
    bucket: _bucket,
    provider: _provider,
    model: _model,
    ...rest
  }: (typeof rows)[number]) => rest;
  const series = rows
    .filter((r) => r.grouping_set === BY_BUCKET)
    .map((r) => ({ bucket: r.bucket, ...figures(r) }));
  const byModel = rows
    .filter((r) => r.grouping_set === BY_MODEL)
    .map((r) => ({ provider: r.provider, model: r.model, ...figures(r) }));
  const totals = rows.filter((r) => r.grouping_set === TOTAL).map(figures);
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
