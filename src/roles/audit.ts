import { Counter } from 'prom-client';
import { addAuditService } from '../edges/grpc/audit.js';
import { registerAuditRoutes } from '../edges/http/audit/routes.js';
import { AuditConsumer } from '../projections/audit/consumer.js';
import { activeSigningKey, publishedKeys, rotateSigningKey } from '../projections/audit/keys.js';
import { AuditReads } from '../projections/audit/reads.js';
import { SealThread } from '../projections/audit/seal-thread.js';
import { AuditSealer } from '../projections/audit/sealer.js';
import { ControlPlaneReads } from '../projections/control-plane/reads.js';
import type { Role, RoleContext } from './role.js';

/**
 * The audit role (SPEC 1.8, 4.8, 6; ARCHITECTURE.md roles): consumes `svc.audit.events.>` into each
 * tenant's log, seals signed Merkle batches with their archives and manifests in the object store,
 * and serves AuditService over gRPC and the `/api/audit` read facade.
 */
export const auditRole = (ctx: RoleContext): Role => {
  const objects = ctx.objects;
  if (!objects) throw new Error('the audit role needs the object store');
  const reads = new AuditReads(ctx.pool, objects);
  const controlPlane = new ControlPlaneReads(ctx.pool);
  // Beside a data process, the consumer and sealer run there (cli/data-process.ts SPLIT_ROLES),
  // and so do their metrics: the data process's are appended to this one's /metrics.
  const background = !ctx.backgroundElsewhere.has('audit');
  const registers = background ? [ctx.metrics] : [];
  const stored = new Counter({
    name: 'svc_audit_events_stored_total',
    help: 'Audit events stored in their tenant log (stored), deliveries of a stored event (duplicate), and other bytes under a stored id (conflict, kept out)',
    labelNames: ['result'] as const,
    registers,
  });
  const sealedEvents = new Counter({
    name: 'svc_audit_events_sealed_total',
    help: 'Audit events sealed into signed batches',
    registers,
  });
  const sealedBatches = new Counter({
    name: 'svc_audit_batches_sealed_total',
    help: 'Signed audit batches sealed',
    registers,
  });
  const consumer = new AuditConsumer({
    bus: ctx.bus,
    pool: ctx.pool,
    onError: (err, context) => ctx.logger.warn({ err }, context),
    onStored: (s) => {
      stored.inc({ result: 'stored' }, s.appended);
      if (s.duplicates > s.conflicts) stored.inc({ result: 'duplicate' }, s.duplicates - s.conflicts);
      if (s.conflicts > 0) {
        stored.inc({ result: 'conflict' }, s.conflicts);
        ctx.logger.error(
          { conflicts: s.conflicts },
          'audit events arrived under an id already stored with other bytes; the stored event was kept',
        );
      }
    },
  });
  // Batches are built on a worker thread: their hashing, JSON and gzip would otherwise hold up the
  // consumer storing events on this event loop (bench:audit).
  const sealThread = new SealThread();
  const sealer = new AuditSealer({
    pool: ctx.pool,
    objects,
    masterKey: ctx.masterKey,
    builder: sealThread.build,
    policy: {
      maxEvents: ctx.config.SVC_AUDIT_BATCH_MAX_EVENTS,
      maxAgeMs: ctx.config.SVC_AUDIT_BATCH_MAX_AGE_MS,
    },
    intervalMs: ctx.config.SVC_AUDIT_SEAL_INTERVAL_MS,
    onSealed: (b) => {
      sealedBatches.inc();
      sealedEvents.inc(b.treeSize - b.firstIndex);
    },
    onError: (err, context) => ctx.logger.error({ err }, context),
  });
  if (background)
    ctx.health.register('audit', async () => {
      const err = consumer.lastError ?? sealer.lastError;
      if (err) throw err;
    });
  return {
    name: 'audit',
    // The first key is made before anything is sealed or published.
    prepare: async () => {
      await activeSigningKey(ctx.pool, ctx.masterKey);
    },
    http: (app) =>
      registerAuditRoutes(app, {
        reads,
        verifyToken: (secret) => controlPlane.verifyAuditToken(secret),
        keys: () => publishedKeys(ctx.pool),
        rotateKey: () => rotateSigningKey(ctx.pool, ctx.masterKey),
        adminToken: ctx.adminToken,
      }),
    grpc: (server) => addAuditService(server, reads, ctx.adminToken),
    start: async () => {
      if (!background) return;
      await consumer.start();
      sealer.start();
    },
    stop: async () => {
      if (!background) return;
      try {
        await consumer.stop();
        await sealer.stop();
      } finally {
        await sealThread.close();
      }
    },
  };
};
