import { randomBytes } from 'node:crypto';
import type { Bus, OutgoingMessage } from '../../src/events/bus.js';
import { buildRequestRecord } from '../../src/events/envelopes/record.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { createPool } from '../../src/events/postgres/pool.js';
import { sampleDraft } from '../../test/fixtures/envelopes/envelopes.fixtures.js';
import type { BenchService } from './service.js';

/**
 * The comparison beside the trace figures: request ingest in the same `svc serve`, measured as
 * bench:ingest measures it (request.completed envelopes of bench/ingest/envelopes.ts's shape, with
 * inline request and response bodies of `body` bytes, BYOK-funded as the bench project is) but
 * through the service's own ingest role in its data process: `count` envelopes are published onto
 * the service's bus from the bench (batches of 250, 8 in flight), and the window runs until the
 * query API shows them all. The bench org's ids are used, so the rows are countable through
 * GET /api/requests. The publishing client's CPU is the bench's; the bus server's share of the
 * publish (the embedded PostgreSQL, in the tree) counts as the service's, as it does when the
 * gateway publishes.
 */

const BATCH = 250;
const IN_FLIGHT = 8;

const bodyOf = (i: number, side: string, size: number) => {
  const text = `{"${side}":${i},"data":"${randomBytes(size).toString('base64')}`;
  return `${text.slice(0, size - 2)}"}`;
};

const messagesOf = (svc: BenchService, prefix: string, i: number, body: number): OutgoingMessage[] => {
  const now = new Date();
  const draft = sampleDraft({
    request_id: `req_${prefix}_${i}`,
    org_id: svc.orgId,
    workspace_id: svc.workspaceId,
    project_id: svc.projectId,
    funding: 'byok',
    started_at: new Date(now.getTime() - 1_250).toISOString(),
    finished_at: now.toISOString(),
    trace: body > 0 ? { full_tracing: true, source: 'header' } : { full_tracing: false, source: 'none' },
  });
  const bodies = body > 0 ? { request: bodyOf(i, 'q', body), response: bodyOf(i, 'a', body) } : {};
  return buildRequestRecord(draft, bodies).record.messages;
};

/** A publisher onto the service's own bus; close() before the service stops. */
export const requestPublisher = (svc: BenchService) => {
  // Not named svc*: the embedded server's lifetime rules count only svc sessions as users.
  const pool =
    svc.bus.kind === 'postgres'
      ? createPool(svc.bus.url, { max: IN_FLIGHT, application: 'bench-traces-publisher' })
      : null;
  const bus: Bus = pool
    ? new PostgresBus(pool, {})
    : new NatsBus({ servers: svc.bus.url, connectionName: 'bench-traces' });
  return {
    publish: async (count: number, body: number, prefix: string): Promise<void> => {
      let next = 0;
      const worker = async () => {
        while (next < count) {
          const from = next;
          next += BATCH;
          const batch: OutgoingMessage[] = [];
          for (let i = from; i < Math.min(count, from + BATCH); i++)
            batch.push(...messagesOf(svc, prefix, i, body));
          await bus.publishMany(batch);
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    },
    close: async () => {
      await bus.close();
      await pool?.end();
    },
  };
};
