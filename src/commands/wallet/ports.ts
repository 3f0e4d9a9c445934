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

/** Until wallets exist every hold succeeds: platform-key traffic is served and not held. */
export const noEscrow: EscrowPort = { hold: async () => ({ ok: true }) };

/**
 * The payment provider port (SPEC 1.4, 5): top-ups are payment intents, refunds are provider
 * refunds, and deliveries arrive as signed webhooks.
 */
export interface PaymentProvider {
  readonly name: string;
  readonly publishableKey: string | null;
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
