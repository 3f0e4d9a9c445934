/**
 * The paced mode's publisher, a child process of bench/ingest/run.ts so that its CPU is not counted
 * as the ingest process's: publishes `rate` requests a second for `seconds` seconds onto the bus
 * named by its arguments, stamping each envelope's finished_at with the time it was published, then
 * reports how many it published (a message `{ published }` on the IPC channel) and exits.
 *
 *   node --import tsx bench/ingest/publisher.ts <postgres|nats> <url> <rate> <seconds> <body> <funding> <prefix>
 */
import type { Bus, OutgoingMessage } from '../../src/events/bus.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { createPool } from '../../src/events/postgres/pool.js';
import { type Funding, requestMessages } from './envelopes.js';

const [kind, url, rateText, secondsText, bodyText, funding, prefix] = process.argv.slice(2);
const rate = Number(rateText);
const seconds = Number(secondsText);
const shape = { body: Number(bodyText), funding: funding as Funding, prefix: prefix! };
/** The gateway publishes as requests finish; ticks of 10 ms send what is due since the last one. */
const TICK_MS = 10;

const pool = kind === 'postgres' ? createPool(url!, { max: 4, application: 'svc-bench-publisher' }) : null;
const bus: Bus = pool
  ? new PostgresBus(pool, {})
  : new NatsBus({ servers: url!, connectionName: 'bench-ingest-publisher' });

let published = 0;
const started = performance.now();
const total = Math.round(rate * seconds);
const inFlight = new Set<Promise<unknown>>();
while (published < total) {
  const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
  if (due > published) {
    const batch: OutgoingMessage[] = [];
    const now = new Date();
    for (; published < due; published++) batch.push(...requestMessages(shape, published, now));
    const p = bus.publishMany(batch).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await new Promise((r) => setTimeout(r, TICK_MS));
}
await Promise.all(inFlight);
process.send?.({ published, seconds: (performance.now() - started) / 1000 });
await bus.close();
await pool?.end();
process.disconnect?.();
