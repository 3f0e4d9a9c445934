import { ChdbAnalyticsStore, chdbPath } from '../analytics/chdb/store.js';
import { HttpAnalyticsStore } from '../analytics/http/store.js';
import { migrateClickHouse } from '../analytics/migrate.js';
import type { AnalyticsStore } from '../analytics/port.js';
import type { Config } from '../config/config.js';
import type { Bus } from '../events/bus.js';
import { NatsBus } from '../events/nats/bus.js';
import { PostgresBus } from '../events/postgres/bus.js';
import { describeError } from '../lib/errors.js';
import { FsObjectStore, objectsPath } from '../objects/fs-store.js';
import { CliError } from './output.js';
import { type Database, dataDirOf } from './runtime.js';

/**
 * The ports of ARCHITECTURE.md "Storage and the flow of data": the scale-out adapter when its URL
 * is set, otherwise the embedded default (issue 3 item 4).
 */

export const openBus = (config: Config, database: Database): Bus =>
  config.SVC_NATS_URL
    ? new NatsBus({ servers: config.SVC_NATS_URL })
    : new PostgresBus(database.pool, { connectionString: database.url });

/** ClickHouse over HTTP for SVC_CLICKHOUSE_URL, else chdb in the data dir; migrations applied. */
export const openAnalytics = async (config: Config): Promise<AnalyticsStore> => {
  let store: AnalyticsStore;
  try {
    store = config.SVC_CLICKHOUSE_URL
      ? await HttpAnalyticsStore.open({
          url: config.SVC_CLICKHOUSE_URL,
          database: 'svc',
          createDatabase: true,
        })
      : await ChdbAnalyticsStore.open({
          path: chdbPath(dataDirOf(config)),
          database: 'svc',
          createDatabase: true,
        });
  } catch (err) {
    throw new CliError(
      `cannot open analytics (${config.SVC_CLICKHOUSE_URL ? 'ClickHouse over HTTP' : 'embedded chdb'}): ${describeError(err)}`,
    );
  }
  try {
    await migrateClickHouse(store);
  } catch (err) {
    await store.close();
    throw new CliError(`analytics migrations failed: ${describeError(err)}`);
  }
  return store;
};

export const openObjects = (config: Config): FsObjectStore =>
  new FsObjectStore(objectsPath(dataDirOf(config)));
