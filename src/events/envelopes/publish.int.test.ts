import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleDraft } from '../../../test/fixtures/envelopes/envelopes.fixtures.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import type { BusMessage } from '../bus.js';
import { PostgresBus } from '../postgres/bus.js';
import { createPool, type Pool } from '../postgres/pool.js';
import { blake3Hex, bodyBytes } from './body.js';
import { RequestRecordPublisher } from './publish.js';
import { isChunkedBody, requestCompletedSchema } from './request-completed.js';

const waitFor = async (check: () => boolean, timeoutMs = 15_000): Promise<void> => {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('RequestRecordPublisher on the Postgres bus', () => {
  let db: TestDatabase;
  let dataDir: string;
  const closers: (() => Promise<unknown>)[] = [];

  const liveBus = async () => {
    const bus = new PostgresBus(db.pool, { connectionString: db.url, pollMs: 100 });
    await bus.ensureStreams();
    closers.push(() => bus.close());
    return bus;
  };
  const collect = async (bus: PostgresBus, name: string, filter: string) => {
    const seen: BusMessage[] = [];
    const consumer = await bus.consume(
      name,
      filter,
      async (m) => {
        seen.push(m);
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 3, batchSize: 50 },
    );
    closers.push(() => consumer.close());
    return seen;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'svc-spool-int-'));
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
    await db?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers the envelope under message id = request id, after its body chunks', async () => {
    const bus = await liveBus();
    const publisher = await RequestRecordPublisher.open({ bus, dataDir: join(dataDir, 'live') });
    closers.push(() => publisher.close());
    const response = randomBytes(600_000);
    publisher.record(sampleDraft({ request_id: 'req_int_1' }), { request: '{"model":"gpt-x"}', response });
    await publisher.flush();
    expect(publisher.stats()).toMatchObject({ published: 1, spooled: 0, pending: 0 });

    const seen = await collect(bus, 'envelopes-live', 'svc.requests.>');
    await waitFor(() => seen.some((m) => m.messageId === 'req_int_1'));
    const parent = seen.find((m) => m.messageId === 'req_int_1')!;
    expect(parent.subject).toBe('svc.requests.org_a.req_int_1');
    const envelope = requestCompletedSchema.parse(JSON.parse(new TextDecoder().decode(parent.data)));
    expect(envelope.request_id).toBe('req_int_1');

    const ref = envelope.bodies?.response;
    if (!ref || !isChunkedBody(ref)) throw new Error('expected a chunked response body');
    const chunks = seen.filter((m) => m.subject.startsWith(`${ref.subject_prefix}.`));
    expect(chunks.map((m) => m.messageId)).toEqual(['req_int_1:res:0', 'req_int_1:res:1', 'req_int_1:res:2']);
    expect(Math.max(...chunks.map((m) => m.seq))).toBeLessThan(parent.seq);
    const back = bodyBytes(
      ref,
      chunks.map((m) => m.data),
    );
    expect(back.ok && blake3Hex(back.bytes)).toBe(blake3Hex(response));
  });

  it('spools while the bus is unreachable, and the next process delivers every record once', async () => {
    const dir = join(dataDir, 'outage');
    const refusedPool: Pool = createPool('postgres://postgres@127.0.0.1:1/svc', { max: 2 });
    closers.push(() => refusedPool.end());
    const unreachable = new PostgresBus(refusedPool, { timeoutMs: 1_000 });
    const down = await RequestRecordPublisher.open({
      bus: unreachable,
      dataDir: dir,
      retry: { initialMs: 60_000, maxMs: 60_000 },
    });
    for (let i = 0; i < 20; i++) down.record(sampleDraft({ org_id: 'org_b', request_id: `out_${i}` }));
    await down.flush();
    expect(down.stats()).toMatchObject({ spooled: 20, pending: 20, busUp: false });
    await down.close();

    const bus = await liveBus();
    const up = await RequestRecordPublisher.open({ bus, dataDir: dir, retry: { initialMs: 10, maxMs: 100 } });
    closers.push(() => up.close());
    expect(up.pending()).toBe(20);
    await waitFor(() => up.pending() === 0);
    expect(up.stats().drained).toBe(20);

    const seen = await collect(bus, 'envelopes-outage', 'svc.requests.org_b.>');
    await waitFor(() => seen.length >= 20);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.map((m) => m.messageId).sort()).toEqual(
      Array.from({ length: 20 }, (_, i) => `out_${i}`).sort(),
    );
  });
});
