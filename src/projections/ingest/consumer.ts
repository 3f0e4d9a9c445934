import { type BusMessage, BusUnavailableError, type ConsumerHandle } from '../../events/bus.js';
import type { BodySide } from '../../events/subjects.js';
import { newId } from '../../lib/ids.js';
import { classify } from './decode.js';
import { type FlushItem, type FlushOutcome, flushBatch } from './flush.js';
import { Holding } from './holding.js';
import type { DlqReason } from './metrics.js';
import {
  type IngestConsumerOptions,
  type IngestStats,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { DurabilitySampler } from './readback.js';
import { sweepHolding } from './sweep.js';

export { INGEST_CONSUMER, type IngestConsumerOptions, type IngestStats } from './options.js';

/**
 * The ingest consumer (SPEC 3 "bus message (requests)", SPEC 6): a durable consumer of
 * `svc.requests.>` that holds envelopes until their chunks are in, flushes them in batches through
 * `flushBatch`, and acks a request (its envelope and chunks) only after its body pack, rows and
 * audit event are durable and `onRequestLogged` returned. A failed request is left unacked, so the
 * bus redelivers it after ack_wait; on its last delivery it is dead-lettered with the reason of
 * the step that failed. Undecodable and malformed messages are dead-lettered at once.
 */

interface Late {
  envelopes: BusMessage[];
  chunks: { side: BodySide; n: number; message: BusMessage }[];
}

const DEAD_MEMORY = 10_000;
const SUBSCRIBE_RETRY_MS = 2_000;

export class IngestConsumer {
  private handle: ConsumerHandle | null = null;
  private readonly holding = new Holding();
  /** Requests inside a flush, with deliveries of them that arrived meanwhile. */
  private readonly flushing = new Map<string, Late>();
  /** Request ids dead-lettered lately (expiry ms), so their late chunks follow them. */
  private readonly dead = new Map<string, { reason: DlqReason; until: number }>();
  private readonly pendingAcks = new Set<Promise<unknown>>();
  private readonly flights = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private resubscribe: NodeJS.Timeout | undefined;
  private sweeping = false;
  private lastFlushStart = 0;
  private stopping = false;
  private readonly o: ResolvedOptions;
  private readonly sampler: DurabilitySampler;
  private readonly counters: IngestStats = {
    received: 0,
    committed: 0,
    leftUnacked: 0,
    deadLettered: 0,
    flushes: 0,
    timings: { packMs: 0, insertMs: 0, readBackMs: 0, auditMs: 0, ackMs: 0 },
  };
  /** The last flush failure; cleared by a flush that commits. For /healthz. */
  lastError: unknown = null;

  constructor(private readonly options: IngestConsumerOptions) {
    this.o = resolveOptions(options);
    this.sampler = new DurabilitySampler(options.durabilitySampleStride);
  }

  /**
   * Creates the durable consumer and starts the sweeper. A bus that is down is not fatal (as for
   * the publishers): the consumer is created when the bus answers, and /healthz says so meanwhile.
   */
  async start(): Promise<void> {
    await this.subscribe();
    const every = Math.max(50, Math.min(1_000, this.o.ackWaitMs / 4));
    this.sweeper = setInterval(() => void this.sweep(), every);
    this.sweeper.unref();
  }

  private async subscribe(): Promise<void> {
    if (this.stopping) return;
    try {
      this.handle = await this.o.bus.consume(
        this.o.consumerName,
        'svc.requests.>',
        (m) => this.onMessage(m),
        {
          ackWaitMs: this.o.ackWaitMs,
          maxDeliveries: this.o.maxDeliveries,
          batchSize: this.o.fetchBatch,
          maxInFlight: this.o.maxInFlight,
          // Reached only when no delivery was ever settled (a crash loop): ingest names its own otherwise.
          dlqReason: 'process_error' satisfies DlqReason,
          onError: (err) => this.o.onError(err, 'bus consumer'),
        },
      );
      this.lastError = null;
      if (this.stopping) await this.handle.close();
    } catch (err) {
      // Anything but an absent bus (a consumer name taken by another filter) is a wiring bug.
      if (!(err instanceof BusUnavailableError)) throw err;
      this.lastError = err;
      this.o.onError(err, 'create the ingest consumer; retrying');
      this.resubscribe = setTimeout(() => void this.subscribe(), SUBSCRIBE_RETRY_MS);
      this.resubscribe.unref();
    }
  }

  /** Stops fetching, flushes what is ready and waits for its acks; the rest is redelivered. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.resubscribe);
    clearInterval(this.sweeper);
    clearTimeout(this.timer);
    await this.handle?.close();
    await Promise.allSettled([...this.flights]);
    while (this.holding.ready.size > 0) await this.flushOnce(this.holding.takeReady(this.o.flushRows));
    await Promise.allSettled([...this.pendingAcks]);
  }

  stats(): IngestStats {
    return { ...this.counters, timings: { ...this.counters.timings } };
  }

  private async onMessage(m: BusMessage): Promise<void> {
    this.counters.received++;
    const incoming = classify(m.subject, m.data);
    const now = Date.now();
    switch (incoming.kind) {
      case 'dead': {
        const held = incoming.requestId ? this.holding.release(incoming.requestId).chunks : [];
        if (incoming.requestId) this.rememberDead(incoming.requestId, incoming.reason);
        this.o.onError(new Error(incoming.detail), `${incoming.reason}: ${m.subject}`);
        await this.deadLetter([...held, m], incoming.reason);
        return;
      }
      case 'chunk': {
        const late = this.flushing.get(incoming.requestId);
        if (late) {
          late.chunks.push({ side: incoming.side, n: incoming.n, message: m });
          return;
        }
        const dead = this.dead.get(incoming.requestId);
        if (dead && dead.until > now) {
          await this.deadLetter([m], dead.reason);
          return;
        }
        this.holding.holdChunk(incoming.requestId, incoming.side, incoming.n, m, now);
        this.schedule();
        return;
      }
      case 'envelope': {
        const id = incoming.envelope.request_id;
        const late = this.flushing.get(id);
        if (late) late.envelopes.push(m);
        else {
          this.dead.delete(id);
          this.holding.holdEnvelope(incoming.envelope, m, now);
          this.schedule();
        }
        return;
      }
    }
  }

  /**
   * A full batch goes at once (up to maxConcurrentFlushes in flight). A partial batch waits: the
   * first records after a quiet spell for flushIntervalMs, records that arrived during a flush until
   * flushIntervalMs after that flush started. So a trickle is flushed at most once an interval,
   * whatever the rate: each flush costs the engine a fixed price per table it writes (a new part,
   * then its merges), which back-to-back small flushes would pay many times a second.
   */
  private schedule(afterFlush = false): void {
    if (this.stopping) return;
    const ready = this.holding.ready;
    while (this.flights.size < this.o.maxConcurrentFlushes && ready.size >= this.o.flushRows)
      this.startFlush();
    if (this.flights.size > 0 || ready.size === 0) return;
    const interval = this.o.flushIntervalMs;
    const delay = afterFlush ? Math.max(0, this.lastFlushStart + interval - Date.now()) : interval;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.flights.size === 0 && ready.size > 0 && !this.stopping) this.startFlush();
    }, delay);
  }

  private startFlush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.lastFlushStart = Date.now();
    const flight: Promise<void> = this.flushOnce(this.holding.takeReady(this.o.flushRows)).finally(() => {
      this.flights.delete(flight);
      this.schedule(true);
    });
    this.flights.add(flight);
  }

  private async flushOnce(ids: string[]): Promise<void> {
    const items: FlushItem[] = [];
    const held = new Map<string, BusMessage[]>();
    for (const id of ids) {
      const h = this.holding.envelopes.get(id);
      if (!h) continue;
      const chunks: FlushItem['chunks'] = {};
      const { request, response } = h.envelope.bodies ?? {};
      if (request && 'chunks' in request) chunks.req = this.holding.chunkData(id, 'req', request.chunks);
      if (response && 'chunks' in response) chunks.res = this.holding.chunkData(id, 'res', response.chunks);
      items.push({ envelope: h.envelope, chunks, reused: h.reused });
      const released = this.holding.release(id);
      held.set(id, [...released.chunks, h.message]);
      this.flushing.set(id, { envelopes: [], chunks: [] });
    }
    const stamp = { batchId: newId('batch'), ingestedAt: new Date() };
    let outcomes: Map<string, FlushOutcome>;
    try {
      outcomes = await flushBatch(
        { ...this.o, sampler: this.sampler, onRequestLogged: this.options.onRequestLogged },
        items,
        stamp,
        this.counters.timings,
      );
    } catch (err) {
      this.o.onError(err, `flush ${stamp.batchId}`);
      outcomes = new Map();
    }
    this.counters.flushes++;
    const started = performance.now();
    const acks: Promise<void>[] = [];
    let anyCommitted = false;
    for (const item of items) {
      const id = item.envelope.request_id;
      const late = this.flushing.get(id)!;
      this.flushing.delete(id);
      const messages = [...held.get(id)!, ...late.envelopes, ...late.chunks.map((c) => c.message)];
      const outcome: FlushOutcome = outcomes.get(id) ?? {
        committed: false,
        reason: 'process_error',
        now: false,
        detail: 'flush failed',
      };
      if (outcome.committed) {
        anyCommitted = true;
        this.counters.committed++;
        for (const m of messages) acks.push(m.ack());
        continue;
      }
      if (outcome.reason !== 'malformed_row')
        this.lastError = new Error(`${outcome.reason}: ${outcome.detail}`);
      const deliveries = Math.max(...messages.map((m) => m.deliveryCount));
      if (outcome.now || deliveries >= this.o.maxDeliveries) {
        this.rememberDead(id, outcome.reason);
        await this.deadLetter(messages, outcome.reason);
        continue;
      }
      // Left unacked for redelivery after ack_wait; a copy that arrived meanwhile is taken up now.
      this.counters.leftUnacked++;
      const now = Date.now();
      for (const m of late.envelopes) this.holding.holdEnvelope(item.envelope, m, now);
      for (const c of late.chunks) this.holding.holdChunk(id, c.side, c.n, c.message, now);
    }
    if (anyCommitted && outcomes.size > 0 && [...outcomes.values()].every((o) => o.committed))
      this.lastError = null;
    this.track(acks);
    this.counters.timings.ackMs += performance.now() - started;
  }

  /** Acks are not awaited between flushes; a lost one only means a redelivery. */
  private track(acks: Promise<void>[]): void {
    const all = Promise.allSettled(acks).then((results) => {
      this.pendingAcks.delete(all);
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) this.o.onError(failed.reason, 'ack');
    });
    this.pendingAcks.add(all);
  }

  /** Chunks before their envelope, so a replay in dead-letter order republishes them first. */
  private async deadLetter(messages: BusMessage[], reason: DlqReason): Promise<void> {
    const seen = new Set<number>();
    for (const m of messages) {
      if (seen.has(m.seq)) continue;
      seen.add(m.seq);
      try {
        await m.deadLetter(reason);
        this.counters.deadLettered++;
        this.o.metrics.dlq.inc({ reason });
      } catch (err) {
        this.o.onError(err, `dead letter ${m.subject} (${reason})`);
      }
    }
  }

  private rememberDead(id: string, reason: DlqReason): void {
    this.dead.delete(id);
    this.dead.set(id, { reason, until: Date.now() + 2 * this.o.ackWaitMs });
    if (this.dead.size > DEAD_MEMORY) this.dead.delete(this.dead.keys().next().value!);
  }

  private async sweep(): Promise<void> {
    if (this.sweeping || this.stopping) return;
    this.sweeping = true;
    try {
      await sweepHolding({
        holding: this.holding,
        analytics: this.o.analytics,
        ackWaitMs: this.o.ackWaitMs,
        maxDeliveries: this.o.maxDeliveries,
        ack: (messages) => this.track(messages.map((m) => m.ack())),
        deadLetter: (messages, reason) => this.deadLetter(messages, reason),
        rememberDead: (id, reason) => this.rememberDead(id, reason),
        onError: this.o.onError,
      });
    } catch (err) {
      this.o.onError(err, 'sweep');
    } finally {
      this.sweeping = false;
      this.schedule();
    }
  }
}
