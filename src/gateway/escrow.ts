/**
 * The escrow port of the request path (issue 6 item 4, issue 10): wallet-funded traffic (platform
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
