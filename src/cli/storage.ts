import type { AnalyticsStore } from '../analytics/port.js';
import type { Config } from '../config/config.js';
import type { Bus } from '../events/bus.js';
import { describeError } from '../lib/errors.js';
import { openObjectStore } from '../objects/open.js';
import type { ObjectStore } from '../objects/port.js';
import { CliError } from './output.js';
import { type Database, dataDirOf } from './runtime.js';

/**
 * The ports of ARCHITECTURE.md "Storage and the flow of data": the scale-out adapter when its URL
 * is set, otherwise the embedded default. Each adapter's modules load only when
 * it is the one chosen (the NATS client, chdb's native engine and the ClickHouse HTTP client are
 * large): a process carries only what it opens.
 */

/**
 * What the NATS bus takes from the configuration: its stream and subject names, its replicas. A
 * stream prefix of its own alone would not keep a deployment apart (two streams may not take the
 * same subjects, and a publish lands in whichever has them): without SVC_NATS_SUBJECT_PREFIX, one
 * is made from it (`DEPLOYA_` -> `deploya`).
 */
export const natsBusOptions = (config: Config) => {
  const stream = config.SVC_NATS_STREAM_PREFIX;
  const subject =
    config.SVC_NATS_SUBJECT_PREFIX ??
    (stream === 'SVC_' ? undefined : stream.toLowerCase().replace(/_+$/, '') || undefined);
  return {
    streamNamePrefix: stream,
    replicas: config.SVC_NATS_REPLICAS,
    ...(subject ? { subjectPrefix: subject } : {}),
  };
};

export const openBus = async (config: Config, database: Database): Promise<Bus> =>
  config.SVC_NATS_URL
    ? new (await import('../events/nats/bus.js')).NatsBus({
        servers: config.SVC_NATS_URL,
        ...natsBusOptions(config),
      })
    : new (await import('../events/postgres/bus.js')).PostgresBus(database.pool, {
        connectionString: database.url,
      });

/** The analytics database of the service, on either adapter. */
export const ANALYTICS_DATABASE = 'svc';

/**
 * ClickHouse over HTTP for SVC_CLICKHOUSE_URL, else chdb in the data dir; migrations applied, as
 * cluster DDL when SVC_CLICKHOUSE_DDL=cluster.
 */
export const openAnalytics = async (config: Config): Promise<AnalyticsStore> => {
  const cluster = config.SVC_CLICKHOUSE_DDL === 'cluster';
  if (cluster && !config.SVC_CLICKHOUSE_URL)
    throw new CliError(
      'SVC_CLICKHOUSE_DDL=cluster needs a ClickHouse server: set SVC_CLICKHOUSE_URL ' +
        '(the embedded chdb engine is one process, with no cluster)',
    );
  let store: AnalyticsStore;
  try {
    if (config.SVC_CLICKHOUSE_URL) {
      const { HttpAnalyticsStore } = await import('../analytics/http/store.js');
      store = await HttpAnalyticsStore.open({
        url: config.SVC_CLICKHOUSE_URL,
        database: ANALYTICS_DATABASE,
        createDatabase: true,
        ...(cluster
          ? {
              createDatabaseOnCluster: config.SVC_CLICKHOUSE_CLUSTER,
              settings: {
                // An insert returns once the shards have its rows: ingest reads its batch back
                // (SPEC 6) before it acknowledges, which a queued insert would fail.
                insert_distributed_sync: 1,
                // `x IN (SELECT ... FROM <Distributed>)` runs the subquery across the cluster.
                distributed_product_mode: 'global',
              },
            }
          : {}),
      });
    } else {
      const { ChdbAnalyticsStore, chdbPath } = await import('../analytics/chdb/store.js');
      store = await ChdbAnalyticsStore.open({
        path: chdbPath(dataDirOf(config)),
        database: ANALYTICS_DATABASE,
        createDatabase: true,
      });
    }
  } catch (err) {
    if (config.SVC_CLICKHOUSE_URL)
      throw new CliError(`cannot open analytics (ClickHouse over HTTP): ${describeError(err)}`);
    // chdb is an optional dependency: an install without it, or a platform it
    // does not ship for (musl, Windows), keeps analytics on a ClickHouse server instead.
    throw new CliError(
      `cannot open analytics (embedded chdb): ${describeError(err)}; ` +
        'set SVC_CLICKHOUSE_URL to use a ClickHouse server instead',
    );
  }
  try {
    await (await import('../analytics/migrate.js')).migrateClickHouse(store, {
      ddl: config.SVC_CLICKHOUSE_DDL,
      cluster: config.SVC_CLICKHOUSE_CLUSTER,
    });
  } catch (err) {
    await store.close();
    throw new CliError(`analytics migrations failed: ${describeError(err)}`);
  }
  if (!cluster) return store;
  const { clusterTarget } = await import('../analytics/cluster-ddl.js');
  const { clusterStore } = await import('../analytics/cluster-store.js');
  return clusterStore(store, clusterTarget(store.database, config.SVC_CLICKHOUSE_CLUSTER));
};

/** The object store SVC_OBJECT_STORE names: files under the data dir, or an S3-compatible bucket. */
export const openObjects = (config: Config): ObjectStore => {
  try {
    return openObjectStore(config, dataDirOf(config));
  } catch (err) {
    throw new CliError(describeError(err));
  }
};
