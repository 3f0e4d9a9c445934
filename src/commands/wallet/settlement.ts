import type { RequestCompleted } from '../../events/envelopes/request-completed.js';
import type { EventStore } from '../../events/event-store.js';
import { formatUsd, parseUsd } from '../../lib/money.js';
import { runWalletCommand } from './handler.js';
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
  holds: Pick<HoldRecords, 'find'>;
  /** Apply the ledger to the read model before returning (tests, CLI); the projector does it otherwise. */
  waitForLedger?: WaitForLedger;
}

/**
 * Settlement on request.completed (SPEC 1.4, 8 escrow hold): charges the priced total of a
 * wallet-funded request (0 USD when billing failed, SPEC 7.6 rule 2) and releases its escrow hold,
 * as one ChargeSettled on the workspace's ledger. Idempotent per request id: a redelivered envelope
 * appends nothing. BYOK requests without a hold are skipped.
 *
 * The ingest consumer calls `settleRequest(envelope)` after the request's durable write and acks
 * only once it resolved; a throw means "not settled, redeliver".
 */
export const settlement = (deps: SettlementDeps) => {
  const settleRequest = async (envelope: SettlementInput): Promise<Settlement> => {
    const hold = await deps.holds.find(envelope.request_id);
    const billable = envelope.funding === 'wallet' && envelope.billing.status === 'priced';
    const charged = billable ? parseUsd(envelope.total_cost_usd) : parseUsd('0');
    const workspaceId = hold?.workspaceId ?? envelope.workspace_id;
    const heldUsd = hold ? formatUsd(parseUsd(hold.amountUsd)) : '0';
    if (!hold && charged === 0n)
      return {
        request_id: envelope.request_id,
        workspace_id: workspaceId,
        outcome: 'skipped',
        charged_usd: '0',
        held_usd: '0',
      };
    const result = await runWalletCommand(
      deps.store,
      workspaceId,
      {
        type: 'SettleCharge',
        requestId: envelope.request_id,
        holdId: hold ? envelope.request_id : null,
        heldUsd,
        totalCostUsd: envelope.total_cost_usd,
        funding: envelope.funding,
        billingStatus: envelope.billing.status,
      },
      {
        commandId: `wallet:charge:${envelope.request_id}`,
        actor: 'ingest',
        // The envelope's own time, so a redelivery decides exactly the same event.
        now: envelope.finished_at,
        tenantId: workspaceId,
      },
    );
    await deps.waitForLedger?.(result.position);
    const settled = result.events[0];
    return {
      request_id: envelope.request_id,
      workspace_id: workspaceId,
      outcome: result.replayed ? 'replayed' : 'charged',
      charged_usd: settled?.type === 'ChargeSettled' ? settled.data.charged_usd : formatUsd(charged),
      held_usd: heldUsd,
    };
  };
  return { settleRequest };
};
