import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  auditFailingBus,
  auditRefusingBus,
  draftFor,
  droppingAnalytics,
  flakyAnalytics,
  metricValue,
  refusingAnalytics,
  type Scenario,
  scenario,
  sharedChdb,
  suppressedWrites,
  waitFor,
} from '../../../test/fixtures/ingest/ingest.fixtures.js';
import { privateNats } from '../../../test/helpers/nats-server.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import type { ChdbAnalyticsStore } from '../../analytics/chdb/store.js';
import { AnalyticsError } from '../../analytics/port.js';
import type { Bus, BusMessage } from '../../events/bus.js';
import { blake3Hex } from '../../events/envelopes/body.js';
import { RequestRecordPublisher } from '../../events/envelopes/publish.js';
import { buildRequestRecord } from '../../events/envelopes/record.js';
import { NatsBus } from '../../events/nats/bus.js';
import { PostgresBus } from '../../events/postgres/bus.js';
import { requestLoggedMessageId } from './audit.js';
import { type DeadLetterSource, natsDeadLetters, postgresDeadLetters, replayDeadLetters } from './dlq.js';
import { readStoredBody } from './pack.js';
import type { StoredBody } from './rows.js';

// Fault tests with a real bus (the Postgres table bus and JetStream on a
// private nats-server) and the chdb engine. Every scenario has its own subject tree, consumer,
// ClickHouse database and object root; svc_ingest_clickhouse_suppressed_writes_total stays 0.

interface TestBus {
  bus: Bus;
  deadLetters: DeadLetterSource;
  /** Messages the consumer has not settled (acked or dead-lettered). */
  unsettled(consumer: string): Promise<number>;
  close(): Promise<void>;
}

let chdb: Awaited<ReturnType<typeof sharedChdb>>;
let db: TestDatabase;
let nats: Awaited<ReturnType<typeof privateNats>>;
let natsDir: string;
let spoolRoot: string;
let n = 0;

const BUSES: Record<'postgres' | 'jetstream', () => Promise<TestBus>> = {
  postgres: async () => {
    const prefix = `ing${++n}`;
    const bus = new PostgresBus(db.pool, { connectionString: db.url, subjectPrefix: prefix, pollMs: 100 });
    await bus.ensureStreams();
    return {
      bus,
      deadLetters: postgresDeadLetters(db.pool, prefix),
      unsettled: async (consumer) =>
        Number(
          (
            await db.pool.query<{ n: string }>(
              'SELECT count(*) AS n FROM svc_bus_deliveries WHERE consumer = $1',
              [consumer],
            )
          ).rows[0]!.n,
        ),
      close: () => bus.close(),
    };
  },
  jetstream: async () => {
    const id = ++n;
    const streamNamePrefix = `ING${id}_`;
    const bus = new NatsBus({ servers: nats.url, subjectPrefix: `ing${id}`, streamNamePrefix });
    await bus.ensureStreams();
    return {
      bus,
      deadLetters: natsDeadLetters(bus, streamNamePrefix),
      unsettled: async (consumer) => {
        const jsm = await (await bus.connection()).jetstreamManager();
        const info = await jsm.consumers.info(`${streamNamePrefix}REQUESTS`, consumer);
        return info.num_pending + info.num_ack_pending;
      },
      close: async () => {
        await bus.deleteStreams().catch(() => {});
        await bus.close();
      },
    };
  },
};

beforeAll(async () => {
  chdb = await sharedChdb();
  db = await createTestDatabase();
  natsDir = await mkdtemp(join(tmpdir(), 'svc-ingest-nats-'));
  nats = await privateNats(natsDir);
  spoolRoot = await mkdtemp(join(tmpdir(), 'svc-ingest-spool-'));
});
afterAll(async () => {
  await chdb?.close();
  await db?.drop();
  await nats?.stop();
  await rm(natsDir, { recursive: true, force: true });
  await rm(spoolRoot, { recursive: true, force: true });
});

const countRows = async (store: ChdbAnalyticsStore, table: string, final = true): Promise<number> =>
  Number(
    (await store.query<{ n: string }>(`SELECT count() AS n FROM ${table}${final ? ' FINAL' : ''}`))[0]!.n,
  );

/** Collects audit events by message id from the scenario's audit subjects. */
const auditCollector = async (bus: Bus, name: string) => {
  const seen = new Map<string, BusMessage>();
  const handle = await bus.consume(
    `${name}_audit`,
    'svc.audit.events.>',
    async (m) => {
      seen.set(m.messageId, m);
      await m.ack();
    },
    { ackWaitMs: 5_000, maxDeliveries: 3 },
  );
  return { seen, close: () => handle.close() };
};

describe.each(['postgres', 'jetstream'] as const)('ingest on the %s bus with chdb', (kind) => {
  let t: TestBus;
  let store: ChdbAnalyticsStore;
  let s: Scenario;
  const closers: (() => Promise<unknown>)[] = [];

  const setup = async (name: string) => {
    t = await BUSES[kind]();
    store = await chdb.open();
    s = await scenario(t.bus, store, name);
    closers.push(
      () => s.cleanup(),
      () => t.close(),
    );
  };
  const publisher = async (bus: Bus) => {
    const p = await RequestRecordPublisher.open({ bus, dataDir: await mkdtemp(join(spoolRoot, 'p-')) });
    closers.push(() => p.close());
    return p;
  };

  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  it('packs a 1 MB chunked body and fetches it back by exact range, chunks before or after the envelope', async () => {
    await setup('ingest_body');
    const run = `b${kind}`;
    const big = randomBytes(1024 * 1024);
    const p = await publisher(t.bus);
    p.record(draftFor(run, 0), { request: '{"model":"gpt-x","messages":[]}', response: big });
    await p.flush();
    // The same shape again with the envelope published before its chunks.
    const reversed = buildRequestRecord(draftFor(run, 1), {
      request: big.subarray(0, 300_000),
      response: 'ok',
    });
    for (const m of [...reversed.record.messages].reverse())
      await t.bus.publish(m.subject, m.data, { messageId: m.messageId });
    const audits = await auditCollector(t.bus, 'ingest_body');
    closers.push(audits.close);

    await s.consumer();
    await waitFor(async () => (await countRows(store, 'requests')) === 2, 30_000, 'two request rows');

    const [row] = await store.query<Record<string, string>>(
      `SELECT org_id, res_body_pack, res_body_offset, res_body_length, res_body_byte_count, res_body_blake3,
              req_body_pack, req_body_byte_count
         FROM requests FINAL WHERE request_id = {id:String}`,
      { id: `req_${run}_0` },
    );
    expect(row!.res_body_pack).toMatch(/^packs\/\d{4}\/\d{2}\/\d{2}\/batch_[0-9a-z]+\.pack$/);
    expect(Number(row!.res_body_byte_count)).toBe(big.byteLength);
    const stored: StoredBody = {
      pack: row!.res_body_pack!,
      offset: Number(row!.res_body_offset),
      length: Number(row!.res_body_length),
      byteCount: Number(row!.res_body_byte_count),
      blake3: row!.res_body_blake3!,
    };
    const back = await readStoredBody(s.objects, row!.org_id!, stored);
    expect(back.equals(big)).toBe(true);
    expect(blake3Hex(back)).toBe(stored.blake3);
    // The frame header before the payload names the request and hash, so a pack reads on its own.
    const header = await s.objects.getRange(row!.org_id!, stored.pack, 0, stored.offset);
    expect(header.toString()).toContain(`req_${run}_0 res ${big.byteLength} ${stored.blake3}`);

    const [other] = await store.query<{ req_body_byte_count: string }>(
      'SELECT req_body_byte_count FROM requests FINAL WHERE request_id = {id:String}',
      { id: `req_${run}_1` },
    );
    expect(Number(other!.req_body_byte_count)).toBe(300_000);
    await waitFor(async () => (await t.unsettled('ingest_body')) === 0, 15_000, 'chunks and envelopes acked');
    await waitFor(async () => audits.seen.size === 2, 10_000, 'audit events');
    expect([...audits.seen.keys()].sort()).toEqual(
      [requestLoggedMessageId(`req_${run}_0`), requestLoggedMessageId(`req_${run}_1`)].sort(),
    );
    expect(await metricValue(s.registry, 'svc_ingest_body_packs_total')).toBeGreaterThan(0);
    expect(await suppressedWrites(s.registry)).toBe(0);
  });

  it('keeps messages unacked while the analytics store fails, then stores every row exactly once', async () => {
    await setup('ingest_flaky');
    const run = `f${kind}`;
    const total = 150;
    const p = await publisher(t.bus);
    for (let i = 0; i < total; i++)
      p.record(draftFor(run, i), { request: `{"n":${i}}`, response: 'x'.repeat(2048) });
    await p.flush();
    const failUntil = Date.now() + 3_000;
    const consumer = await s.consumer({ analytics: flakyAnalytics(store, () => Date.now() < failUntil) });

    await waitFor(async () => (await countRows(store, 'requests')) === total, 45_000, 'all rows');
    await waitFor(async () => (await t.unsettled('ingest_flaky')) === 0, 15_000, 'all acked');
    expect(consumer.stats().leftUnacked).toBeGreaterThan(0);
    expect(
      await metricValue(s.registry, 'svc_ingest_clickhouse_errors_total', { kind: 'unavailable' }),
    ).toBeGreaterThan(0);
    expect(await metricValue(s.registry, 'svc_ingest_insert_retries_total')).toBeGreaterThan(0);
    expect(await countRows(store, 'requests')).toBe(total);
    const [distinct] = await store.query<{ n: string }>('SELECT uniqExact(request_id) AS n FROM requests');
    expect(Number(distinct!.n)).toBe(total);
    expect(await countRows(store, 'request_usage_lines')).toBe(total * 3);
    expect(await countRows(store, 'request_cost_lines')).toBe(
      total *
        Number((await store.query<{ n: string }>('SELECT any(cost_line_count) AS n FROM requests'))[0]!.n),
    );
    expect(await t.deadLetters.list()).toEqual([]);
    expect(await suppressedWrites(s.registry)).toBe(0);
  });

  it('reads back every flush: a write the store acknowledged and dropped is counted and not acked', async () => {
    await setup('ingest_suppressed');
    const run = `s${kind}`;
    let drop = true;
    const p = await publisher(t.bus);
    for (let i = 0; i < 20; i++) p.record(draftFor(run, i));
    await p.flush();
    const consumer = await s.consumer({ analytics: droppingAnalytics(store, () => drop) });
    await waitFor(
      async () => (await metricValue(s.registry, 'svc_ingest_clickhouse_suppressed_writes_total')) >= 20,
      20_000,
      'suppressed writes counted',
    );
    expect(
      await metricValue(s.registry, 'svc_ingest_clickhouse_suppressed_writes_total', { table: 'requests' }),
    ).toBeGreaterThanOrEqual(20);
    expect(consumer.stats().committed).toBe(0);
    expect(await t.unsettled('ingest_suppressed')).toBe(20);
    drop = false;
    await waitFor(async () => (await countRows(store, 'requests')) === 20, 20_000, 'rows after redelivery');
    await waitFor(async () => (await t.unsettled('ingest_suppressed')) === 0, 15_000, 'acked');
  });

  it('dead-letters an undecodable envelope as invalid_event and a schema-invalid one as malformed_row', async () => {
    await setup('ingest_invalid');
    const run = `i${kind}`;
    await t.bus.publish(`svc.requests.org_${run}.req_bad1`, new Uint8Array([0xff, 0xfe, 0x7b]), {
      messageId: 'req_bad1',
    });
    await t.bus.publish(`svc.requests.org_${run}.req_bad2`, '{"schema_version":1,"request_id":"req_bad2"}', {
      messageId: 'req_bad2',
    });
    const p = await publisher(t.bus);
    p.record(draftFor(run, 0));
    await p.flush();
    await s.consumer();

    await waitFor(async () => (await t.deadLetters.list()).length === 2, 20_000, 'two dead letters');
    const letters = await t.deadLetters.list();
    expect(letters.map((l) => [l.info.messageId, l.info.reason])).toEqual([
      ['req_bad1', 'invalid_event'],
      ['req_bad2', 'malformed_row'],
    ]);
    expect(Buffer.from(letters[0]!.data)).toEqual(Buffer.from([0xff, 0xfe, 0x7b]));
    await waitFor(async () => (await countRows(store, 'requests')) === 1, 20_000, 'the valid row');
    expect(await metricValue(s.registry, 'svc_ingest_dlq_total', { reason: 'invalid_event' })).toBe(1);
    expect(await metricValue(s.registry, 'svc_ingest_dlq_total', { reason: 'malformed_row' })).toBe(1);
    expect(await suppressedWrites(s.registry)).toBe(0);
  });

  it('dead-letters as audit_emit with the row committed when the audit event cannot be sent; replay restores it', async () => {
    await setup('ingest_audit');
    const run = `a${kind}`;
    let refuse = true;
    const total = 4;
    const p = await publisher(t.bus);
    for (let i = 0; i < total; i++)
      p.record(draftFor(run, i), { request: 'q', response: randomBytes(300_000) });
    await p.flush();
    await s.consumer({ bus: auditFailingBus(t.bus, () => refuse), maxDeliveries: 2 });

    await waitFor(
      async () =>
        (await t.deadLetters.list()).filter((l) => !l.info.subject.includes('.body.')).length === total,
      30_000,
      'audit_emit dead letters',
    );
    const letters = await t.deadLetters.list();
    expect(new Set(letters.map((l) => l.info.reason))).toEqual(new Set(['audit_emit']));
    expect(await countRows(store, 'requests')).toBe(total);
    expect(await metricValue(s.registry, 'svc_ingest_dlq_total', { reason: 'audit_emit' })).toBe(
      letters.length,
    );

    const audits = await auditCollector(t.bus, 'ingest_audit');
    closers.push(audits.close);
    expect(audits.seen.size).toBe(0);
    refuse = false;
    const summary = await replayDeadLetters(t.bus, letters, { runId: 'r1' });
    expect(summary).toMatchObject({ replayed: letters.length, failed: 0 });
    await waitFor(async () => audits.seen.size === total, 30_000, 'audit events after replay');
    await waitFor(async () => (await t.unsettled('ingest_audit')) === 0, 15_000, 'replayed messages acked');
    expect(await countRows(store, 'requests')).toBe(total);
    expect(await suppressedWrites(s.registry)).toBe(0);
  });
  it('an envelope whose workspace id cannot be an audit subject token dead-letters alone before the flush; the rest are audited', async () => {
    await setup('ingest_audit_subject');
    const run = `dot${kind}`;
    const audits = await auditCollector(t.bus, 'ingest_audit_subject');
    closers.push(audits.close);
    const p = await publisher(t.bus);
    for (let i = 0; i < 4; i++)
      // The envelope schema allows a dot in an id; a bus subject token cannot hold one.
      p.record(draftFor(run, i, i === 1 ? { workspace_id: `wsp.${run}` } : {}));
    await p.flush();
    await s.consumer({ maxDeliveries: 5 });

    await waitFor(async () => audits.seen.size === 3, 20_000, 'the three good audit events');
    await waitFor(async () => (await t.deadLetters.list()).length === 1, 20_000, 'one dead letter');
    const [letter] = await t.deadLetters.list();
    // Refused on decode (its row could never be audited), so it never joins a flush.
    expect(letter!.info).toMatchObject({ messageId: `req_${run}_1`, reason: 'malformed_row' });
    expect([...audits.seen.keys()].sort()).toEqual(
      [0, 2, 3].map((i) => requestLoggedMessageId(`req_${run}_${i}`)),
    );
    expect(await countRows(store, 'requests')).toBe(3);
    await waitFor(async () => (await t.unsettled('ingest_audit_subject')) === 0, 15_000, 'all settled');
  });

  it('a batch publish the bus refuses falls back to one by one: only the refused record dead-letters', async () => {
    await setup('ingest_audit_refused');
    const run = `refused${kind}`;
    const audits = await auditCollector(t.bus, 'ingest_audit_refused');
    closers.push(audits.close);
    const bad = requestLoggedMessageId(`req_${run}_2`);
    const p = await publisher(t.bus);
    for (let i = 0; i < 4; i++) p.record(draftFor(run, i));
    await p.flush();
    await s.consumer({ bus: auditRefusingBus(t.bus, (id) => id === bad), maxDeliveries: 2 });

    await waitFor(async () => audits.seen.size === 3, 20_000, 'the three good audit events');
    await waitFor(async () => (await t.deadLetters.list()).length === 1, 20_000, 'one dead letter');
    const [letter] = await t.deadLetters.list();
    expect(letter!.info).toMatchObject({ messageId: `req_${run}_2`, reason: 'audit_emit' });
    expect(audits.seen.has(bad)).toBe(false);
    expect(await countRows(store, 'requests')).toBe(4);
    await waitFor(async () => (await t.unsettled('ingest_audit_refused')) === 0, 15_000, 'all settled');
  });

  it('a record the store refuses dead-letters alone, at once; the rest of its flush is stored (SPEC 6)', async () => {
    await setup('ingest_refused_row');
    const run = `poison${kind}`;
    const poison = `req_${run}_4`;
    const p = await publisher(t.bus);
    for (let i = 0; i < 9; i++) p.record(draftFor(run, i));
    await p.flush();
    await s.consumer({
      analytics: refusingAnalytics(store, (row) => row.request_id === poison),
      maxDeliveries: 20,
      flushIntervalMs: 200,
    });
    await waitFor(async () => (await countRows(store, 'requests')) === 8, 20_000, 'the eight good rows');
    await waitFor(async () => (await t.deadLetters.list()).length === 1, 20_000, 'one dead letter');
    const [letter] = await t.deadLetters.list();
    expect(letter!.info).toMatchObject({ messageId: poison, reason: 'malformed_row' });
    expect(letter!.info.deliveries).toBe(1);
    await waitFor(async () => (await t.unsettled('ingest_refused_row')) === 0, 15_000, 'all settled');
    expect(await suppressedWrites(s.registry)).toBe(0);
  });

  it('stores a lone surrogate as U+FFFD in its own row, and the rest of the batch beside it (SPEC 6)', async () => {
    await setup('ingest_lone_surrogate');
    const run = `lone${kind}`;
    const p = await publisher(t.bus);
    for (let i = 0; i < 5; i++)
      p.record(draftFor(run, i, i === 2 ? { end_user_id: 'user \ud800', model_requested: 'gpt\udc00' } : {}));
    await p.flush();
    await s.consumer();
    await waitFor(async () => (await countRows(store, 'requests')) === 5, 20_000, 'all five rows');
    const [row] = await store.query<{ end_user_id: string; model_requested: string }>(
      'SELECT end_user_id, model_requested FROM requests FINAL WHERE request_id = {id:String}',
      { id: `req_${run}_2` },
    );
    expect(row).toEqual({ end_user_id: 'user \ufffd', model_requested: 'gpt\ufffd' });
    expect(await t.deadLetters.list()).toEqual([]);
  });

  it.runIf(kind === 'jetstream')('starts while the bus is down and consumes once it is back', async () => {
    await setup('ingest_late_bus');
    const p = await publisher(t.bus);
    for (let i = 0; i < 10; i++) p.record(draftFor('late', i));
    await p.flush();
    await nats.stop();
    try {
      const consumer = await s.consumer();
      expect(consumer.lastError).toBeTruthy();
    } finally {
      await nats.start();
    }
    await waitFor(
      async () => (await countRows(store, 'requests')) === 10,
      30_000,
      'rows once the bus is back',
    );
    expect(await suppressedWrites(s.registry)).toBe(0);
  });
  it.runIf(kind === 'postgres')(
    'dead-letters as body_pack_exhausted when packs cannot be written, and calls the settle hook before acking',
    async () => {
      await setup('ingest_pack');
      const p = await publisher(t.bus);
      for (let i = 0; i < 3; i++) p.record(draftFor('pk', i), { request: 'q', response: 'r' });
      p.record(draftFor('pk', 3, { trace: { full_tracing: false, source: 'none' } }));
      await p.flush();
      const objects = Object.create(s.objects) as typeof s.objects;
      objects.put = async () => {
        throw new Error('injected: disk full');
      };
      const logged: string[] = [];
      await s.consumer({
        objects,
        maxDeliveries: 2,
        onRequestLogged: (e) => {
          logged.push(e.request_id);
        },
      });
      await waitFor(async () => (await t.deadLetters.list()).length === 3, 20_000, 'three dead letters');
      expect(new Set((await t.deadLetters.list()).map((l) => l.info.reason))).toEqual(
        new Set(['body_pack_exhausted']),
      );
      // The request without bodies needs no pack: it is stored, settled once, and acked.
      await waitFor(async () => (await t.unsettled('ingest_pack')) === 0, 15_000, 'all settled');
      expect(await countRows(store, 'requests')).toBe(1);
      expect(logged).toEqual(['req_pk_3']);
      expect(await metricValue(s.registry, 'svc_ingest_dlq_total', { reason: 'body_pack_exhausted' })).toBe(
        3,
      );
    },
  );
  it.runIf(kind === 'postgres')(
    'a gateway trace span that cannot be written holds back neither the audit event nor the settle hook (SPEC 4.3, 6)',
    async () => {
      await setup('ingest_span');
      const p = await publisher(t.bus);
      const trace = { trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16), parent_span_id: '' };
      p.record(draftFor('tspan', 0, { trace: { full_tracing: false, source: 'none', ...trace } }));
      await p.flush();
      const analytics = {
        ...flakyAnalytics(store, () => false),
        insert: async (table: string, rows: readonly Record<string, unknown>[]) => {
          if (table.startsWith('trace_'))
            throw new AnalyticsError('unavailable', `injected: ${table} is away`);
          await store.insert(table, rows);
        },
      };
      const logged: string[] = [];
      await s.consumer({
        analytics,
        maxDeliveries: 2,
        onRequestLogged: (e) => {
          logged.push(e.request_id);
        },
      });
      await waitFor(async () => logged.includes('req_tspan_0'), 20_000, 'the request settled');
      await waitFor(async () => (await t.deadLetters.list()).length === 1, 20_000, 'its dead letter');
      expect((await t.deadLetters.list())[0]!.info.reason).toBe('insert_exhausted');
    },
  );
});
