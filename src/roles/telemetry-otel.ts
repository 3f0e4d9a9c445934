import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  metrics,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { MessageHandler } from '../events/bus.js';
import type { Pool } from '../events/postgres/pool.js';
import type { CompletedRequest } from '../gateway/completed.js';
import { describeError } from '../lib/errors.js';
import { VERSION } from '../lib/version.js';
import type { Telemetry } from './role.js';

/**
 * The OpenTelemetry SDK behind `Telemetry` (telemetry.ts), loaded only when an OTLP export is asked
 * for. Spans follow the semantic conventions: HTTP server spans, one CLIENT span per model call of
 * the gateway with the GenAI attributes (`gen_ai.*`), messaging spans for the bus, database spans
 * for PostgreSQL; metrics are `http.server.request.duration`, `gen_ai.client.token.usage` and
 * `gen_ai.client.operation.duration`. The exporters read the standard variables themselves
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `_HEADERS`, `_TIMEOUT`, and the per-signal ones); the protocol is
 * `http/protobuf` unless `OTEL_EXPORTER_OTLP_PROTOCOL` (or the per-signal one) says `http/json`.
 */

type Env = Readonly<Record<string, string | undefined>>;

const SCOPE = 'model-gateway-service';

/** The GenAI conventions' operation names. */
const GENAI_OPERATION: Record<string, string> = {
  chat: 'chat',
  responses: 'chat',
  embeddings: 'embeddings',
  images: 'generate_content',
  moderations: 'moderations',
  count_tokens: 'count_tokens',
};

/** The GenAI conventions' provider names, by adapter id (a lane is named after its adapter unless told). */
const GENAI_PROVIDER: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  bedrock: 'aws.bedrock',
  'bedrock-gov': 'aws.bedrock',
  azure: 'azure.ai.openai',
  'azure-gov': 'azure.ai.openai',
};

/** A bus subject's family (`svc.requests`), not the subject: span names stay few. */
const family = (subject: string) => subject.split('.').slice(0, 2).join('.');

/** The OTLP/HTTP encoding asked for a signal; null (and said) for grpc, which is not supported. */
const encodingOf = (env: Env, signal: 'TRACES' | 'METRICS', logger: Logger): 'json' | 'protobuf' | null => {
  const protocol = (
    env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  if (protocol !== 'grpc') return protocol === 'http/json' ? 'json' : 'protobuf';
  logger.error(
    `OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: set http/protobuf or http/json; ${signal.toLowerCase()} are not exported`,
  );
  return null;
};

const fail = (span: Span, err: unknown) => {
  span.recordException(err instanceof Error ? err : new Error(describeError(err)));
  span.setStatus({ code: SpanStatusCode.ERROR, message: describeError(err) });
};

/** Runs `work` as the span's operation: a failure marks the span, and the span ends either way. */
const ending = async <T>(span: Span, work: () => Promise<T>): Promise<T> => {
  try {
    return await work();
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
};

/** Attributes without the ones that are not known (undefined or null). */
const known = (attributes: Record<string, AttributeValue | null | undefined>): Attributes =>
  Object.fromEntries(
    Object.entries(attributes).filter(([, v]) => v !== undefined && v !== null),
  ) as Attributes;

export const startOtel = (
  env: Env,
  signals: { traces: boolean; metrics: boolean },
  info: { roles: readonly string[]; logger: Logger },
): Telemetry => {
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        'service.name': 'model-gateway-service',
        'service.version': VERSION,
        'svc.roles': info.roles.join(','),
      }),
    )
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
    .merge(detectResources({ detectors: [envDetector] }));

  const traceEncoding = signals.traces ? encodingOf(env, 'TRACES', info.logger) : null;
  const tracerProvider = traceEncoding
    ? new NodeTracerProvider({
        resource,
        spanProcessors: [
          new BatchSpanProcessor(
            traceEncoding === 'json' ? new JsonTraceExporter() : new ProtoTraceExporter(),
          ),
        ],
      })
    : null;
  // The global provider, the AsyncLocalStorage context manager and the W3C propagators.
  tracerProvider?.register();
  const metricEncoding = signals.metrics ? encodingOf(env, 'METRICS', info.logger) : null;
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL ?? 60_000);
  const meterProvider = metricEncoding
    ? new MeterProvider({
        resource,
        readers: [
          new PeriodicExportingMetricReader({
            exporter: metricEncoding === 'json' ? new JsonMetricExporter() : new ProtoMetricExporter(),
            exportIntervalMillis: Number.isFinite(interval) && interval > 0 ? interval : 60_000,
          }),
        ],
      })
    : null;
  if (meterProvider) metrics.setGlobalMeterProvider(meterProvider);

  const tracing = tracerProvider !== null;
  const tracer = trace.getTracer(SCOPE, VERSION);
  const meter = metrics.getMeter(SCOPE, VERSION);
  const httpDuration = meter.createHistogram('http.server.request.duration', {
    unit: 's',
    description: 'Duration of HTTP server requests',
  });
  const tokenUsage = meter.createHistogram('gen_ai.client.token.usage', {
    unit: '{token}',
    description: 'Tokens used by the model calls of the gateway',
  });
  const operationDuration = meter.createHistogram('gen_ai.client.operation.duration', {
    unit: 's',
    description: 'Duration of the model calls of the gateway',
  });

  /** The server span of each request in flight, by request id (the gateway's x-svc-request-id). */
  const serving = new Map<string, { span: Span; ctx: Context; started: number }>();

  /** Ends a request's server span once (a response and an abort may both be told). */
  const endServer = (request: FastifyRequest, status: number) => {
    const s = serving.get(request.id);
    if (!s) return;
    serving.delete(request.id);
    const route = request.routeOptions.url;
    const attributes: Attributes = {
      'http.request.method': request.method,
      'http.response.status_code': status,
      ...(route ? { 'http.route': route } : {}),
    };
    httpDuration.record((performance.now() - s.started) / 1_000, attributes);
    s.span.setAttribute('http.response.status_code', status);
    if (status >= 500) s.span.setStatus({ code: SpanStatusCode.ERROR });
    s.span.end();
  };

  return {
    instrumentHttp(app) {
      app.addHook('onRequest', (request, _reply, done) => {
        const route = request.routeOptions.url;
        const parent = tracing ? propagation.extract(ROOT_CONTEXT, request.headers) : ROOT_CONTEXT;
        const span = tracer.startSpan(
          route ? `${request.method} ${route}` : request.method,
          {
            kind: SpanKind.SERVER,
            attributes: {
              'http.request.method': request.method,
              'url.path': request.url.split('?')[0] ?? '/',
              'url.scheme': 'http',
              ...(route ? { 'http.route': route } : {}),
              'svc.request_id': request.id,
            },
          },
          parent,
        );
        const ctx = trace.setSpan(parent, span);
        serving.set(request.id, { span, ctx, started: performance.now() });
        context.with(ctx, done);
      });
      app.addHook('onResponse', (request, reply, done) => {
        endServer(request, reply.statusCode);
        done();
      });
      app.addHook('onRequestAbort', (request, done) => {
        endServer(request, 499);
        done();
      });
    },

    traceBus(bus) {
      if (!tracing) return bus;
      const system = bus.adapter === 'nats' ? 'nats' : 'postgresql';
      const publishSpan = <T>(subject: string, count: number, run: () => Promise<T>): Promise<T> =>
        tracer.startActiveSpan(
          `send ${family(subject)}`,
          {
            kind: SpanKind.PRODUCER,
            attributes: {
              'messaging.system': system,
              'messaging.operation.type': 'send',
              'messaging.destination.name': subject,
              ...(count > 1 ? { 'messaging.batch.message_count': count } : {}),
            },
          },
          (span) => ending(span, run),
        );
      const traced = (filter: string, handler: MessageHandler): MessageHandler => {
        return (message) =>
          tracer.startActiveSpan(
            `process ${family(message.subject)}`,
            {
              kind: SpanKind.CONSUMER,
              attributes: {
                'messaging.system': system,
                'messaging.operation.type': 'process',
                'messaging.destination.name': message.subject,
                'messaging.consumer.group.name': filter,
                'messaging.message.id': message.messageId,
                'messaging.message.delivery_count': message.deliveryCount,
              },
            },
            ROOT_CONTEXT,
            (span) => ending(span, () => handler(message)),
          );
      };
      return {
        get adapter() {
          return bus.adapter;
        },
        ensureStreams: () => bus.ensureStreams(),
        publish: (subject, data, options) =>
          publishSpan(subject, 1, () => bus.publish(subject, data, options)),
        publishMany: (messages) =>
          messages.length === 0
            ? bus.publishMany(messages)
            : publishSpan(messages[0]!.subject, messages.length, () => bus.publishMany(messages)),
        consume: (name, filter, handler, options) =>
          bus.consume(name, filter, traced(name, handler), options),
        health: () => bus.health(),
        close: () => bus.close(),
      };
    },

    tracePool(pool: Pool, database: string) {
      if (!tracing) return;
      const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
      const patched = (...args: unknown[]): unknown => {
        // Callback calls, and queries outside any traced operation (cache refreshes), pass through.
        const parent = trace.getSpan(context.active());
        if (!parent || typeof args.at(-1) === 'function') return query(...args);
        const first = args[0];
        const text =
          typeof first === 'string'
            ? first
            : (((first as { text?: unknown } | null)?.text as string | undefined) ?? '');
        const verb = /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';
        const span = tracer.startSpan(verb, {
          kind: SpanKind.CLIENT,
          attributes: {
            'db.system.name': 'postgresql',
            'db.namespace': database,
            'db.operation.name': verb,
            'db.query.text': text.length > 2_000 ? `${text.slice(0, 2_000)}...` : text,
          },
        });
        return ending(span, () => query(...args) as Promise<unknown>);
      };
      (pool as unknown as { query: typeof patched }).query = patched;
    },

    onCompleted(c: CompletedRequest) {
      const operation = GENAI_OPERATION[c.request.operation] ?? c.request.operation;
      const lane = c.provider ?? c.attempts.at(-1)?.provider ?? null;
      const provider = lane === null ? null : (GENAI_PROVIDER[lane] ?? lane);
      const errorType = c.status === 'error' ? (c.errorCode ?? c.errorType ?? 'error') : null;
      const base = {
        'gen_ai.operation.name': operation,
        'gen_ai.provider.name': provider,
        'gen_ai.system': provider,
        'gen_ai.response.model': c.modelServed ? (c.providerModelId ?? c.modelServed) : null,
      };
      // Metrics by the model of the endpoint that served (the registry's names, not what a client typed).
      const metricAttributes = known({ ...base, 'gen_ai.request.model': c.modelServed });
      operationDuration.record(
        (c.finishedAt.getTime() - c.startedAt.getTime()) / 1_000,
        known({ ...metricAttributes, 'error.type': errorType }),
      );
      if (c.usage) {
        tokenUsage.record(c.usage.prompt_tokens, { ...metricAttributes, 'gen_ai.token.type': 'input' });
        tokenUsage.record(c.usage.completion_tokens, { ...metricAttributes, 'gen_ai.token.type': 'output' });
      }
      if (!tracing) return;
      const request = c.request;
      const span = tracer.startSpan(
        `${operation} ${c.modelServed ?? request.model}`,
        {
          kind: SpanKind.CLIENT,
          startTime: c.startedAt,
          attributes: known({
            ...base,
            'gen_ai.request.model': request.model,
            'gen_ai.request.max_tokens': request.maxTokens,
            'gen_ai.request.temperature': request.temperature,
            'gen_ai.request.top_p': request.topP,
            'gen_ai.usage.input_tokens': c.usage?.prompt_tokens,
            'gen_ai.usage.output_tokens': c.usage?.completion_tokens,
            'gen_ai.usage.cache_read.input_tokens': c.usage?.prompt_tokens_details?.cached_tokens || null,
            'svc.request_id': c.requestId,
            'svc.stream': request.stream,
            'svc.lane': lane,
            'svc.billing_status': c.pricing?.billing_status,
            'svc.cost_usd': c.pricing?.total,
            'svc.attempts': c.attempts.length,
            'error.type': errorType,
          }),
        },
        serving.get(c.requestId)?.ctx ?? context.active(),
      );
      for (const a of c.attempts)
        span.addEvent(
          'gen_ai.attempt',
          known({
            'svc.lane': a.provider,
            'gen_ai.request.model': a.model,
            'svc.outcome': a.outcome,
            'svc.latency_ms': a.latency_ms,
            'http.response.status_code': a.status_code,
            'error.type': a.kind,
            'svc.upstream_request_id': a.upstream_request_id || null,
          }),
        );
      if (errorType) span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
      span.end(c.finishedAt);
    },

    async shutdown() {
      await Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
    },
  };
};
