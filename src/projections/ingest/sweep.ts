import type { AnalyticsStore } from '../../analytics/port.js';
import type { BusMessage } from '../../events/bus.js';
import type { BodySide } from '../../events/subjects.js';
import type { Holding } from './holding.js';
import type { DlqReason } from './metrics.js';
import { committedBodies } from './readback.js';

/**
 * Looks after what waits too long in the holding (run every few hundred ms):
 * - an envelope that waits for chunks may find its bodies packed by an earlier, committed delivery
 *   (its chunks were acked with it, its own ack was lost), and then reuses that pack;
 * - a chunk without an envelope whose request is committed with that body is a leftover copy and
 *   is acked;
 * - whatever is still incomplete near the end of its lease is dead-lettered as process_error on
 *   its last delivery, and otherwise dropped from memory so the bus redelivers it.
 */

export interface SweepContext {
  holding: Holding;
  analytics: AnalyticsStore;
  ackWaitMs: number;
  maxDeliveries: number;
  ack(messages: BusMessage[]): void;
  deadLetter(messages: BusMessage[], reason: DlqReason): Promise<void>;
  rememberDead(requestId: string, reason: DlqReason): void;
  onError(err: unknown, context: string): void;
}

export const sweepHolding = async (ctx: SweepContext, now = Date.now()): Promise<void> => {
  const { holding } = ctx;
  // Past three quarters of ack_wait the lease is nearly gone: decide before the bus does.
  const stale = ctx.ackWaitMs * 0.75;
  const waiting = [...holding.envelopes.values()].filter((h) => !holding.ready.has(h.envelope.request_id));
  const lookups = waiting.filter(
    (h) => !h.lookedUp && (h.message.deliveryCount > 1 || now - h.receivedAt > stale / 2),
  );
  const orphans = [...holding.chunks.entries()].filter(
    ([id, byKey]) =>
      !holding.envelopes.has(id) && [...byKey.values()].some((c) => now - c.receivedAt > stale),
  );
  if (lookups.length > 0 || orphans.length > 0) {
    const ids = [...lookups.map((h) => h.envelope.request_id), ...orphans.map(([id]) => id)];
    const committed = await committedBodies(ctx.analytics, ids);
    for (const h of lookups) {
      h.reused = committed.get(h.envelope.request_id) ?? {};
      h.lookedUp = true;
      holding.recheck(h.envelope.request_id);
    }
    for (const [id, byKey] of orphans) {
      const stored = committed.get(id);
      for (const [key, c] of byKey) {
        const side = key.slice(0, 3) as BodySide;
        if (stored?.[side]) {
          ctx.ack([c.message]);
          byKey.delete(key);
        } else if (now - c.receivedAt > stale) {
          byKey.delete(key);
          if (c.message.deliveryCount >= ctx.maxDeliveries)
            await ctx.deadLetter([c.message], 'process_error');
        }
      }
      if (byKey.size === 0) holding.chunks.delete(id);
    }
  }
  for (const h of waiting) {
    const id = h.envelope.request_id;
    if (holding.ready.has(id) || now - h.receivedAt <= stale) continue;
    const missing = holding.missingSides(id);
    const { chunks } = holding.release(id);
    const deliveries = Math.max(h.message.deliveryCount, ...chunks.map((m) => m.deliveryCount));
    ctx.onError(new Error(`${id}: ${missing.join(', ')} body chunks missing`), 'sweep');
    if (deliveries >= ctx.maxDeliveries) {
      ctx.rememberDead(id, 'process_error');
      await ctx.deadLetter([...chunks, h.message], 'process_error');
    }
  }
};
