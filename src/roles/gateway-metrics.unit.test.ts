import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { CompletedRequest } from '../gateway/completed.js';
import type { AttemptRecord } from '../gateway/pipeline.js';
import { gatewayMetrics, MAX_MODEL_SERIES, recordMetrics } from './gateway-metrics.js';

// Issue "conventions" item 5 (SPEC 6 metrics): tokens, cost and upstream latency by provider and
// model with bounded cardinality, time to first token and stream duration, counters as counters.

const attempt = (o: Partial<AttemptRecord> = {}): AttemptRecord => ({
  source: 'connection',
  kind: null,
  status_code: 200,
  message: null,
  provider: 'openai',
  model: 'gpt-4o',
  provider_model_id: 'gpt-4o-2024-08-06',
  outcome: 'success',
  latency_ms: 120,
  upstream_request_id: null,
  ...o,
});

const completed = (o: Partial<CompletedRequest> & { stream?: boolean } = {}): CompletedRequest => {
  const { stream = false, ...rest } = o;
  return {
    requestId: 'req_1',
    request: { stream } as CompletedRequest['request'],
    status: 'success',
    httpStatus: 200,
    provider: 'openai',
    modelServed: 'gpt-4o',
    startedAt: new Date(1_000),
    finishedAt: new Date(3_500),
    ttfbMs: 500,
    attempts: [attempt()],
    usage: {
      prompt_tokens: 100,
      completion_tokens: 40,
      total_tokens: 140,
      prompt_tokens_details: { cached_tokens: 30 },
      completion_tokens_details: { reasoning_tokens: 10 },
    },
    pricing: { billing_status: 'priced', total: '0.00125' } as CompletedRequest['pricing'],
    ...rest,
  } as CompletedRequest;
};

const series = async (registry: Registry, name: string) =>
  (await registry.metrics()).split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

describe('gateway metrics', () => {
  it('counts requests, tokens by type and cost by provider lane and model', async () => {
    const registry = new Registry();
    const m = gatewayMetrics([registry]);
    m.onCompleted(completed());
    m.onCompleted(completed());
    expect(await series(registry, 'svc_gateway_model_requests_total')).toEqual([
      'svc_gateway_model_requests_total{provider="openai",model="gpt-4o",status="success"} 2',
    ]);
    expect(await series(registry, 'svc_gateway_tokens_total')).toEqual([
      'svc_gateway_tokens_total{provider="openai",model="gpt-4o",type="input"} 200',
      'svc_gateway_tokens_total{provider="openai",model="gpt-4o",type="output"} 80',
      'svc_gateway_tokens_total{provider="openai",model="gpt-4o",type="cache_read"} 60',
      'svc_gateway_tokens_total{provider="openai",model="gpt-4o",type="reasoning"} 20',
    ]);
    expect(await series(registry, 'svc_gateway_cost_usd_total')).toEqual([
      'svc_gateway_cost_usd_total{provider="openai",model="gpt-4o"} 0.0025',
    ]);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE svc_gateway_tokens_total counter');
    expect(text).toContain('# TYPE svc_gateway_cost_usd_total counter');
  });

  it('observes every attempt upstream, and time to first token and stream duration of streamed successes', async () => {
    const registry = new Registry();
    const m = gatewayMetrics([registry]);
    m.onCompleted(
      completed({
        stream: true,
        attempts: [attempt({ outcome: 'failure', kind: 'UpstreamStatus', latency_ms: 40 }), attempt()],
      }),
    );
    m.onCompleted(completed({ stream: false }));
    expect(await series(registry, 'svc_gateway_upstream_latency_seconds_count')).toEqual([
      'svc_gateway_upstream_latency_seconds_count{provider="openai",model="gpt-4o",outcome="failure"} 1',
      'svc_gateway_upstream_latency_seconds_count{provider="openai",model="gpt-4o",outcome="success"} 2',
    ]);
    expect(await series(registry, 'svc_gateway_time_to_first_token_seconds_sum')).toEqual([
      'svc_gateway_time_to_first_token_seconds_sum{provider="openai",model="gpt-4o"} 0.5',
    ]);
    expect(await series(registry, 'svc_gateway_stream_duration_seconds_sum')).toEqual([
      'svc_gateway_stream_duration_seconds_sum{provider="openai",model="gpt-4o"} 2',
    ]);
  });

  it('gives at most MAX_MODEL_SERIES provider and model pairs series of their own; the rest count as _other', async () => {
    const registry = new Registry();
    const m = gatewayMetrics([registry]);
    for (let i = 0; i < MAX_MODEL_SERIES + 20; i++)
      m.onCompleted(completed({ modelServed: `model-${i}`, attempts: [attempt({ model: `model-${i}` })] }));
    const requests = await series(registry, 'svc_gateway_model_requests_total');
    expect(requests).toHaveLength(MAX_MODEL_SERIES + 1);
    expect(requests).toContain(
      'svc_gateway_model_requests_total{provider="openai",model="_other",status="success"} 20',
    );
  });

  it('counts a failed request that reached no upstream nowhere but its attempts (none)', async () => {
    const registry = new Registry();
    const m = gatewayMetrics([registry]);
    m.onCompleted(completed({ provider: null, modelServed: null, attempts: [], usage: null, pricing: null }));
    expect(await series(registry, 'svc_gateway_model_requests_total')).toEqual([]);
  });

  it('exposes request records as counters since start and the pending ones as a gauge', async () => {
    const registry = new Registry();
    const stats = { published: 3, spooled: 1, drained: 1, rejected: 0, corrupt: 0, pending: 2, busUp: true };
    recordMetrics(registry, () => stats);
    let text = await registry.metrics();
    expect(text).toContain('# TYPE svc_gateway_request_records_total counter');
    expect(text).toContain('svc_gateway_request_records_total{state="published"} 3');
    expect(text).toContain('# TYPE svc_gateway_request_records_pending gauge');
    expect(text).toContain('svc_gateway_request_records_pending 2');
    stats.published = 7;
    stats.pending = 0;
    text = await registry.metrics();
    expect(text).toContain('svc_gateway_request_records_total{state="published"} 7');
    expect(text).toContain('svc_gateway_request_records_pending 0');
  });
});
