import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { rebuildProjection } from '../../src/projections/runner.js';
import { streamCatalogProjection } from '../../src/projections/streams/projection.js';
import { benchDatabase } from '../lib/database.js';
import { perSecond, printTable, timed } from '../lib/report.js';

// npm run bench:event-store — targets on the 2-core machine: 5,000 batched appends/s and a
// replay of at least 20,000 events/s.

const BATCH = 100;
const ONE_STREAM_EVENTS = 50_000;
const MANY_STREAM_EVENTS = 50_000;
const STREAMS = 100;
const WRITERS = 8;

const payload = (i: number) => ({
  messageId: `bench-${process.pid}-${i}-${Math.random().toString(36).slice(2)}`,
  type: 'CreditGranted',
  data: { amount_usd: `${(i % 997) + 1}.25`, reason: 'bench', workspace_id: `ws_${i % STREAMS}` },
  metadata: { actor: 'bench', now: '2026-11-22T00:00:00.000Z' },
});

const db = await benchDatabase('es');
const store = new PostgresEventStore(db.pool, db.url);
try {
  let n = 0;
  const one = await timed(async () => {
    let version = 0;
    for (let i = 0; i < ONE_STREAM_EVENTS / BATCH; i++) {
      const r = await store.append(
        'wallet-one',
        version === 0 ? 'no_stream' : version,
        Array.from({ length: BATCH }, () => payload(n++)),
      );
      version = r.nextVersion;
    }
  });

  const versions = new Map<string, number>();
  const many = await timed(async () => {
    let next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        for (;;) {
          const i = next++;
          if (i >= MANY_STREAM_EVENTS / BATCH) return;
          const stream = `wallet-${i % STREAMS}`;
          const v = versions.get(stream) ?? 0;
          versions.set(stream, v + BATCH);
          await store.append(
            stream,
            v === 0 ? 'no_stream' : v,
            Array.from({ length: BATCH }, () => payload(n++)),
          );
        }
      }),
    );
  });

  const total = ONE_STREAM_EVENTS + MANY_STREAM_EVENTS;
  const read = await timed(async () => {
    let after = 0;
    let count = 0;
    for (;;) {
      const batch = await store.readAll({ after, limit: 5_000 });
      if (batch.length === 0) return count;
      count += batch.length;
      after = batch[batch.length - 1]!.globalPosition;
    }
  });
  if (read.result !== total) throw new Error(`read ${read.result} events, expected ${total}`);

  const replay = await timed(() =>
    rebuildProjection(db.pool, streamCatalogProjection, () => {}, { batchSize: 5_000 }),
  );
  if (replay.result.events !== total) throw new Error(`replayed ${replay.result.events}, expected ${total}`);

  printTable('bench/event-store (PostgreSQL event store, batches of 100 events)', [
    {
      metric: `append, 1 stream, expected versions (${ONE_STREAM_EVENTS.toLocaleString('en-US')} events)`,
      measured: perSecond(ONE_STREAM_EVENTS, one.seconds),
      target: '>= 5,000/s',
      met: ONE_STREAM_EVENTS / one.seconds >= 5_000,
    },
    {
      metric: `append, ${STREAMS} streams, ${WRITERS} writers (${MANY_STREAM_EVENTS.toLocaleString('en-US')} events)`,
      measured: perSecond(MANY_STREAM_EVENTS, many.seconds),
      target: '>= 5,000/s',
      met: MANY_STREAM_EVENTS / many.seconds >= 5_000,
    },
    {
      metric: `read-all (${total.toLocaleString('en-US')} events)`,
      measured: perSecond(total, read.seconds),
    },
    {
      metric: `replay ${total.toLocaleString('en-US')} events into rm_streams`,
      measured: `${replay.seconds.toFixed(2)} s (${perSecond(total, replay.seconds)})`,
      target: '>= 20,000/s',
      met: total / replay.seconds >= 20_000,
    },
  ]);
} finally {
  await store.close();
  await db.drop();
}
