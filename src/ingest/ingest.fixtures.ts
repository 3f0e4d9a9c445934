import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { ChdbAnalyticsStore } from '../analytics/chdb/store.js';
import { migrateClickHouse } from '../analytics/migrate.js';
import { AnalyticsError, type AnalyticsStore } from '../analytics/port.js';
import { type Bus, BusUnavailableError } from '../events/bus.js';
import { sampleDraft } from '../events/envelopes/envelopes.fixtures.js';
import type { RequestCompletedDraft } from '../events/envelopes/record.js';
import { FsObjectStore } from '../objects/fs-store.js';
import { IngestConsumer, type IngestConsumerOptions } from './consumer.js';
import { type IngestMetrics, ingestMetrics } from './metrics.js';

/** Test scaffolding for the ingest consumer: real engines, with failures injected around them. */

/** chdb binds one data folder per process: one engine per test file, one database per scenario. */
export const sharedChdb = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-ingest-chdb-'));
  const admin = await ChdbAnalyticsStore.open({ path: dir });
  let n = 0;
  return {
    dir,
    open: async (): Promise<ChdbAnalyticsStore> => {
      const store = await ChdbAnalyticsStore.open({
        path: dir,
        database: `ingest_${++n}`,
        createDatabase: true,
      });
      await migrateClickHouse(store);
      return store;
    },
    close: async () => {
      await admin.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
};

/** Inserts fail while `failing()` says so, the way a ClickHouse server that is down fails them. */
export const flakyAnalytics = (inner: AnalyticsStore, failing: () => boolean): AnalyticsStore => ({
  get adapter() {
    return inner.adapter;
  },
  get database() {
    return inner.database;
  },
  insert: async (table, rows) => {
    if (failing()) throw new AnalyticsError('unavailable', `injected: ${table} is unreachable`);
    await inner.insert(table, rows);
  },
  query: (sql, params) => inner.query(sql, params),
  command: (sql, params) => inner.command(sql, params),
  health: () => inner.health(),
  close: async () => {},
});

/**
 * Request rows are acknowledged and silently not stored while `dropping()` says so: the suppressed
 * write the durability read-back exists to catch.
 */
export const droppingAnalytics = (inner: AnalyticsStore, dropping: () => boolean): AnalyticsStore => ({
  ...flakyAnalytics(inner, () => false),
  insert: async (table, rows) => {
    if (table === 'requests' && dropping()) return;
    await inner.insert(table, rows);
  },
});

/** Publishes on svc.audit.* fail while `failing()` says so; everything else passes through. */
export const auditFailingBus = (inner: Bus, failing: () => boolean): Bus => ({
  get adapter() {
    return inner.adapter;
  },
  ensureStreams: () => inner.ensureStreams(),
  publish: async (subject, data, options) => {
    if (subject.startsWith('svc.audit.') && failing())
      throw new BusUnavailableError('injected: audit publish refused');
    return inner.publish(subject, data, options);
  },
  publishMany: async (messages) => {
    if (messages.some((m) => m.subject.startsWith('svc.audit.')) && failing())
      throw new BusUnavailableError('injected: audit publish refused');
    return inner.publishMany(messages);
  },
  consume: (name, filter, handler, options) => inner.consume(name, filter, handler, options),
  health: () => inner.health(),
  close: () => inner.close(),
});

/**
 * A bus that refuses (not as unavailable: as a broker would refuse a bad message) every audit
 * message whose id `refused` picks, and any batch holding one.
 */
export const auditRefusingBus = (inner: Bus, refused: (messageId: string) => boolean): Bus => ({
  get adapter() {
    return inner.adapter;
  },
  ensureStreams: () => inner.ensureStreams(),
  publish: async (subject, data, options) => {
    if (subject.startsWith('svc.audit.') && refused(options.messageId))
      throw new Error('injected: audit message refused');
    return inner.publish(subject, data, options);
  },
  publishMany: async (messages) => {
    if (messages.some((m) => m.subject.startsWith('svc.audit.') && refused(m.messageId)))
      throw new Error('injected: audit batch refused');
    return inner.publishMany(messages);
  },
  consume: (name, filter, handler, options) => inner.consume(name, filter, handler, options),
  health: () => inner.health(),
  close: () => inner.close(),
});

/** A counter's value summed over the series matching `labels`. */
export const metricValue = async (
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> => {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
};

/** Sum of a counter over all its labels: the suppressed-writes total must stay 0 everywhere. */
export const suppressedWrites = (registry: Registry) =>
  metricValue(registry, 'svc_ingest_clickhouse_suppressed_writes_total');

export const waitFor = async (check: () => Promise<boolean>, timeoutMs: number, what: string) => {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

export const draftFor = (runId: string, i: number, overrides: Partial<RequestCompletedDraft> = {}) =>
  sampleDraft({
    request_id: `req_${runId}_${i}`,
    org_id: `org_${runId}_${i % 3}`,
    workspace_id: `wsp_${runId}`,
    ...overrides,
  });

export interface Scenario {
  registry: Registry;
  metrics: IngestMetrics;
  objects: FsObjectStore;
  consumer(options?: Partial<IngestConsumerOptions>): Promise<IngestConsumer>;
  cleanup(): Promise<void>;
}

/** One consumer name, metrics registry and object-store root per scenario. */
export const scenario = async (bus: Bus, analytics: AnalyticsStore, name: string): Promise<Scenario> => {
  const root = await mkdtemp(join(tmpdir(), 'svc-ingest-objects-'));
  const registry = new Registry();
  const metrics = ingestMetrics(registry);
  const objects = new FsObjectStore(root);
  const started: IngestConsumer[] = [];
  return {
    registry,
    metrics,
    objects,
    consumer: async (options = {}) => {
      const c = new IngestConsumer({
        bus,
        analytics,
        objects,
        metrics,
        consumerName: name,
        ackWaitMs: 2_000,
        maxDeliveries: 20,
        flushIntervalMs: 50,
        retry: { attempts: 2, initialMs: 20, maxMs: 50 },
        ...options,
      });
      await c.start();
      started.push(c);
      return c;
    },
    cleanup: async () => {
      for (const c of started) await c.stop().catch(() => {});
      await rm(root, { recursive: true, force: true });
    },
  };
};
