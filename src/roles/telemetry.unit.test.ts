import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { otelSignals, startTelemetry } from './telemetry.js';

// OpenTelemetry export only when the standard variables ask for it (issue: conventions, item 6).
describe('otelSignals', () => {
  it('exports nothing without an OTLP endpoint', () => {
    expect(otelSignals({})).toEqual({ traces: false, metrics: false });
    expect(otelSignals({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toEqual({ traces: false, metrics: false });
    expect(otelSignals({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toEqual({
      traces: false,
      metrics: false,
    });
  });

  it('exports both signals to the common endpoint, and each to its own', () => {
    expect(otelSignals({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({
      traces: true,
      metrics: true,
    });
    expect(otelSignals({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual({
      traces: true,
      metrics: false,
    });
    expect(otelSignals({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' })).toEqual({
      traces: false,
      metrics: true,
    });
  });

  it('obeys OTEL_SDK_DISABLED and the none exporters', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(otelSignals({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' })).toEqual({
      traces: false,
      metrics: false,
    });
    expect(otelSignals({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toEqual({
      traces: false,
      metrics: true,
    });
    expect(otelSignals({ ...endpoint, OTEL_METRICS_EXPORTER: 'none' })).toEqual({
      traces: true,
      metrics: false,
    });
  });

  it('starts nothing when unset', async () => {
    expect(await startTelemetry({}, { roles: ['gateway'], logger: pino({ level: 'silent' }) })).toBeNull();
  });
});
