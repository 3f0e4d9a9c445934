import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import {
  IdempotencyMismatchError,
  type NewEvent,
  type StoredEvent,
  UnstorableEventError,
  VersionConflictError,
} from '../event-store.js';
import { PostgresEventStore } from './event-store.js';

// Event store contract (ARCHITECTURE.md "The event store").

let db: TestDatabase;
let store: PostgresEventStore;

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 60 });
  store = new PostgresEventStore(db.pool, db.url);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

let seq = 0;
const ev = (type = 'Happened', data: unknown = {}): NewEvent => ({
  messageId: `m-${process.pid}-${++seq}-${Math.random()}`,
  type,
  data,
});

describe('values jsonb refuses', () => {
  it('an event with NUL or an unpaired surrogate is refused by name before anything is stored', async () => {
    for (const [data, field] of [
      [{ comment: 'a\u0000b' }, 'data.comment'],
      [{ keys: ['ok', 'x\udfff'] }, 'data.keys.1'],
    ] as const) {
      const err = await store.append('acct-unstorable', 'any', [ev('Noted', data)]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnstorableEventError);
      expect((err as UnstorableEventError).field).toBe(field);
    }
    expect((await store.readStream('acct-unstorable')).events).toEqual([]);
    await expect(
      store.append('acct-unstorable', 'any', [ev('Noted', { ok: '😀\u202e' })]),
    ).resolves.toMatchObject({
      nextVersion: 1,
    });
  });
});

describe('append with expected version', () => {
  it('appends to a new stream with no_stream and numbers versions from 1', async () => {
    const r = await store.append('acct-a', 'no_stream', [ev(), ev()]);
    expect(r.nextVersion).toBe(2);
    expect(r.replayed).toBe(false);
    const { version, events } = await store.readStream('acct-a');
    expect(version).toBe(2);
    expect(events.map((e) => e.streamVersion)).toEqual([1, 2]);
  });

  it('raises a typed conflict on a wrong expected version', async () => {
    await store.append('acct-b', 'no_stream', [ev()]);
    await expect(store.append('acct-b', 'no_stream', [ev()])).rejects.toBeInstanceOf(VersionConflictError);
    const err = await store.append('acct-b', 5, [ev()]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VersionConflictError);
    expect((err as VersionConflictError).actual).toBe(1);
    await expect(store.append('acct-b', 1, [ev()])).resolves.toMatchObject({ nextVersion: 2 });
    await expect(store.append('acct-b', 'any', [ev()])).resolves.toMatchObject({ nextVersion: 3 });
  });

  it('of 50 concurrent appenders with the same expected version exactly one wins', async () => {
    await store.append('race-1', 'no_stream', [ev()]);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => store.append('race-1', 1, [ev('Raced', { i })])),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(49);
    for (const l of lost) expect((l as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
    expect((await store.readStream('race-1')).version).toBe(2);
  });

  it('a retried message id writes nothing twice and returns the original positions', async () => {
    const batch = [ev(), ev()];
    const first = await store.append('idem-1', 'no_stream', batch);
    const head = await store.headPosition();
    const again = await store.append('idem-1', 'no_stream', batch);
    expect(again.replayed).toBe(true);
    expect(again.positions).toEqual(first.positions);
    expect(await store.headPosition()).toBe(head);
    expect((await store.readStream('idem-1')).events).toHaveLength(2);
    // Half a batch already stored is not a retry: refused, nothing written.
    await expect(store.append('idem-1', 'any', [batch[0]!, ev()])).rejects.toBeInstanceOf(
      IdempotencyMismatchError,
    );
    expect(await store.headPosition()).toBe(head);
  });
});

describe('read all', () => {
  it('20 concurrent appenders with a concurrent reader from 0 see every event once, in order, no gaps', async () => {
    const start = await store.headPosition();
    const seen: StoredEvent[] = [];
    const perWriter = 40;
    let writing = true;
    const reader = (async () => {
      let after = start;
      for (;;) {
        const batch = await store.readAll({ after, limit: 37 });
        for (const e of batch) seen.push(e);
        if (batch.length > 0) after = batch[batch.length - 1]!.globalPosition;
        else if (!writing) {
          if ((await store.readAll({ after, limit: 1 })).length === 0) return;
        } else await new Promise((r) => setTimeout(r, 1));
      }
    })();
    await Promise.all(
      Array.from({ length: 20 }, async (_, w) => {
        for (let i = 0; i < perWriter; i++) {
          await store.append(`writer-w${w}`, i === 0 ? 'no_stream' : i, [ev('W', { w, i })]);
        }
      }),
    );
    writing = false;
    await reader;
    expect(seen).toHaveLength(20 * perWriter);
    expect(seen.map((e) => e.globalPosition)).toEqual(seen.map((_, i) => start + i + 1));
    expect(new Set(seen.map((e) => e.messageId)).size).toBe(seen.length);
    // Per stream, versions arrive in order too.
    for (let w = 0; w < 20; w++) {
      const versions = seen.filter((e) => e.streamId === `writer-w${w}`).map((e) => e.streamVersion);
      expect(versions).toEqual(Array.from({ length: perWriter }, (_, i) => i + 1));
    }
  });

  it('subscribe delivers appended events in order and wakes on notification', async () => {
    const from = await store.headPosition();
    const got: number[] = [];
    const sub = store.subscribe(
      from,
      async (batch) => {
        for (const e of batch) got.push(e.globalPosition);
      },
      { pollMs: 60_000 },
    );
    await sub.caughtUp;
    const r = await store.append('sub-1', 'no_stream', [ev(), ev(), ev()]);
    const deadline = Date.now() + 5_000;
    while (got.length < 3 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    await sub.close();
    expect(got).toEqual(r.positions);
  });

  it('filters by category', async () => {
    const from = await store.headPosition();
    await store.append('alpha-1', 'no_stream', [ev()]);
    await store.append('beta-1', 'no_stream', [ev()]);
    const only = await store.readAll({ after: from, limit: 10, categories: ['beta'] });
    expect(only.map((e) => e.streamId)).toEqual(['beta-1']);
  });
});

describe('appendMany (several streams, one transaction)', () => {
  it('writes every append in order and answers each as append would, with one notification', async () => {
    const pg = await import('pg');
    const listener = new pg.default.Client({ connectionString: db.url });
    await listener.connect();
    const notes: string[] = [];
    listener.on('notification', (n) => notes.push(n.payload ?? ''));
    await listener.query('LISTEN svc_events');
    const first = ev('A');
    const results = await store.appendMany([
      { streamId: 'many-1', expected: 'no_stream', events: [first, ev('B')] },
      { streamId: 'many-2', expected: 'any', events: [ev('C')] },
      { streamId: 'many-1', expected: 2, events: [ev('D')] },
    ]);
    expect(results.map((r) => [r.nextVersion, r.positions.length, r.replayed])).toEqual([
      [2, 2, false],
      [1, 1, false],
      [3, 1, false],
    ]);
    expect(results[1]!.lastPosition).toBe(results[0]!.lastPosition + 1);
    expect(results[2]!.lastPosition).toBe(results[1]!.lastPosition + 1);
    expect((await store.readStream('many-1')).events.map((e) => e.type)).toEqual(['A', 'B', 'D']);
    // A retried append inside a batch is replayed, the rest written.
    const again = await store.appendMany([
      { streamId: 'many-1', expected: 'any', events: [first] },
      { streamId: 'many-2', expected: 'any', events: [ev('E')] },
    ]);
    expect(again.map((r) => r.replayed)).toEqual([true, false]);
    expect(again[0]!.lastPosition).toBe(results[0]!.positions[0]);
    await new Promise((r) => setTimeout(r, 200));
    await listener.end();
    expect(notes).toEqual([`${results[2]!.lastPosition} many`, `${again[1]!.lastPosition} many`]);
  });

  it('is all or nothing: a conflict in one append writes none of the others', async () => {
    await store.append('many-3', 'no_stream', [ev()]);
    const head = await store.headPosition();
    const err = await store
      .appendMany([
        { streamId: 'many-4', expected: 'any', events: [ev()] },
        { streamId: 'many-3', expected: 5, events: [ev()] },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VersionConflictError);
    expect((err as VersionConflictError).streamId).toBe('many-3');
    expect((err as VersionConflictError).actual).toBe(1);
    expect((await store.readStream('many-4')).events).toEqual([]);
    expect(await store.headPosition()).toBe(head);
    await expect(store.appendMany([])).resolves.toEqual([]);
  });
});

describe('append notifications', () => {
  it('name the last position and the categories written, once per append (migrations 0023)', async () => {
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: db.url });
    await client.connect();
    const payloads: string[] = [];
    client.on('notification', (m) => payloads.push(m.payload ?? ''));
    await client.query('LISTEN svc_events');
    try {
      const n = seq;
      const written = await store.append(`walletnote-${n}`, 'any', [ev(), ev()]);
      await expect.poll(() => payloads.length).toBe(1);
      expect(payloads[0]).toBe(`${written.lastPosition} walletnote`);
      // Several categories in one append, each named once; a replayed append says nothing.
      const again = ev();
      const many = await store.appendMany([
        { streamId: `walletnote-${n}`, expected: 'any', events: [ev()] },
        { streamId: `policynote-${n}`, expected: 'any', events: [again] },
        { streamId: `walletnote-${n}b`, expected: 'any', events: [ev()] },
      ]);
      await store.append(`policynote-${n}`, 'any', [again]);
      await expect.poll(() => payloads.length).toBe(2);
      await new Promise((r) => setTimeout(r, 100));
      expect(payloads).toEqual([
        `${written.lastPosition} walletnote`,
        `${many[2]!.lastPosition} walletnote,policynote`,
      ]);
    } finally {
      await client.end();
    }
  });
});
