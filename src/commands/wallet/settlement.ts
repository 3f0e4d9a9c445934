import type { RequestCompleted } from '../../events/envelopes/request-completed.js';
import {
  type EventStore,
  IdempotencyMismatchError,
  type StreamAppend,
  UnstorableEventError,
  VersionConflictError,
} from '../../events/event-store.js';
import { formatUsd, parseUsd, type Usd } from '../../lib/money.js';
import type { WalletCommand } from './events.js';
import { decideWalletCommand, type WalletCommandContext } from './handler.js';
import type { HoldRecords, WaitForLedger } from './ports.js';

export interface Settlement {
  request_id: string;
  workspace_id: string;
  /** charged: a ChargeSettled was appended now; replayed: it had been before; skipped: nothing to settle. */
  outcome: 'charged' | 'replayed' | 'skipped';
  charged_usd: string;
  held_usd: string;
}

/** What settlement reads of a request.completed envelope (a parsed `RequestCompleted` fits). */
export type SettlementInput = Pick<
  RequestCompleted,
  'request_id' | 'workspace_id' | 'funding' | 'billing' | 'total_cost_usd' | 'finished_at'
>;

export interface SettlementDeps {
  store: EventStore;
  holds: Pick<HoldRecords, 'findMany'>;
  /** Apply the ledger to the read model before returning (tests, CLI); the projector does it otherwise. */
  waitForLedger?: WaitForLedger;
}

/** Requests settled in one transaction at most; a larger batch goes in several. */
const MAX_BATCH = 1_000;

interface Decided {
  input: SettlementInput;
  workspaceId: string;
  heldUsd: string;
  charged: Usd;
  /** Null when there is nothing to settle (BYOK or a failed billing without a hold). */
  command: { command: WalletCommand; ctx: WalletCommandContext } | null;
}

/** The SettleCharge of one request, from its envelope and its hold: pure. */
const decide = (
  envelope: SettlementInput,
  hold: { workspaceId: string; amountUsd: string } | null,
): Decided => {
  const billable = envelope.funding === 'wallet' && envelope.billing.status === 'priced';
  const charged = billable ? parseUsd(envelope.total_cost_usd) : parseUsd('0');
  const workspaceId = hold?.workspaceId ?? envelope.workspace_id;
  const heldUsd = hold ? formatUsd(parseUsd(hold.amountUsd)) : '0';
  const base = { input: envelope, workspaceId, heldUsd, charged };
  if (!hold && charged === 0n) return { ...base, command: null };
  return {
    ...base,
    command: {
      command: {
        type: 'SettleCharge',
        requestId: envelope.request_id,
        holdId: hold ? envelope.request_id : null,
        heldUsd,
        totalCostUsd: envelope.total_cost_usd,
        funding: envelope.funding,
        billingStatus: envelope.billing.status,
      },
      ctx: {
        commandId: `wallet:charge:${envelope.request_id}`,
        actor: 'ingest',
        // The envelope's own time, so a redelivery decides exactly the same event.
        now: envelope.finished_at,
        tenantId: workspaceId,
      },
    },
  };
};

/**
 * A batch append failed because of one of its requests rather than the store: an event the store
 * cannot hold, message ids stored in another shape, or a value PostgreSQL refuses (class 22, data
 * exception). Anything else (connection lost, timeout) would fail each request alone as well.
 */
const refusedForOneRequest = (err: unknown): boolean => {
  if (
    err instanceof UnstorableEventError ||
    err instanceof IdempotencyMismatchError ||
    err instanceof VersionConflictError
  )
    return true;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('22');
};

const skipped = (d: Decided): Settlement => ({
  request_id: d.input.request_id,
  workspace_id: d.workspaceId,
  outcome: 'skipped',
  charged_usd: '0',
  held_usd: '0',
});

const settled = (d: Decided, replayed: boolean, chargedUsd: string | undefined): Settlement => ({
  request_id: d.input.request_id,
  workspace_id: d.workspaceId,
  outcome: replayed ? 'replayed' : 'charged',
  charged_usd: chargedUsd ?? formatUsd(d.charged),
  held_usd: d.heldUsd,
});

/**
 * Settlement on request.completed (SPEC 1.4, 8 escrow hold): charges the priced total of a
 * wallet-funded request (0 USD when billing failed, SPEC 7.6 rule 2) and releases its escrow hold,
 * as one ChargeSettled on the workspace's ledger. Idempotent per request id: a redelivered envelope
 * appends nothing. BYOK requests without a hold are skipped.
 *
 * The ingest consumer calls `settleRequest(envelope)` after the request's durable write and acks
 * only once it resolved; a throw means "not settled, redeliver". Calls made in one turn of the
 * event loop (a flush settles all its requests at once) are settled together: one look-up of their
 * holds and one transaction appending every ChargeSettled (`settleRequests`). When that batch
 * fails, each request is settled on its own, so a request the store refuses fails alone and the
 * others still settle; a store that is down fails them all. Either way nothing is settled twice:
 * the events' message ids are derived from the request ids.
 */
export const settlement = (deps: SettlementDeps) => {
  /**
   * One batch in one transaction: every request's settlement, or a rejection with nothing
   * appended. A request whose envelope cannot be decided fails alone, before the batch.
   */
  const settleBatch = async (
    envelopes: readonly SettlementInput[],
  ): Promise<PromiseSettledResult<Settlement>[]> => {
    const holds = await deps.holds.findMany(envelopes.map((e) => e.request_id));
    const out: PromiseSettledResult<Settlement>[] = new Array(envelopes.length);
    const appends: StreamAppend[] = [];
    const pending: { at: number; d: Decided; chargedUsd: string | undefined }[] = [];
    envelopes.forEach((e, at) => {
      try {
        const d = decide(e, holds.get(e.request_id) ?? null);
        if (!d.command) {
          out[at] = { status: 'fulfilled', value: skipped(d) };
          return;
        }
        const { events, append } = decideWalletCommand(d.workspaceId, d.command.command, d.command.ctx);
        appends.push(append);
        const event = events[0];
        pending.push({
          at,
          d,
          chargedUsd: event?.type === 'ChargeSettled' ? event.data.charged_usd : undefined,
        });
      } catch (reason) {
        out[at] = { status: 'rejected', reason };
      }
    });
    // One settlement alone (the fallback below) is a plain append.
    const results =
      appends.length === 1
        ? [await deps.store.append(appends[0]!.streamId, appends[0]!.expected, appends[0]!.events)]
        : await deps.store.appendMany(appends);
    if (results.length > 0) await deps.waitForLedger?.(Math.max(...results.map((r) => r.lastPosition)));
    pending.forEach((p, n) => {
      out[p.at] = { status: 'fulfilled', value: settled(p.d, results[n]!.replayed, p.chargedUsd) };
    });
    return out;
  };

  /** Many requests at once; each settles or fails on its own. */
  const settleRequests = async (
    envelopes: readonly SettlementInput[],
  ): Promise<PromiseSettledResult<Settlement>[]> => {
    const out: PromiseSettledResult<Settlement>[] = [];
    for (let from = 0; from < envelopes.length; from += MAX_BATCH) {
      const part = envelopes.slice(from, from + MAX_BATCH);
      try {
        out.push(...(await settleBatch(part)));
      } catch (err) {
        if (!refusedForOneRequest(err)) {
          // The store itself failed (down, timed out): nothing was appended and every request waits.
          for (const _ of part) out.push({ status: 'rejected', reason: err });
          continue;
        }
        // The store refused one append, and with it the transaction: settle one by one, so only
        // the refused request fails. Nothing of the batch was appended (it rolled back whole).
        for (const e of part)
          out.push(
            ...(await settleBatch([e]).catch((reason: unknown): PromiseSettledResult<Settlement>[] => [
              { status: 'rejected', reason },
            ])),
          );
      }
    }
    return out;
  };

  let queue: { envelope: SettlementInput; resolve: (s: Settlement) => void; reject: (e: unknown) => void }[] =
    [];
  const drain = async () => {
    const taken = queue;
    queue = [];
    const results = await settleRequests(taken.map((q) => q.envelope));
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') taken[i]!.resolve(r.value);
      else taken[i]!.reject(r.reason);
    });
  };
  const settleRequest = (envelope: SettlementInput): Promise<Settlement> =>
    new Promise((resolve, reject) => {
      if (queue.length === 0) setImmediate(() => void drain());
      queue.push({ envelope, resolve, reject });
    });

  return { settleRequest, settleRequests };
};
