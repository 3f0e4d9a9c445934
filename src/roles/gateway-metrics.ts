import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PublisherStats } from '../events/envelopes/publish.js';
import type { CompletedRequest } from '../gateway/completed.js';
import { childrenOf } from '../lib/metrics.js';

/**
 * The gateway's Prometheus metrics, by the habits of the ecosystem (LiteLLM, Envoy AI Gateway, the
 * OpenTelemetry GenAI metrics): requests, tokens, cost and upstream latency by provider lane and
 * model, time to first token and stream duration for streamed replies; counters are counters
 * (`_total`), durations histograms. Provider and model come from the registry (the endpoint that
 * served), never from what a client typed, and at most MAX_MODEL_SERIES pairs get series of their
 * own; past that, a pair counts under model `_other`, so no client can grow the exposition.
 */

/** Distinct (provider, model) pairs with series of their own. */
export const MAX_MODEL_SERIES = 500;
export const OTHER_MODEL = '_other';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export interface GatewayMetrics {
  onAttempt(provider: string, outcome: string): void;
  observe(route: string, status: number, stream: boolean, seconds: number, ttfbSeconds: number | null): void;
  onCompleted(completed: CompletedRequest): void;
  /** An in-memory snapshot of a read model (registry, tenancy, policy) was reloaded. */
  onReload(snapshot: 'registry' | 'tenancy' | 'policy'): void;
}

const TOKEN_TYPES = ['input', 'output', 'cache_read', 'cache_write', 'reasoning'] as const;

/** Token counts of a usage by type; counts a usage does not report are 0. */
export const tokensByType = (
  usage: CompletedRequest['usage'],
): Record<(typeof TOKEN_TYPES)[number], number> => {
  const cacheRead = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  const cacheWrite = usage?.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    input: usage?.prompt_tokens ?? 0,
    output: usage?.completion_tokens ?? 0,
    cache_read: cacheRead,
    cache_write: cacheWrite,
    reasoning: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
  };
};

export const gatewayMetrics = (registers: Registry[]): GatewayMetrics => {
  const counter = (name: string, help: string, labelNames: readonly string[]) =>
    childrenOf(new Counter({ name, help, labelNames, registers }));
  const histogram = (name: string, help: string, labelNames: readonly string[], buckets: number[]) =>
    childrenOf(new Histogram({ name, help, labelNames, buckets, registers }));

  const attempts = counter('svc_gateway_attempt_total', 'Upstream attempts by provider lane and outcome', [
    'provider',
    'outcome',
  ]);
  const duration = histogram(
    'svc_gateway_request_duration_seconds',
    'Gateway request duration to the last byte',
    ['route', 'status', 'stream'],
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
  );
  const ttfb = histogram(
    'svc_gateway_time_to_first_byte_seconds',
    'Gateway time to the first reply byte',
    ['route', 'stream'],
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  // Loud before quarantine (SPEC 3): served replies that failed billing, by endpoint and reason; a
  // card that leaves a reported meter unpriced shows here as missing_price on every such reply.
  const billingFailed = counter(
    'svc_gateway_billing_failed_total',
    'Served requests whose reply could not be priced, by provider lane, model and reason',
    ['provider', 'model', 'reason'],
  );
  const requests = counter(
    'svc_gateway_model_requests_total',
    'Requests that reached an upstream, by the provider lane and model of the endpoint that served (or last failed) and status (success, error)',
    ['provider', 'model', 'status'],
  );
  const tokens = counter(
    'svc_gateway_tokens_total',
    'Tokens the upstream reported, by provider lane, model and type (input, output, cache_read, cache_write, reasoning; cache and reasoning tokens are also counted in input and output)',
    ['provider', 'model', 'type'],
  );
  const cost = counter(
    'svc_gateway_cost_usd_total',
    'Priced cost in USD by provider lane and model (a float for dashboards; the ledger and the request rows hold the exact amounts)',
    ['provider', 'model'],
  );
  const upstreamLatency = histogram(
    'svc_gateway_upstream_latency_seconds',
    'Duration of each upstream attempt (to its full reply, or to the first chunk of a stream), by provider lane, model and outcome',
    ['provider', 'model', 'outcome'],
    LATENCY_BUCKETS,
  );
  const ttft = histogram(
    'svc_gateway_time_to_first_token_seconds',
    'Streamed requests: time from the request to the first streamed byte of the reply, by provider lane and model',
    ['provider', 'model'],
    LATENCY_BUCKETS,
  );
  const streamDuration = histogram(
    'svc_gateway_stream_duration_seconds',
    'Streamed requests: time from the first streamed byte to the last, by provider lane and model',
    ['provider', 'model'],
    LATENCY_BUCKETS,
  );

  const reloads = counter(
    'svc_gateway_snapshot_reloads_total',
    "Reloads of the gateway's in-memory snapshots of the registry, tenancy and policies (each follows its read model's revision)",
    ['snapshot'],
  );

  const pairs = new Set<string>();
  /** The model label of a pair: its own while the budget lasts, `_other` after. */
  const modelLabel = (provider: string, model: string): string => {
    const key = `${provider}\u0000${model}`;
    if (pairs.has(key)) return model;
    if (pairs.size >= MAX_MODEL_SERIES) return OTHER_MODEL;
    pairs.add(key);
    return model;
  };

  return {
    onReload: (snapshot) => reloads(snapshot).inc(),
    onAttempt: (provider, outcome) => attempts(provider, outcome).inc(),
    observe: (route, status, stream, seconds, ttfbSeconds) => {
      duration(route, String(status), String(stream)).observe(seconds);
      if (ttfbSeconds !== null) ttfb(route, String(stream)).observe(ttfbSeconds);
    },
    onCompleted: (c) => {
      for (const a of c.attempts)
        upstreamLatency(a.provider, modelLabel(a.provider, a.model), a.outcome).observe(a.latency_ms / 1_000);
      if (c.provider === null || c.modelServed === null) return;
      const provider = c.provider;
      const model = modelLabel(provider, c.modelServed);
      requests(provider, model, c.status).inc();
      if (c.usage) {
        const counts = tokensByType(c.usage);
        for (const type of TOKEN_TYPES) if (counts[type] > 0) tokens(provider, model, type).inc(counts[type]);
      }
      const pricing = c.pricing;
      if (pricing?.billing_status === 'priced') {
        const usd = Number(pricing.total);
        if (usd > 0) cost(provider, model).inc(usd);
      } else if (pricing?.billing_status === 'failed')
        billingFailed(provider, model, pricing.billing_reason).inc();
      if (c.request.stream && c.status === 'success' && c.ttfbMs !== null) {
        ttft(provider, model).observe(c.ttfbMs / 1_000);
        const total = c.finishedAt.getTime() - c.startedAt.getTime();
        streamDuration(provider, model).observe(Math.max(0, total - c.ttfbMs) / 1_000);
      }
    },
  };
};

const RECORD_STATES = ['published', 'spooled', 'drained', 'rejected'] as const;

/**
 * The request records of this process: how many went each way since start (a counter, which a
 * scrape reads as a rate) and how many wait now (a gauge).
 */
export const recordMetrics = (registry: Registry, stats: () => PublisherStats): void => {
  new Counter({
    name: 'svc_gateway_request_records_total',
    help: 'request.completed envelopes since start: published to the bus, spooled on disk, drained from the spool to the bus, rejected by the bus',
    labelNames: ['state'] as const,
    registers: [registry],
    // The publisher keeps the running totals; a scrape reads them as they are.
    collect() {
      const s = stats();
      this.reset();
      for (const state of RECORD_STATES) this.inc({ state }, s[state]);
    },
  });
  new Gauge({
    name: 'svc_gateway_request_records_pending',
    help: 'request.completed envelopes not yet on the bus (in flight or in the spool)',
    registers: [registry],
    collect() {
      this.set(stats().pending);
    },
  });
};
