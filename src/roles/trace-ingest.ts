import { Counter } from 'prom-client';
import { registerOtlpTraceRoute } from '../edges/http/traces/otlp.js';
import { ControlPlaneReads } from '../projections/control-plane/reads.js';
import { acceptExport } from '../projections/traces/intake.js';
import type { Role, RoleContext } from './role.js';

/**
 * The trace-ingest role (SPEC 4.3, ARCHITECTURE.md roles): `POST /v1/traces` under a project's trace
 * ingest key, normalized records onto `svc.traces.*`. The trace projector that writes them into
 * ClickHouse runs with the ingest role.
 */
export const traceIngestRole = (ctx: RoleContext): Role => {
  const objects = ctx.objects;
  if (!objects) throw new Error('the trace-ingest role needs the object store');
  const reads = new ControlPlaneReads(ctx.pool);
  const spans = new Counter({
    name: 'svc_trace_ingest_spans_total',
    help: 'Spans received on POST /v1/traces by result (accepted, rejected)',
    labelNames: ['result'] as const,
    registers: [ctx.metrics],
  });
  return {
    name: 'trace-ingest',
    http: (app) =>
      registerOtlpTraceRoute(app, {
        verifyKey: async (secret) => {
          const key = await reads.verifyTraceIngestSecret(secret);
          return key ? { orgId: key.org_id, projectId: key.project_id, capture: key.capture } : null;
        },
        accept: ({ export: decoded, identity }) =>
          acceptExport(
            { bus: ctx.bus, objects },
            {
              export: decoded,
              orgId: identity.orgId,
              projectId: identity.projectId,
              capture: identity.capture,
              source: 'trace-ingest',
            },
          ),
        maxBodyBytes: ctx.config.SVC_TRACE_MAX_BODY_BYTES,
        maxInFlight: ctx.config.SVC_TRACE_MAX_IN_FLIGHT,
        maxInFlightBytes: ctx.config.SVC_TRACE_MAX_IN_FLIGHT_BYTES,
        onAccepted: (r) => {
          spans.inc({ result: 'accepted' }, r.acceptedSpans);
          if (r.rejectedSpans > 0) spans.inc({ result: 'rejected' }, r.rejectedSpans);
        },
        onError: (err) => ctx.logger.warn({ err }, 'trace intake problem'),
      }),
  };
};
