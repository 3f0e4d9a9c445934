import { namedStatement, type Pool } from '../../events/postgres/pool.js';
import { ServiceError } from '../../lib/errors.js';
import { formatUsd, parseUsd } from '../../lib/money.js';
import type { EscrowPort, HoldRecords, HoldRequest, HoldResult } from './ports.js';

/** How long a hold waits for its settlement before the sweep gives the funds back (one hour). */
export const DEFAULT_HOLD_TTL_SECONDS = 3_600;

interface HoldRow {
  ok: boolean;
  reason: 'insufficient_funds' | 'no_wallet' | null;
  available_usd: string | null;
}

// A named statement is parsed and planned once per connection, so a hold costs one execute.
const holdStatement = namedStatement(
  'svc_wallet_hold',
  'SELECT ok, reason, available_usd FROM svc_wallet_hold($1, $2, $3, $4)',
);

const RETRY_AFTER_MS = 50;
/** too_many_connections, cannot_connect_now, or the pool's own connect timeout. */
const neverConnected = (err: unknown): boolean => {
  const e = err as { code?: unknown; message?: unknown };
  return (
    e.code === '53300' ||
    e.code === '57P03' ||
    (typeof e.message === 'string' && e.message.includes('timeout exceeded when trying to connect'))
  );
};

/**
 * The escrow port on PostgreSQL (SPEC 1.4, 8 escrow hold): one round trip per hold, a plpgsql function
 * whose conditional UPDATE never lets a wallet's available funds (balance minus holds) go below
 * zero, however many holds race for it. Holds are keyed by request id; settlement and the expiry
 * sweep close them through the ledger (ChargeSettled, HoldExpired).
 */
export class PostgresEscrow implements EscrowPort, HoldRecords {
  constructor(
    private readonly pool: Pool,
    private readonly ttlSeconds = DEFAULT_HOLD_TTL_SECONDS,
  ) {}

  hold(request: HoldRequest): Promise<HoldResult> {
    return this.place(request.requestId, request.workspaceId, request.amountUsd);
  }

  /** A hold under any id (a refund reserves its amount as `refund:<workspace>:<refund_id>`). */
  async place(holdId: string, workspaceId: string, amountUsd: string): Promise<HoldResult> {
    const query = () =>
      this.pool.query<HoldRow>(
        holdStatement([holdId, workspaceId, formatUsd(parseUsd(amountUsd)), this.ttlSeconds]),
      );
    let rows: HoldRow[];
    try {
      ({ rows } = await query().catch(async (err: unknown) => {
        // A connection that could not be opened never ran the statement, so one retry is safe.
        if (!neverConnected(err)) throw err;
        await new Promise((r) => setTimeout(r, RETRY_AFTER_MS));
        return query();
      }));
    } catch (err) {
      // Wallet traffic fails closed: without a hold nothing may be dispatched on the platform's key.
      throw new ServiceError('service_unavailable', 'wallet escrow is unavailable; retry shortly', {
        cause: err,
      });
    }
    const row = rows[0]!;
    if (row.ok) return { ok: true };
    return {
      ok: false,
      reason: row.reason ?? 'insufficient_funds',
      ...(row.available_usd === null ? {} : { availableUsd: formatUsd(parseUsd(row.available_usd)) }),
    };
  }

  /** Gives an active hold back without a ledger entry: nothing was spent (a refund the provider refused). */
  async release(holdId: string): Promise<void> {
    await this.pool.query('SELECT svc_wallet_release($1, $2)', [holdId, 'released']);
  }

  async find(holdId: string): Promise<{ workspaceId: string; amountUsd: string } | null> {
    const { rows } = await this.pool.query<{ workspace_id: string; amount_usd: string }>(
      'SELECT workspace_id, amount_usd FROM workspace_wallet_holds WHERE hold_id = $1',
      [holdId],
    );
    return rows[0] ? { workspaceId: rows[0].workspace_id, amountUsd: rows[0].amount_usd } : null;
  }

  async findMany(
    holdIds: readonly string[],
  ): Promise<Map<string, { workspaceId: string; amountUsd: string }>> {
    if (holdIds.length === 0) return new Map();
    const { rows } = await this.pool.query<{ hold_id: string; workspace_id: string; amount_usd: string }>(
      'SELECT hold_id, workspace_id, amount_usd FROM workspace_wallet_holds WHERE hold_id = ANY($1::text[])',
      [holdIds],
    );
    return new Map(rows.map((r) => [r.hold_id, { workspaceId: r.workspace_id, amountUsd: r.amount_usd }]));
  }

  async expired(now: string, limit: number) {
    const { rows } = await this.pool.query<{ hold_id: string; workspace_id: string; amount_usd: string }>(
      `SELECT hold_id, workspace_id, amount_usd FROM workspace_wallet_holds
       WHERE status = 'active' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => ({ holdId: r.hold_id, workspaceId: r.workspace_id, amountUsd: r.amount_usd }));
  }

  async purgeClosed(now: string, days: number): Promise<void> {
    await this.pool.query(
      `DELETE FROM workspace_wallet_holds WHERE status <> 'active'
       AND closed_at < $1::timestamptz - make_interval(days => $2)`,
      [now, days],
    );
  }
}
