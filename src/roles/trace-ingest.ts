import { Counter } from 'prom-client';
import { registerOtlpTraceRoute } from '../edges/http/traces/otlp.js';
import { SnapshotCache } from '../gateway/snapshot-cache.js';
import { ControlPlaneReads } from '../projections/control-plane/reads.js';
import { policySnapshotSource } from '../projections/policy/reads.js';
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
  // SPEC 1.10, 2.3: payloads are stored only when capture is on and policy allows it.
  const policies = new SnapshotCache(policySnapshotSource(ctx.pool), ctx.databaseUrl, {
    onError: (err) => ctx.logger.error({ err }, 'policy snapshot refresh failed'),
  });
  const spans = new Counter({
    name: 'svc_trace_ingest_spans_total',
    help: 'Spans received on POST /v1/traces by result (accepted, rejected)',
    labelNames: ['result'] as const,
    registers: [ctx.metrics],
  });
  return {
    name: 'trace-ingest',
    prepare: async () => {
      await policies.start();
    },
    stop: () => policies.stop(),
    http: (app) =>
      registerOtlpTraceRoute(app, {
        verifyKey: async (secret) => {
          const key = await reads.verifyTraceIngestSecret(secret);
          if (!key) return null;
          const permitted = policies.current().payloadCapture(key.org_id, key.project_id);
          return { orgId: key.org_id, projectId: key.project_id, capture: key.capture && permitted };
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
