import { PostgresEscrow } from '../commands/wallet/postgres-escrow.js';
import { settlement } from '../commands/wallet/settlement.js';
import { billingHealthJobs } from '../jobs/billing-health.js';
import { IngestConsumer } from '../projections/ingest/consumer.js';
import type { RequestLoggedHook } from '../projections/ingest/flush.js';
import { ingestMetrics } from '../projections/ingest/metrics.js';
import { TraceProjector } from '../projections/traces/projector.js';
import type { Role, RoleContext, RoleFactory } from './role.js';

export interface IngestRoleHooks {
  /**
   * Settlement plugs in here (SPEC 1.4 escrow holds): called once a request's rows, body pack and audit
   * event are durable and before its message is acked; idempotent by request_id, since a
   * redelivered request calls it again. Absent: nothing to settle.
   */
  onRequestLogged?: RequestLoggedHook;
}

/** The ingest worker: request.completed from the bus into ClickHouse and body packs (SPEC 6). */
export const ingestRoleWith =
  (hooks: IngestRoleHooks = {}): RoleFactory =>
  (ctx: RoleContext): Role => {
    const { analytics, objects } = ctx;
    // The composition root opens both for every data role; their absence is a wiring bug.
    if (!analytics || !objects) throw new Error('the ingest role needs the analytics and object stores');
    const consumer = new IngestConsumer({
      bus: ctx.bus,
      analytics,
      objects,
      metrics: ingestMetrics(ctx.metrics),
      durabilitySampleStride: ctx.config.SVC_INGEST_DURABILITY_SAMPLE_STRIDE,
      onRequestLogged: hooks.onRequestLogged,
      onError: (err, context) => ctx.logger.warn({ err, context }, 'ingest problem'),
    });
    ctx.health.register('ingest', async () => {
      if (consumer.lastError) throw consumer.lastError;
    });
    // The trace projector (SPEC 4.3, 6): svc.traces.* into the trace tables, beside request ingest.
    const traces = new TraceProjector({
      bus: ctx.bus,
      analytics,
      onError: (err, context) => ctx.logger.warn({ err, context }, 'trace projector problem'),
    });
    ctx.health.register('trace-projector', async () => {
      if (traces.lastError) throw traces.lastError;
    });
    return {
      name: 'ingest',
      start: async () => {
        await consumer.start();
        await traces.start();
      },
      stop: async () => {
        await traces.stop();
        await consumer.stop();
      },
    };
  };

/**
 * The ingest role as `svc serve` runs it: wallet settlement (SPEC 1.4, 8) after each request is
 * durable, idempotent per request id; a failed settlement leaves the message for redelivery.
 */
export const ingestRole: RoleFactory = async (ctx) => {
  const { settleRequest } = settlement({ store: ctx.eventStore, holds: new PostgresEscrow(ctx.pool) });
  const role = await ingestRoleWith({
    onRequestLogged: async (envelope) => {
      await settleRequest(envelope);
    },
  })(ctx);
  // The billing-health evaluator reads the rows this role writes (SPEC 3 quarantine).
  const c = ctx.config;
  const jobs = billingHealthJobs({
    connectionString: ctx.databaseUrl,
    store: ctx.eventStore,
    analytics: ctx.analytics!,
    thresholds: {
      minFailures: c.SVC_BILLING_QUARANTINE_MIN_FAILURES,
      minRatioBps: c.SVC_BILLING_QUARANTINE_MIN_RATIO_BPS,
      action: c.SVC_BILLING_QUARANTINE_ACTION,
      windowMinutes: c.SVC_BILLING_QUARANTINE_WINDOW_MINUTES,
    },
    logger: ctx.logger,
  });
  ctx.health.register('billing-health-jobs', async () => {
    if (jobs.lastError) throw jobs.lastError;
  });
  return {
    ...role,
    start: async () => {
      await role.start?.();
      jobs.start();
    },
    stop: async () => {
      await jobs.stop();
      await role.stop?.();
    },
  };
};
