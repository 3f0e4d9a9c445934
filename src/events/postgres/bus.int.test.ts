import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { busContract } from '../../../test/contract/bus.contract.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import type { Bus, BusMessage } from '../bus.js';
import { DLQ_SUBJECT, subjects } from '../subjects.js';
import { BUS_NOTIFY_CHANNEL, PostgresBus, type PostgresBusOptions } from './bus.js';
import { PostgresConsumer } from './bus-consumer.js';
import { createPool, type Pool } from './pool.js';

busContract('Postgres table', async () => {
  const db = await createTestDatabase({ poolSize: 20 });
  const opened: Bus[] = [];
  const pools: Pool[] = [];
  return {
    open: async () => {
      const bus = new PostgresBus(db.pool, { connectionString: db.url });
      await bus.ensureStreams();
      opened.push(bus);
      return bus;
    },
    openUnreachable: async ({ host, port }, timeoutMs) => {
      const pool = createPool(`postgres://postgres@${host}:${port}/svc`, { max: 2 });
      pools.push(pool);
      const bus = new PostgresBus(pool, { timeoutMs });
      opened.push(bus);
      return bus;
    },
    cleanup: async () => {
      await Promise.all(opened.map((b) => b.close()));
      await Promise.all(pools.map((p) => p.end().catch(() => {})));
      await db.drop();
    },
  };
});

// Properties of the table adapter beyond the shared contract.
describe('Postgres bus specifics', () => {
  const text = (m: BusMessage) => new TextDecoder().decode(m.data);
  const waitFor = async (check: () => boolean, timeoutMs = 10_000) => {
    const until = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > until) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  let db: TestDatabase;
  const buses: PostgresBus[] = [];
  const open = (options: PostgresBusOptions = {}) => {
    const bus = new PostgresBus(db.pool, { connectionString: db.url, ...options });
    buses.push(bus);
    return bus;
  };
  beforeAll(async () => {
    db = await createTestDatabase({ poolSize: 10 });
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await db?.drop();
  });

  it('holds back a later message of a subject while an earlier one is unsettled', async () => {
    const bus = open();
    const a = subjects.request('ord', 'a');
    const b = subjects.request('ord', 'b');
    await bus.publish(a, 'a1', { messageId: 'a1' });
    await bus.publish(a, 'a2', { messageId: 'a2' });
    await bus.publish(b, 'b1', { messageId: 'b1' });
    const held: BusMessage[] = [];
    await bus.consume('ordered', 'svc.requests.ord.>', async (m) => void held.push(m), {
      ackWaitMs: 5_000,
      maxDeliveries: 5,
      batchSize: 10,
    });
    await waitFor(() => held.length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(held.map(text)).toEqual(['a1', 'b1']);
    await held[0]!.ack();
    await waitFor(() => held.length >= 3);
    expect(held.map(text)).toEqual(['a1', 'b1', 'a2']);
  });

  it('wakes an idle consumer by NOTIFY long before its poll interval', async () => {
    const consumerSide = open({ pollMs: 10_000 });
    const publisherSide = open();
    const got: number[] = [];
    await consumerSide.consume(
      'listener',
      'svc.requests.wake.>',
      async (m) => {
        got.push(Date.now());
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 5 },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sent = Date.now();
    await publisherSide.publish(subjects.request('wake', 'r'), 'x', { messageId: 'wake-1' });
    await waitFor(() => got.length === 1, 5_000);
    expect(got[0]! - sent).toBeLessThan(1_000);
  });

  it('names the streams written in its NOTIFY and wakes only the consumers of those streams', async () => {
    const consumerSide = open({ pollMs: 10_000 });
    const publisherSide = open();
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (m) => payloads.push(m.payload ?? ''));
    await listener.query(`LISTEN ${BUS_NOTIFY_CHANNEL}`);
    const wakes = vi.spyOn(PostgresConsumer.prototype, 'wake');
    try {
      const onAudit = await consumerSide.consume('audit-only', 'svc.audit.events.>', async (m) => m.ack(), {
        ackWaitMs: 5_000,
        maxDeliveries: 5,
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      wakes.mockClear();
      for (let i = 0; i < 5; i++)
        await publisherSide.publish(subjects.request('streams', `r${i}`), 'x', { messageId: `streams-${i}` });
      await waitFor(() => payloads.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(new Set(payloads)).toEqual(new Set(['requests']));
      const auditWakes = () =>
        wakes.mock.contexts.filter((c) => (c as unknown as { name: string }).name === 'audit-only').length;
      expect(auditWakes()).toBe(0);
      await publisherSide.publish(subjects.audit('ws_streams'), 'a', { messageId: 'streams-audit' });
      await waitFor(() => auditWakes() > 0);
      expect(payloads.at(-1)).toBe('audit');
      await onAudit.close();
    } finally {
      wakes.mockRestore();
      await listener.end();
    }
  });

  it('falls back to polling without a LISTEN connection', async () => {
    const polling = new PostgresBus(db.pool, { pollMs: 200 });
    buses.push(polling);
    const got: string[] = [];
    await polling.consume(
      'poller',
      'svc.requests.poll.>',
      async (m) => {
        got.push(text(m));
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 5 },
    );
    await open().publish(subjects.request('poll', 'r'), 'polled', { messageId: 'poll-1' });
    await waitFor(() => got.length === 1, 3_000);
    expect(got).toEqual(['polled']);
  });

  it('accepts a message id again once the duplicate window has passed', async () => {
    const bus = open({ duplicateWindowMs: 300 });
    const subject = subjects.request('win', 'r');
    const first = await bus.publish(subject, 'x', { messageId: 'win-1' });
    expect((await bus.publish(subject, 'x', { messageId: 'win-1' })).duplicate).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const later = await bus.publish(subject, 'x', { messageId: 'win-1' });
    expect(later.duplicate).toBe(false);
    expect(later.seq).toBeGreaterThan(first.seq);
  });

  it('refuses a durable name already bound to another filter', async () => {
    const bus = open();
    const h = await bus.consume('bound', 'svc.requests.x.>', async () => {}, {
      ackWaitMs: 1_000,
      maxDeliveries: 1,
    });
    await h.close();
    await expect(
      bus.consume('bound', 'svc.requests.y.>', async () => {}, { ackWaitMs: 1_000, maxDeliveries: 1 }),
    ).rejects.toThrow(/exists with filter/);
  });

  it('drops dead letters older than 30 days and expired dedupe entries', async () => {
    const bus = open({ duplicateWindowMs: 100 });
    await bus.publish(DLQ_SUBJECT, 'old', { messageId: 'old-dlq' });
    await bus.publish(DLQ_SUBJECT, 'new', { messageId: 'new-dlq' });
    await db.pool.query(
      `UPDATE svc_bus_messages SET published_at = now() - interval '31 days' WHERE message_id = 'old-dlq'`,
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    await bus.tidy();
    const { rows } = await db.pool.query<{ message_id: string }>(
      `SELECT message_id FROM svc_bus_messages WHERE stream = 'dlq' ORDER BY seq`,
    );
    expect(rows.map((r) => r.message_id)).toEqual(['new-dlq']);
    const dedupe = await db.pool.query(
      `SELECT 1 FROM svc_bus_dedupe WHERE message_id IN ('old-dlq', 'new-dlq')`,
    );
    expect(dedupe.rowCount).toBe(0);
  });

  it('wakes for its own nak delays and expired leases, not at the next poll, without asking PostgreSQL when', async () => {
    const bus = open({ pollMs: 10_000 });
    const got: { text: string; delivery: number; at: number }[] = [];
    await bus.consume(
      'ownwake',
      'svc.requests.ownwake.>',
      async (m) => {
        got.push({ text: text(m), delivery: m.deliveryCount, at: Date.now() });
        // 'nak' is nak'd for 400 ms once; 'hang' is left unsettled once, so its lease expires.
        if (m.deliveryCount === 1 && text(m) === 'nak') await m.nak(400);
        else if (m.deliveryCount > 1 || text(m) !== 'hang') await m.ack();
      },
      { ackWaitMs: 700, maxDeliveries: 5 },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const query = vi.spyOn(db.pool, 'query');
    let statements: string[];
    try {
      await bus.publish(subjects.request('ownwake', 'a'), 'nak', { messageId: 'ownwake-nak' });
      await bus.publish(subjects.request('ownwake', 'b'), 'hang', { messageId: 'ownwake-hang' });
      await waitFor(() => got.length === 4, 5_000);
    } finally {
      statements = query.mock.calls.map(([q]) =>
        String(typeof q === 'string' ? q : (q as { text?: string }).text),
      );
      query.mockRestore();
    }
    expect(statements.some((q) => /svc_bus_deliveries/.test(q))).toBe(true);
    const first = (t: string) => got.find((g) => g.text === t && g.delivery === 1)!.at;
    const second = (t: string) => got.find((g) => g.text === t && g.delivery === 2)!.at;
    expect(second('nak') - first('nak')).toBeGreaterThanOrEqual(350);
    expect(second('nak') - first('nak')).toBeLessThan(2_000);
    expect(second('hang') - first('hang')).toBeGreaterThanOrEqual(650);
    expect(second('hang') - first('hang')).toBeLessThan(2_500);
    expect(statements.filter((q) => /min\(visible_at\)/.test(q))).toEqual([]);
  });

  it('delivers the next message of a subject right after a dead letter frees it, not at the next poll', async () => {
    const bus = open({ pollMs: 10_000 });
    const subject = subjects.request('dlqwake', 'r');
    await bus.publish(subject, 'first', { messageId: 'dlqwake-1' });
    await bus.publish(subject, 'second', { messageId: 'dlqwake-2' });
    const got: { text: string; at: number }[] = [];
    let deadAt = 0;
    await bus.consume(
      'dlqwake',
      'svc.requests.dlqwake.>',
      async (m) => {
        got.push({ text: text(m), at: Date.now() });
        if (text(m) === 'first') {
          deadAt = Date.now();
          await m.deadLetter('poison');
        } else await m.ack();
      },
      { ackWaitMs: 30_000, maxDeliveries: 5 },
    );
    await waitFor(() => got.length === 2, 5_000);
    expect(got.map((g) => g.text)).toEqual(['first', 'second']);
    expect(got[1]!.at - deadAt).toBeLessThan(1_000);
  });
});
