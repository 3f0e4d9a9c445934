import type { EventStore } from '../../events/event-store.js';
import type { Pool } from '../../events/postgres/pool.js';
import { ServiceError } from '../../lib/errors.js';
import { idFromNames, newId } from '../../lib/ids.js';
import { compareUsd, formatUsd, parseUsd, subUsd } from '../../lib/money.js';
import { centsOf, checkTopUpAmount } from './amounts.js';
import { positiveUsd } from './decider.js';
import type { WalletCommand } from './events.js';
import { runWalletCommand } from './handler.js';
import { type FundsReservation, PAYMENTS_NOT_CONFIGURED, type PaymentProvider } from './ports.js';
import { WalletReads, type WalletTransaction } from './reads.js';

export interface WalletActor {
  /** `admin`, `user:<id>`, `payment:<provider>`, ...: recorded as the events' actor. */
  id: string;
}

export interface WalletDeps {
  store: EventStore;
  pool: Pool;
  /** Null when SVC_PAYMENT_API_KEY is unset: top-ups, refunds and webhooks are off (SPEC 5). */
  payments: PaymentProvider | null;
  escrow: FundsReservation;
  /** Resolves once the wallet read model includes `position`. */
  readYourWrites: (position: number) => Promise<void>;
  clock?: () => Date;
}

/**
 * The wallet's write side (issue 10): grants, top-ups, refunds and auto-refill settings. Each
 * money movement is one ledger event under a deterministic command id, so retries, duplicate
 * deliveries and concurrent callers with the same key append it once.
 */
export class WalletService {
  readonly reads: WalletReads;

  constructor(readonly deps: WalletDeps) {
    this.reads = new WalletReads(deps.pool);
  }

  now(): string {
    return (this.deps.clock?.() ?? new Date()).toISOString();
  }

  async run(workspaceId: string, command: WalletCommand, commandId: string, actor: WalletActor) {
    const result = await runWalletCommand(this.deps.store, workspaceId, command, {
      commandId,
      actor: actor.id,
      now: this.now(),
      tenantId: workspaceId,
    });
    await this.deps.readYourWrites(result.position);
    return result;
  }

  requirePayments(): PaymentProvider {
    if (!this.deps.payments) throw new ServiceError('service_unavailable', PAYMENTS_NOT_CONFIGURED);
    return this.deps.payments;
  }

  async workspaceExists(workspaceId: string): Promise<boolean> {
    const { rowCount } = await this.deps.pool.query('SELECT 1 FROM rm_workspaces WHERE workspace_id = $1', [
      workspaceId,
    ]);
    return (rowCount ?? 0) > 0;
  }

  async requireWorkspace(workspaceId: string): Promise<void> {
    if (!(await this.workspaceExists(workspaceId)))
      throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
  }

  /** SPEC 3 grant row: the same idempotency key returns the original transaction, no extra credit. */
  async grant(
    actor: WalletActor,
    workspaceId: string,
    input: { amountUsd: string; reason: string; idempotencyKey: string; via: 'http' | 'cli' },
  ): Promise<{ transaction: WalletTransaction; created: boolean }> {
    await this.requireWorkspace(workspaceId);
    const earlier = await this.reads.grantByKey(workspaceId, input.idempotencyKey);
    if (earlier) return { transaction: earlier, created: false };
    const transactionId = idFromNames('wtx', workspaceId, 'grant', input.idempotencyKey);
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
    );
    const transaction = await this.reads.grantByKey(workspaceId, input.idempotencyKey);
    if (!transaction) throw new Error(`grant ${transactionId} is missing from the read model`);
    return { transaction, created: !r.replayed };
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
   * SPEC 3 refund row, idempotent on the refund id. The amount is first held in escrow, so holds
   * racing for the same funds cannot spend what is being refunded; the provider refund is created
   * under an idempotency key of its own, and the ledger's RefundIssued settles that hold.
   */
  async refund(
    actor: WalletActor,
    workspaceId: string,
    input: { paymentIntentId: string; amountUsd: string; refundId?: string },
  ): Promise<{ transaction: WalletTransaction; created: boolean }> {
    const payments = this.requirePayments();
    await this.requireWorkspace(workspaceId);
    const refundId = input.refundId ?? newId('rf');
    const earlier = await this.reads.refundById(workspaceId, refundId);
    if (earlier) return { transaction: earlier, created: false };

    const topUp = await this.reads.topUpByIntent(payments.name, input.paymentIntentId);
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
      parseUsd(await this.reads.refundedOf(topUp.payment_intent_id)),
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
    const transaction = await this.reads.refundById(workspaceId, refundId);
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
    return this.reads.autoRefill(workspaceId);
  }
}
