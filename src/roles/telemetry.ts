/**
 * The service's own OpenTelemetry (SPEC 4.3: "native OTLP export of operator telemetry goes to a
 * collector"): with the standard `OTEL_EXPORTER_OTLP_*` variables set, a process exports its spans
 * (HTTP server, the gateway's model calls by the GenAI semantic conventions, bus publishes and
 * deliveries, PostgreSQL queries) and its metrics over OTLP/HTTP. Unset, nothing of OpenTelemetry
 * is loaded: the implementation (telemetry-otel.ts) is imported only here, only then.
 */
import type { Logger } from 'pino';
import type { Telemetry } from './role.js';

type Env = Readonly<Record<string, string | undefined>>;

const set = (v: string | undefined) => v !== undefined && v.trim() !== '';

/** Traces and metrics wanted by the environment, as the OpenTelemetry SDK specification reads it. */
export const otelSignals = (env: Env): { traces: boolean; metrics: boolean } => {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { traces: false, metrics: false };
  const any = set(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  return {
    traces:
      (any || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) && env.OTEL_TRACES_EXPORTER?.trim() !== 'none',
    metrics:
      (any || set(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)) && env.OTEL_METRICS_EXPORTER?.trim() !== 'none',
  };
};

/** Null (and nothing loaded) unless the environment asks for an OTLP export. */
export const startTelemetry = async (
  env: Env,
  info: { roles: readonly string[]; logger: Logger },
): Promise<Telemetry | null> => {
  const signals = otelSignals(env);
  if (!signals.traces && !signals.metrics) return null;
  const { startOtel } = await import('./telemetry-otel.js');
  return startOtel(env, signals, info);
};
