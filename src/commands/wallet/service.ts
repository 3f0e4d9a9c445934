import type { EventStore } from '../../events/event-store.js';
import type { Pool } from '../../events/postgres/pool.js';
import { ServiceError } from '../../lib/errors.js';
import { idFromNames, newId } from '../../lib/ids.js';
import { compareUsd, formatUsd, parseUsd, subUsd } from '../../lib/money.js';
import type { WorkspaceDirectory } from '../ports.js';
import { centsOf, checkTopUpAmount } from './amounts.js';
import { positiveUsd } from './decider.js';
import type { WalletCommand, WalletEvent } from './events.js';
import { runWalletCommand } from './handler.js';
import {
  type FundsReservation,
  PAYMENTS_NOT_CONFIGURED,
  type PaymentProvider,
  type WaitForLedger,
  type WalletLedger,
  type WalletTransaction,
} from './ports.js';

export interface WalletActor {
  /** `admin`, `user:<id>`, `payment:<provider>`, ...: recorded as the events' actor. */
  id: string;
}

export interface WalletDeps {
  store: EventStore;
  /** The webhook deliveries the write side records (workspace_payment_webhook_events). */
  pool: Pool;
  /** Null when SVC_PAYMENT_API_KEY is unset: top-ups, refunds and webhooks are off (SPEC 5). */
  payments: PaymentProvider | null;
  escrow: FundsReservation;
  /** The balance read model's answers: earlier movements, the top-up a refund draws on. */
  ledger: WalletLedger;
  workspaces: WorkspaceDirectory;
  /** Read-your-writes: a movement's caller sees the balance it changed (SPEC 3 "wallet balance increased"). */
  waitForLedger: WaitForLedger;
  clock?: () => Date;
}

type GrantCredited = Extract<WalletEvent, { type: 'GrantCredited' }>;

/** A new grant's transaction as the read model records it, from the event just appended. */
const grantTransaction = (
  workspaceId: string,
  e: GrantCredited,
  actor: WalletActor,
  at: string,
): WalletTransaction => ({
  transaction_id: e.data.transaction_id,
  workspace_id: workspaceId,
  type: 'grant',
  amount_usd: e.data.amount_usd,
  reason: e.data.reason,
  idempotency_key: e.data.idempotency_key,
  refund_id: null,
  provider: null,
  payment_intent_id: null,
  provider_event_id: null,
  provider_refund_id: null,
  actor: actor.id,
  created_at: at,
});

/** An earlier refund under the same id, if the request is a retry of it; 409 if it asks for another. */
const sameRefund = (
  earlier: WalletTransaction,
  input: { paymentIntentId: string; amountUsd: string },
): WalletTransaction => {
  const sameAmount =
    compareUsd(parseUsd(earlier.amount_usd), parseUsd(positiveUsd(input.amountUsd, 'amount_usd'))) === 0;
  if (earlier.payment_intent_id === input.paymentIntentId && sameAmount) return earlier;
  throw new ServiceError(
    'conflict',
    `refund_id ${earlier.refund_id} already refunded ${earlier.amount_usd} USD of ${earlier.payment_intent_id}: a different refund needs a refund_id of its own`,
    { param: 'refund_id' },
  );
};

/**
 * The wallet's write side (SPEC 3, 4.6): grants, top-ups, refunds and auto-refill settings. Each
 * money movement is one ledger event under a deterministic command id, so retries, duplicate
 * deliveries and concurrent callers with the same key append it once. A command that names a
 * workspace asks the workspace directory once whether it exists.
 */
export class WalletCommands {
  constructor(readonly deps: WalletDeps) {}

  now(): string {
    return (this.deps.clock?.() ?? new Date()).toISOString();
  }

  async run(
    workspaceId: string,
    command: WalletCommand,
    commandId: string,
    actor: WalletActor,
    now = this.now(),
  ) {
    const result = await runWalletCommand(this.deps.store, workspaceId, command, {
      commandId,
      actor: actor.id,
      now,
      tenantId: workspaceId,
    });
    await this.deps.waitForLedger(result.position);
    return result;
  }

  requirePayments(): PaymentProvider {
    if (!this.deps.payments) throw new ServiceError('service_unavailable', PAYMENTS_NOT_CONFIGURED);
    return this.deps.payments;
  }

  private async requireWorkspace(workspaceId: string): Promise<void> {
    if (!(await this.deps.workspaces.exists(workspaceId)))
      throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
  }

  /**
   * SPEC 3 grant row: the same idempotency key returns the original transaction, no extra credit.
   * A new grant answers from the event it appended; the read model is asked only for an earlier one.
   */
  async grant(
    actor: WalletActor,
    workspaceId: string,
    input: { amountUsd: string; reason: string; idempotencyKey: string; via: 'http' | 'cli' },
  ): Promise<{ transaction: WalletTransaction; created: boolean }> {
    await this.requireWorkspace(workspaceId);
    const earlier = await this.deps.ledger.grantByKey(workspaceId, input.idempotencyKey);
    if (earlier) return { transaction: earlier, created: false };
    const transactionId = idFromNames('wtx', workspaceId, 'grant', input.idempotencyKey);
    const now = this.now();
    const r = await this.run(
      workspaceId,
      {
        type: 'GrantCredit',
        transactionId,
        amountUsd: input.amountUsd,
        reason: input.reason,
        idempotencyKey: input.idempotencyKey,
        via: input.via,
      },
      `wallet:grant:${transactionId}`,
      actor,
      now,
    );
    const granted = r.events[0];
    if (!r.replayed && granted?.type === 'GrantCredited')
      return { transaction: grantTransaction(workspaceId, granted, actor, now), created: true };
    // A concurrent caller with the same key appended it first: answer with that original.
    const original = await this.deps.ledger.grantByKey(workspaceId, input.idempotencyKey);
    if (!original) throw new Error(`grant ${transactionId} is missing from the read model`);
    return { transaction: original, created: false };
  }

  /** SPEC 3 first row: a payment intent tagged with the workspace, and a pending top-up row. */
  async createTopUp(actor: WalletActor, workspaceId: string, amountUsd: string) {
    const payments = this.requirePayments();
    await this.requireWorkspace(workspaceId);
    const amountCents = checkTopUpAmount(amountUsd);
    const topupId = newId('topup');
    const intent = await payments.createPaymentIntent({ amountCents, workspaceId, topupId });
    await this.run(
      workspaceId,
      {
        type: 'RequestTopUp',
        topupId,
        provider: payments.name,
        paymentIntentId: intent.id,
        amountUsd: positiveUsd(amountUsd, 'amount_usd'),
      },
      `wallet:topup-requested:${topupId}`,
      actor,
    );
    return {
      topup_id: topupId,
      workspace_id: workspaceId,
      provider: payments.name,
      payment_intent_id: intent.id,
      client_secret: intent.clientSecret,
      amount_usd: positiveUsd(amountUsd, 'amount_usd'),
      currency: 'USD',
      status: 'pending' as const,
      publishable_key: payments.publishableKey,
    };
  }

  /**
   * SPEC 3 refund row, idempotent on the refund id, which the caller always names: a retry returns
   * the original, and the same id for another payment or amount is refused rather than read as a
   * retry. The amount is first held in escrow, so holds racing for the same funds cannot spend what
   * is being refunded; the provider refund is created under an idempotency key of its own, and the
   * ledger's RefundIssued settles that hold.
   */
  async refund(
    actor: WalletActor,
    workspaceId: string,
    input: { paymentIntentId: string; amountUsd: string; refundId: string },
  ): Promise<{ transaction: WalletTransaction; created: boolean }> {
    const payments = this.requirePayments();
    await this.requireWorkspace(workspaceId);
    const refundId = input.refundId;
    const earlier = await this.deps.ledger.refundById(workspaceId, refundId);
    if (earlier) return { transaction: sameRefund(earlier, input), created: false };

    const topUp = await this.deps.ledger.topUpByIntent(payments.name, input.paymentIntentId);
    if (!topUp || topUp.workspace_id !== workspaceId)
      throw new ServiceError('not_found', 'no top-up of this workspace was paid with this payment intent', {
        param: 'payment_intent_id',
      });
    if (topUp.status !== 'settled')
      throw new ServiceError(
        'conflict',
        'this top-up is not settled yet; only a settled payment is refunded',
        {
          param: 'payment_intent_id',
        },
      );
    const amount = positiveUsd(input.amountUsd, 'amount_usd');
    const amountCents = centsOf(amount);
    const refundable = subUsd(
      parseUsd(topUp.amount_usd),
      parseUsd(await this.deps.ledger.refundedOf(topUp.payment_intent_id)),
    );
    if (compareUsd(parseUsd(amount), refundable) > 0)
      throw new ServiceError(
        'bad_request',
        `amount_usd exceeds the refundable ${formatUsd(refundable)} USD`,
        {
          param: 'amount_usd',
        },
      );

    const holdId = `refund:${workspaceId}:${refundId}`;
    const held = await this.deps.escrow.place(holdId, workspaceId, amount);
    if (!held.ok)
      throw new ServiceError(
        'conflict',
        `the wallet has ${held.availableUsd ?? '0'} USD available; a refund of ${amount} USD cannot be taken from it`,
        { param: 'amount_usd' },
      );
    let providerRefund: { id: string };
    try {
      providerRefund = await payments.createRefund({
        paymentIntentId: topUp.payment_intent_id,
        amountCents,
        workspaceId,
        refundId,
      });
    } catch (err) {
      await this.deps.escrow.release(holdId);
      throw err;
    }
    const transactionId = idFromNames('wtx', workspaceId, 'refund', refundId);
    const r = await this.run(
      workspaceId,
      {
        type: 'IssueRefund',
        transactionId,
        refundId,
        provider: payments.name,
        providerRefundId: providerRefund.id,
        paymentIntentId: topUp.payment_intent_id,
        amountUsd: amount,
        holdId,
      },
      `wallet:refund:${transactionId}`,
      actor,
    );
    const transaction = await this.deps.ledger.refundById(workspaceId, refundId);
    if (!transaction) throw new Error(`refund ${transactionId} is missing from the read model`);
    return { transaction, created: !r.replayed };
  }

  /** SPEC 8: stored per workspace and never acted on; no saved payment method is charged. */
  async setAutoRefill(
    actor: WalletActor,
    workspaceId: string,
    input: { enabled: boolean; triggerUsd: string; amountUsd: string },
  ) {
    await this.requireWorkspace(workspaceId);
    await this.run(
      workspaceId,
      {
        type: 'SetAutoRefill',
        enabled: input.enabled,
        triggerUsd: input.triggerUsd,
        amountUsd: input.amountUsd,
      },
      newId('cmd'),
      actor,
    );
    return this.deps.ledger.autoRefill(workspaceId);
  }
}
