import type { SpendCapLevel } from '../commands/spend-cap/decider.js';
import { ServiceError } from '../lib/errors.js';
import { formatUsd, parseUsd, type Usd } from '../lib/money.js';
import type { ApiKeyIdentity } from './auth/api-key-cache.js';

/**
 * The gateway's spend-cap cache (SPEC 4.8, 8: monthly spend caps). The request path asks `refusal(key)`:
 * at most three Map lookups in memory, and none at all while no target is over its cap. Everything
 * else happens off the request path, in a refresh every `refreshMs`: the caps come from the control
 * plane's read model, the month-to-date spend of the capped orgs from QueryService
 * MonthlyUsageSnapshot (in process when the query code runs here, over gRPC otherwise), and the set
 * of targets at or over their cap is rebuilt and swapped whole.
 *
 * Staleness: a cap change applies within one refresh; spend within one refresh plus the ingest lag
 * (spend counts only requests ingest has written). So the cap is a soft limit: concurrent requests
 * admitted before the refresh that sees the crossing can overshoot it.
 *
 * When a refresh fails, the last known value of that input is kept:
 * - caps: the last caps stay in force;
 * - spend: the last snapshot stays in force *within the same UTC month*. Spend only grows within a
 *   month, so a stale snapshot is a lower bound: a refusal it yields is still right, and a target
 *   it lets through may in fact be over its cap (fail open). When the month has turned, a stale
 *   snapshot describes the previous month and is dropped: every target is let through until a
 *   snapshot of the new month arrives (fail open).
 * Failing open is deliberate: the cap is a budget guard, not a funds guard (the wallet escrow hold
 * is, and it fails closed); an analytics outage must not become a gateway outage.
 */

export interface SpendCap {
  level: SpendCapLevel;
  target_id: string;
  org_id: string;
  monthly_usd: string;
}

export interface MonthlySpend {
  /** `YYYY-MM` (UTC) the entries cover. */
  month: string;
  entries: readonly { scope: SpendCapLevel; id: string; spend_usd: string }[];
}

export interface SpendCapSources {
  caps(): Promise<readonly SpendCap[]>;
  /** Month-to-date spend of the given orgs, for `month` (`YYYY-MM`, UTC). */
  spend(month: string, orgIds: readonly string[]): Promise<MonthlySpend>;
}

interface Over {
  level: SpendCapLevel;
  cap: string;
  spent: string;
  month: string;
}

export interface SpendCapStatus {
  caps: number;
  over: number;
  /** Month of the spend in force, or null when none is. */
  month: string | null;
  /** When the spend in force was read (ms since the epoch), or null. */
  spendReadAt: number | null;
  lastError: unknown;
}

const LEVEL_NAME: Record<SpendCapLevel, string> = {
  org: 'organization',
  project: 'project',
  api_key: 'API key',
};

export const monthOf = (at: Date): string => at.toISOString().slice(0, 7);

export class SpendCapCache {
  private overKeys = new Map<string, Over>();
  private overProjects = new Map<string, Over>();
  private overOrgs = new Map<string, Over>();
  private caps: readonly SpendCap[] = [];
  private spend: { month: string; byTarget: Map<string, Usd>; readAt: number } | null = null;
  private lastError: unknown = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly sources: SpendCapSources,
    private readonly options: {
      refreshMs: number;
      now?: () => Date;
      onError?: (err: unknown, what: 'caps' | 'spend') => void;
    },
  ) {}

  /** The request path: a refusal in the catalogue's terms when the key, its project or its org is over. */
  refusal(key: ApiKeyIdentity): ServiceError | null {
    if (this.overKeys.size === 0 && this.overProjects.size === 0 && this.overOrgs.size === 0) return null;
    const over =
      this.overKeys.get(key.apiKeyId) ?? this.overProjects.get(key.projectId) ?? this.overOrgs.get(key.orgId);
    if (!over) return null;
    return new ServiceError(
      'spend_cap_exceeded',
      `the monthly spend cap of this ${LEVEL_NAME[over.level]} is reached: ${over.spent} USD spent in ${over.month} (UTC) against a cap of ${over.cap} USD; raise or clear the cap, or wait for the next month`,
    );
  }

  /** First refresh, then one every `refreshMs` (never overlapping). A failing first refresh fails open. */
  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick();
    }, this.options.refreshMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      await this.refresh();
    } catch (err) {
      // Only a corrupt cap gets here (failing inputs are handled inside): the last verdicts stay.
      this.lastError = err;
      this.options.onError?.(err, 'caps');
    }
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Reads both inputs, keeping the last known value of a failing one (see above), and swaps the verdicts. */
  async refresh(): Promise<void> {
    const now = (this.options.now ?? (() => new Date()))();
    const month = monthOf(now);
    this.lastError = null;
    try {
      this.caps = await this.sources.caps();
    } catch (err) {
      this.lastError = err;
      this.options.onError?.(err, 'caps');
    }
    const orgIds = [...new Set(this.caps.map((c) => c.org_id))].sort();
    if (orgIds.length === 0) this.spend = null;
    else {
      try {
        const snap = await this.sources.spend(month, orgIds);
        const byTarget = new Map<string, Usd>();
        for (const e of snap.entries) byTarget.set(`${e.scope}:${e.id}`, parseUsd(e.spend_usd));
        this.spend = { month: snap.month, byTarget, readAt: now.getTime() };
      } catch (err) {
        this.lastError = err;
        this.options.onError?.(err, 'spend');
      }
    }
    // A snapshot of another month says nothing about this one.
    if (this.spend && this.spend.month !== month) this.spend = null;
    this.rebuild();
  }

  private rebuild(): void {
    const keys = new Map<string, Over>();
    const projects = new Map<string, Over>();
    const orgs = new Map<string, Over>();
    const spend = this.spend;
    if (spend) {
      for (const cap of this.caps) {
        const limit = parseUsd(cap.monthly_usd);
        // No entry: nothing spent this month yet (a cap of 0 is reached at 0).
        const spent = spend.byTarget.get(`${cap.level}:${cap.target_id}`) ?? (0n as Usd);
        if (spent < limit) continue;
        const over = { level: cap.level, cap: cap.monthly_usd, spent: formatUsd(spent), month: spend.month };
        (cap.level === 'api_key' ? keys : cap.level === 'project' ? projects : orgs).set(cap.target_id, over);
      }
    }
    this.overKeys = keys;
    this.overProjects = projects;
    this.overOrgs = orgs;
  }

  status(): SpendCapStatus {
    return {
      caps: this.caps.length,
      over: this.overKeys.size + this.overProjects.size + this.overOrgs.size,
      month: this.spend?.month ?? null,
      spendReadAt: this.spend?.readAt ?? null,
      lastError: this.lastError,
    };
  }
}
