import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PublisherStats } from '../events/envelopes/publish.js';
import type { CompletedRequest } from '../gateway/completed.js';
import { labelled } from '../lib/metrics.js';

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
  const attempts = new Counter({
    name: 'svc_gateway_attempt_total',
    help: 'Upstream attempts by provider lane and outcome',
    labelNames: ['provider', 'outcome'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'svc_gateway_request_duration_seconds',
    help: 'Gateway request duration to the last byte',
    labelNames: ['route', 'status', 'stream'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers,
  });
  const ttfb = new Histogram({
    name: 'svc_gateway_time_to_first_byte_seconds',
    help: 'Gateway time to the first reply byte',
    labelNames: ['route', 'stream'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  // Loud before quarantine (SPEC 3): served replies that failed billing, by endpoint and reason; a
  // card that leaves a reported meter unpriced shows here as missing_price on every such reply.
  const billingFailed = new Counter({
    name: 'svc_gateway_billing_failed_total',
    help: 'Served requests whose reply could not be priced, by provider lane, model and reason',
    labelNames: ['provider', 'model', 'reason'] as const,
    registers,
  });
  const requests = new Counter({
    name: 'svc_gateway_model_requests_total',
    help: 'Requests that reached an upstream, by the provider lane and model of the endpoint that served (or last failed) and status (success, error)',
    labelNames: ['provider', 'model', 'status'] as const,
    registers,
  });
  const tokens = new Counter({
    name: 'svc_gateway_tokens_total',
    help: 'Tokens the upstream reported, by provider lane, model and type (input, output, cache_read, cache_write, reasoning; cache and reasoning tokens are also counted in input and output)',
    labelNames: ['provider', 'model', 'type'] as const,
    registers,
  });
  const cost = new Counter({
    name: 'svc_gateway_cost_usd_total',
    help: 'Priced cost in USD by provider lane and model (a float for dashboards; the ledger and the request rows hold the exact amounts)',
    labelNames: ['provider', 'model'] as const,
    registers,
  });
  const upstreamLatency = new Histogram({
    name: 'svc_gateway_upstream_latency_seconds',
    help: 'Duration of each upstream attempt (to its full reply, or to the first chunk of a stream), by provider lane, model and outcome',
    labelNames: ['provider', 'model', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const ttft = new Histogram({
    name: 'svc_gateway_time_to_first_token_seconds',
    help: 'Streamed requests: time from the request to the first streamed byte of the reply, by provider lane and model',
    labelNames: ['provider', 'model'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const streamDuration = new Histogram({
    name: 'svc_gateway_stream_duration_seconds',
    help: 'Streamed requests: time from the first streamed byte to the last, by provider lane and model',
    labelNames: ['provider', 'model'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });

  const children = {
    attempts: new Map<string, ReturnType<typeof attempts.labels>>(),
    duration: new Map<string, ReturnType<typeof duration.labels>>(),
    ttfb: new Map<string, ReturnType<typeof ttfb.labels>>(),
    billingFailed: new Map<string, ReturnType<typeof billingFailed.labels>>(),
    requests: new Map<string, ReturnType<typeof requests.labels>>(),
    tokens: new Map<string, ReturnType<typeof tokens.labels>>(),
    cost: new Map<string, ReturnType<typeof cost.labels>>(),
    upstreamLatency: new Map<string, ReturnType<typeof upstreamLatency.labels>>(),
    ttft: new Map<string, ReturnType<typeof ttft.labels>>(),
    streamDuration: new Map<string, ReturnType<typeof streamDuration.labels>>(),
  };
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
    onAttempt: (provider, outcome) => labelled(children.attempts, attempts, provider, outcome).inc(),
    observe: (route, status, stream, seconds, ttfbSeconds) => {
      labelled(children.duration, duration, route, String(status), String(stream)).observe(seconds);
      if (ttfbSeconds !== null) labelled(children.ttfb, ttfb, route, String(stream)).observe(ttfbSeconds);
    },
    onCompleted: (c) => {
      for (const a of c.attempts) {
        const model = modelLabel(a.provider, a.model);
        labelled(children.upstreamLatency, upstreamLatency, a.provider, model, a.outcome).observe(
          a.latency_ms / 1_000,
        );
      }
      if (c.provider === null || c.modelServed === null) return;
      const provider = c.provider;
      const model = modelLabel(provider, c.modelServed);
      labelled(children.requests, requests, provider, model, c.status).inc();
      if (c.usage) {
        const counts = tokensByType(c.usage);
        for (const type of TOKEN_TYPES)
          if (counts[type] > 0) labelled(children.tokens, tokens, provider, model, type).inc(counts[type]);
      }
      const pricing = c.pricing;
      if (pricing?.billing_status === 'priced') {
        const usd = Number(pricing.total);
        if (usd > 0) labelled(children.cost, cost, provider, model).inc(usd);
      } else if (pricing?.billing_status === 'failed')
        labelled(children.billingFailed, billingFailed, provider, model, pricing.billing_reason).inc();
      if (c.request.stream && c.status === 'success' && c.ttfbMs !== null) {
        labelled(children.ttft, ttft, provider, model).observe(c.ttfbMs / 1_000);
        const total = c.finishedAt.getTime() - c.startedAt.getTime();
        labelled(children.streamDuration, streamDuration, provider, model).observe(
          Math.max(0, total - c.ttfbMs) / 1_000,
        );
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
  const seen: Record<(typeof RECORD_STATES)[number], number> = {
    published: 0,
    spooled: 0,
    drained: 0,
    rejected: 0,
  };
  new Counter({
    name: 'svc_gateway_request_records_total',
    help: 'request.completed envelopes since start: published to the bus, spooled on disk, drained from the spool to the bus, rejected by the bus',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const s = stats();
      for (const state of RECORD_STATES) {
        const delta = s[state] - seen[state];
        if (delta > 0) this.inc({ state }, delta);
        else this.inc({ state }, 0);
        seen[state] = Math.max(seen[state], s[state]);
      }
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
