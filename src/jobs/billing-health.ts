import type { Logger } from 'pino';
import type { AnalyticsStore } from '../analytics/port.js';
import { setQuarantine } from '../commands/registry/handler.js';
import type { EventStore } from '../events/event-store.js';
import { newId } from '../lib/ids.js';
import { jobRunner } from './runner.js';

/** Billing outcomes of one endpoint in the evaluation window (served requests only). */
export interface EndpointOutcomes {
  lane: string;
  model: string;
  priced: number;
  failed: number;
}

export interface BillingHealthThresholds {
  minFailures: number;
  minRatioBps: number;
  action: 'quarantine' | 'allow';
  windowMinutes: number;
}

/** SPEC 3: failures reach both the count and the ratio of priced plus failed requests. */
export const breaches = (o: EndpointOutcomes, t: BillingHealthThresholds): boolean =>
  o.failed >= t.minFailures &&
  BigInt(o.failed) * 10_000n >= BigInt(t.minRatioBps) * BigInt(o.failed + o.priced);

/** The endpoints to quarantine; none when the action is `allow`. */
export const evaluateBillingHealth = (
  outcomes: readonly EndpointOutcomes[],
  t: BillingHealthThresholds,
): EndpointOutcomes[] => (t.action === 'allow' ? [] : outcomes.filter((o) => breaches(o, t)));

/** Where the outcomes come from: the request rows of the analytics store, since `sinceMs`. */
export type OutcomeSource = (sinceMs: number) => Promise<EndpointOutcomes[]>;

/**
 * One evaluation: read the window's outcomes, quarantine every endpoint that breaches (an endpoint
 * already quarantined is a no-op). Returns what it quarantined.
 */
export const runBillingHealth = async (deps: {
  store: EventStore;
  source: OutcomeSource;
  thresholds: BillingHealthThresholds;
  now: Date;
}): Promise<EndpointOutcomes[]> => {
  const { thresholds: t } = deps;
  const outcomes = await deps.source(deps.now.getTime() - t.windowMinutes * 60_000);
  const breached = evaluateBillingHealth(outcomes, t);
  for (const o of breached) {
    await setQuarantine(
      deps.store,
      {
        type: 'QuarantineEndpoint',
        data: {
          lane: o.lane,
          model: o.model,
          failures: o.failed,
          total: o.failed + o.priced,
          window_minutes: t.windowMinutes,
          min_failures: t.minFailures,
          min_ratio_bps: t.minRatioBps,
        },
      },
      { commandId: newId('cmd'), actor: 'job:billing-health', now: deps.now.toISOString() },
    );
  }
  return breached;
};

/**
 * Outcomes from the analytics request rows: served requests by lane and model,
 * priced or failed billing, since `sinceMs`; FINAL so a redelivered row counts once.
 */
export const analyticsOutcomeSource =
  (store: AnalyticsStore): OutcomeSource =>
  async (sinceMs) => {
    const rows = await store.query<{ lane: string; model: string; priced: string; failed: string }>(
      `SELECT provider AS lane, model_served AS model,
              countIf(billing_status = 'priced') AS priced, countIf(billing_status = 'failed') AS failed
       FROM requests FINAL
       WHERE status = 'success' AND provider IS NOT NULL AND model_served IS NOT NULL
         AND finished_at >= fromUnixTimestamp64Milli({since:Int64})
       GROUP BY lane, model`,
      { since: sinceMs },
    );
    return rows.map((r) => ({
      lane: r.lane,
      model: r.model,
      priced: Number(r.priced),
      failed: Number(r.failed),
    }));
  };

export const BILLING_HEALTH_TASK = 'billing_health';

/** The periodic evaluator (SPEC 3): every minute, on graphile-worker, from the analytics rows. */
export const billingHealthJobs = (deps: {
  connectionString: string;
  store: EventStore;
  analytics: AnalyticsStore;
  thresholds: BillingHealthThresholds;
  logger?: Logger;
}) =>
  jobRunner({
    name: 'billing-health',
    connectionString: deps.connectionString,
    crontab: `* * * * * ${BILLING_HEALTH_TASK}`,
    taskList: {
      [BILLING_HEALTH_TASK]: async () => {
        const hit = await runBillingHealth({
          store: deps.store,
          source: analyticsOutcomeSource(deps.analytics),
          thresholds: deps.thresholds,
          now: new Date(),
        });
        for (const o of hit)
          deps.logger?.warn(
            { endpoint: `${o.lane}/${o.model}`, ...o },
            'endpoint quarantined by billing health',
          );
      },
    },
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
