import { ServiceError } from '../../lib/errors.js';
import { idFromNames } from '../../lib/ids.js';
import { usdOfCents } from './amounts.js';
import type { PaymentWebhookEvent } from './ports.js';
import type { WalletCommands } from './service.js';

export type WebhookOutcome =
  | 'credited'
  | 'already_credited'
  | 'ignored'
  | 'unknown_workspace'
  | 'unsupported_currency';

export interface WebhookReceipt {
  received: true;
  event_id: string;
  /** True when this delivery repeated one already processed: dropped, nothing credited. */
  duplicate: boolean;
  outcome: WebhookOutcome | string;
}

const SUCCEEDED = 'payment_intent.succeeded';

/** Credits a verified payment_intent.succeeded once per payment intent (SPEC 3 second row). */
const credit = async (
  wallet: WalletCommands,
  provider: string,
  event: PaymentWebhookEvent,
): Promise<WebhookOutcome> => {
  const intent = event.paymentIntent;
  if (event.type !== SUCCEEDED || !intent || intent.amountReceivedCents === 0) return 'ignored';
  if (intent.currency !== 'usd') return 'unsupported_currency';
  const workspaceId = intent.metadata.workspace_id;
  // Left uncredited on purpose: reconciliation reports the payment as a mismatch for an operator.
  if (!workspaceId || !(await wallet.deps.workspaces.exists(workspaceId))) return 'unknown_workspace';
  const transactionId = idFromNames('wtx', 'topup', provider, intent.id);
  const r = await wallet.run(
    workspaceId,
    {
      type: 'CreditTopUp',
      transactionId,
      topupId: intent.metadata.topup_id ?? idFromNames('topup', provider, intent.id),
      provider,
      providerEventId: event.id,
      paymentIntentId: intent.id,
      amountUsd: usdOfCents(intent.amountReceivedCents),
    },
    // Keyed on the payment intent, so two different events for one payment still credit it once.
    `wallet:topup:${transactionId}`,
    { id: `payment:${provider}` },
  );
  return r.replayed ? 'already_credited' : 'credited';
};

/**
 * A signed payment webhook (SPEC 3, 5): verified, recorded once unique on (provider,
 * provider_event_id), then processed. A delivery whose event was processed already is dropped;
 * one recorded but never finished (a crash in between) is processed again, which is safe because
 * the credit is idempotent.
 */
export const receivePaymentWebhook = async (
  wallet: WalletCommands,
  providerName: string,
  rawBody: Buffer,
  signature: string | undefined,
): Promise<WebhookReceipt> => {
  const payments = wallet.requirePayments();
  if (providerName !== payments.name)
    throw new ServiceError('not_found', `no payment provider named ${providerName} is configured`);
  const event = payments.verifyWebhook(rawBody, signature);
  const intent = event.paymentIntent;
  const pool = wallet.deps.pool;
  const inserted = await pool.query(
    `INSERT INTO workspace_payment_webhook_events (provider, provider_event_id, event_type, workspace_id,
       payment_intent_id, amount_usd, payload)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (provider, provider_event_id) DO NOTHING`,
    [
      payments.name,
      event.id,
      event.type,
      intent?.metadata.workspace_id ?? null,
      intent?.id ?? null,
      intent ? usdOfCents(intent.amountReceivedCents) : null,
      JSON.stringify(event.payload),
    ],
  );
  if (inserted.rowCount === 0) {
    const { rows } = await pool.query<{ processed_at: Date | null; outcome: string | null }>(
      'SELECT processed_at, outcome FROM workspace_payment_webhook_events WHERE provider = $1 AND provider_event_id = $2',
      [payments.name, event.id],
    );
    if (rows[0]?.processed_at)
      return { received: true, event_id: event.id, duplicate: true, outcome: rows[0].outcome ?? 'ignored' };
  }
  const outcome = await credit(wallet, payments.name, event);
  await pool.query(
    `UPDATE workspace_payment_webhook_events SET processed_at = now(), outcome = $3
     WHERE provider = $1 AND provider_event_id = $2`,
    [payments.name, event.id, outcome],
  );
  return { received: true, event_id: event.id, duplicate: false, outcome };
};
