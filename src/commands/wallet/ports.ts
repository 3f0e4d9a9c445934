/**
 * The escrow port of the request path (SPEC 1.4, 8 escrow hold): wallet-funded traffic (platform
 * keys) holds funds before dispatch; settlement on request.completed charges the priced total and
 * releases the hold, idempotently per request id. BYOK traffic places no hold.
 */
export interface HoldRequest {
  requestId: string;
  workspaceId: string;
  /** Exact decimal USD, sized by the pricing engine's escrow estimate. */
  amountUsd: string;
}

export type HoldResult =
  | { ok: true }
  | { ok: false; reason: 'insufficient_funds' | 'no_wallet'; availableUsd?: string };

export interface EscrowPort {
  /** At most one database round trip; never lets available funds go below zero. */
  hold(request: HoldRequest): Promise<HoldResult>;
}

/**
 * The payment provider port (SPEC 1.4, 5): top-ups are payment intents, refunds are provider
 * refunds, and deliveries arrive as signed webhooks.
 */
export interface PaymentProvider {
  readonly name: string;
  readonly publishableKey: string | null;
  /** The provider's API origin a browser confirms payments at with the publishable key. */
  readonly browserApiBase: string;
  createPaymentIntent(input: {
    amountCents: number;
    workspaceId: string;
    topupId: string;
  }): Promise<{ id: string; clientSecret: string }>;
  createRefund(input: {
    paymentIntentId: string;
    amountCents: number;
    workspaceId: string;
    refundId: string;
  }): Promise<{ id: string; status: string }>;
  /** Verifies the signature and the timestamp; throws a 400 ServiceError for anything else. */
  verifyWebhook(rawBody: Buffer, signature: string | undefined): PaymentWebhookEvent;
}

/** What the wallet reads of a verified delivery; everything else stays in the stored payload. */
export interface PaymentWebhookEvent {
  id: string;
  type: string;
  payload: unknown;
  /** Present when the event is about a payment intent. */
  paymentIntent: {
    id: string;
    amountReceivedCents: number;
    currency: string;
    metadata: Record<string, string>;
  } | null;
}

export const PAYMENTS_NOT_CONFIGURED =
  'payments not configured: the operator has not set SVC_PAYMENT_API_KEY, so wallet top-ups and refunds are disabled (BYOK traffic is unaffected)';

/** Reserves funds under a hold id through the escrow (a refund in flight), and gives them back. */
export interface FundsReservation {
  place(holdId: string, workspaceId: string, amountUsd: string): Promise<HoldResult>;
  release(holdId: string): Promise<void>;
}

/** Resolves once the wallet's balance read model includes `position` (read-your-writes). */
export type WaitForLedger = (position: number) => Promise<void>;

/** One credit or refund of the ledger as the API answers it (SPEC 2.9 workspace_wallet_transactions). */
export interface WalletTransaction {
  transaction_id: string;
  workspace_id: string;
  type: 'topup' | 'grant' | 'refund';
  amount_usd: string;
  reason: string | null;
  idempotency_key: string | null;
  refund_id: string | null;
  provider: string | null;
  payment_intent_id: string | null;
  provider_event_id: string | null;
  provider_refund_id: string | null;
  actor: string;
  created_at: string;
}

/** One top-up (SPEC 2.9 workspace_wallet_topups): pending until its payment is credited. */
export interface TopUpRow {
  topup_id: string;
  workspace_id: string;
  provider: string;
  payment_intent_id: string;
  amount_usd: string;
  status: 'pending' | 'settled';
  created_at: string;
  settled_at: string | null;
}

/** Auto-refill settings as stored (SPEC 8: never acted on). */
export interface AutoRefillSettings {
  enabled: boolean;
  trigger_usd: string;
  amount_usd: string;
  updated_by: string;
  updated_at: string;
}

/**
 * What the wallet commands ask the balance read model (src/projections/wallet/reads.ts): earlier
 * movements under an idempotency key or refund id, the top-up a refund draws on, and the settings.
 */
export interface WalletLedger {
  grantByKey(workspaceId: string, idempotencyKey: string): Promise<WalletTransaction | null>;
  refundById(workspaceId: string, refundId: string): Promise<WalletTransaction | null>;
  topUpByIntent(provider: string, paymentIntentId: string): Promise<TopUpRow | null>;
  /** Canonical decimal USD refunded so far against one payment intent. */
  refundedOf(paymentIntentId: string): Promise<string>;
  autoRefill(workspaceId: string): Promise<AutoRefillSettings | null>;
}

/** A succeeded payment with no topup transaction crediting it (SPEC 3 reconciliation row). */
export interface UncreditedPayment {
  provider: string;
  provider_event_id: string;
  payment_intent_id: string;
  workspace_id: string | null;
  amount_usd: string | null;
  /** webhook: a verified delivery was recorded; topup: a top-up row is marked settled. */
  source: 'webhook' | 'topup';
}

export interface UncreditedPayments {
  uncreditedPayments(now: string, graceSeconds: number): Promise<UncreditedPayment[]>;
}

/** The escrow's hold records, as settlement and the expiry sweep read them (PostgresEscrow). */
export interface HoldRecords {
  /** The workspace and amount of a hold, whatever its status; null when none was placed. */
  find(holdId: string): Promise<{ workspaceId: string; amountUsd: string } | null>;
  /** `find` for many ids in one round trip; ids without a hold are absent from the map. */
  findMany(holdIds: readonly string[]): Promise<Map<string, { workspaceId: string; amountUsd: string }>>;
  /** Active holds expired at `now`, oldest first. */
  expired(now: string, limit: number): Promise<{ holdId: string; workspaceId: string; amountUsd: string }[]>;
  /** Deletes holds closed more than `days` days before `now`. */
  purgeClosed(now: string, days: number): Promise<void>;
}
