import type { FastifyInstance } from 'fastify';
import { type Logger, pino } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ChannelEngine } from '../analytics/chdb/channel.js';
import type { AnalyticsStore } from '../analytics/port.js';
import { type Config, platformAdminEmails } from '../config/config.js';
import { bindGrpc, createGrpcServer, type GrpcServer } from '../edges/grpc/server.js';
import { createHttpServer, type ServedRoute } from '../edges/http/server.js';
import type { Bus } from '../events/bus.js';
import { PostgresEventStore } from '../events/postgres/event-store.js';
import { ApiKeyCache } from '../gateway/auth/api-key-cache.js';
import { HealthRegistry } from '../lib/health.js';
import { hopValue } from '../lib/hop.js';
import { VERSION } from '../lib/version.js';
import type { ObjectStore } from '../objects/port.js';
import { addOwnListener, configureUpstreams } from '../providers/destinations.js';
import { ROLE_FACTORIES } from '../roles/index.js';
import { ROLE_NAMES, type Role, type RoleName } from '../roles/role.js';
import { startTelemetry } from '../roles/telemetry.js';
import { backgroundElsewhere, type DataProcess, splitRoles, startDataProcess } from './data-process.js';
import { CliError } from './output.js';
import { type Database, dataDirOf, loadSecrets, openDatabase, ownHttpUrl, type Secrets } from './runtime.js';
import { ANALYTICS_DATABASE, openAnalytics, openBus, openObjects } from './storage.js';

export interface RunningService {
  /** Empty in a process that serves no port (a data process). */
  httpUrl: string;
  httpPort: number;
  grpcPort: number;
  /** Every role this service runs, its data process's included. */
  roles: RoleName[];
  /** The roles run by the data process (cli/data-process.ts), and its pid; empty when none. */
  dataProcess: { roles: RoleName[]; pid: number | null };
  notBuilt: RoleName[];
  database: Database;
  secrets: Secrets;
  logger: Logger;
  /** The analytics store this process opened (null when none); a data process shares its engine. */
  analytics: AnalyticsStore | null;
  health: HealthRegistry;
  metrics: Registry;
  /** Every HTTP route this process serves, by role (empty in a data process). */
  routes: ServedRoute[];
  stop(): Promise<void>;
}

/** The data roles: each reads or writes stored objects. */
export const DATA_ROLES: readonly RoleName[] = ['ingest', 'query', 'trace-ingest', 'audit'];
/** Of those, the roles that read or write analytics rows (trace-ingest only publishes and stores payloads; audit keeps its log in PostgreSQL). */
const ANALYTICS_ROLES: readonly RoleName[] = ['ingest', 'query'];
/** Roles that open the object store: the data roles, and the gateway for /v1/files (SPEC 4.1). */
const OBJECT_ROLES: readonly RoleName[] = [...DATA_ROLES, 'gateway'];

export const parseRoles = (value: string | undefined): RoleName[] => {
  if (!value || value === 'all') return [...ROLE_NAMES];
  const names = value
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(ROLE_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0)
    throw new CliError(`unknown role ${unknown.join(', ')} (roles: ${ROLE_NAMES.join(', ')})`);
  return [...new Set(names)] as RoleName[];
};

/**
 * The composition root of `svc serve`: opens the ports, builds each requested role, serves HTTP and
 * gRPC, starts background work, and returns a handle whose stop() drains everything in order.
 *
 * `signal` aborts start-up (a SIGTERM before the service is up): start-up stops at
 * its next step and closes what it opened, the embedded PostgreSQL included, then rejects with the
 * signal's reason. Every failure after the database opened unwinds the same way.
 */
/** The database name of a PostgreSQL URL, for `db.namespace`. */
const databaseName = (url: string): string => {
  try {
    return decodeURIComponent(new URL(url).pathname.slice(1)) || 'postgres';
  } catch {
    return 'postgres';
  }
};

export const startService = async (
  config: Config,
  options: {
    roles: RoleName[];
    logger?: Logger;
    signal?: AbortSignal;
    /** False in a data process: no HTTP or gRPC server; the parent serves its health and metrics. */
    listen?: boolean;
    /** Prefixes Node's default metrics, so a data process's do not collide with its parent's. */
    defaultMetricsPrefix?: string;
    /**
     * In a worker of `svc serve --workers` (cli/workers.ts): the data roles run in the data process
     * the supervisor owns, reached through it. They are named beside this process's roles, never
     * started or stopped here; `roles` then holds only this process's own.
     */
    remoteData?: { roles: RoleName[]; process: DataProcess | null };
    /** This process's own files (RoleContext.processDir); the data dir unless given. */
    processDir?: string;
    /** What /metrics says of this process, from its registry (a worker adds its siblings'). */
    ownMetrics?: (registry: Registry) => Promise<string>;
  },
): Promise<RunningService> => {
  const listen = options.listen !== false;
  const logger = options.logger ?? pino({ level: config.SVC_LOG_LEVEL, base: { svc: VERSION } });
  const checkpoint = () => options.signal?.throwIfAborted();
  const secrets = await loadSecrets(config);
  // Every upstream call carries this deployment's hop mark; tenant origins are checked when dialled.
  configureUpstreams({
    allowPrivateDestinations: config.SVC_TENANT_PRIVATE_DESTINATIONS === 'allow',
    hop: hopValue(secrets.masterKey),
  });
  checkpoint();
  const database = await openDatabase(config, {
    application: 'svc-serve',
    poolSize: 12,
    onLog: (line) => logger.debug({ postgres: String(line).trim() }),
  });
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics, prefix: options.defaultMetricsPrefix ?? '' });
  const health = new HealthRegistry();
  health.register('postgres', async () => {
    await database.pool.query('SELECT 1');
  });
  const eventStore = new PostgresEventStore(database.pool, database.url);
  const apiKeys = new ApiKeyCache(eventStore);
  let bus: Bus | null = null;
  let analytics: AnalyticsStore | null = null;
  let objects: ObjectStore | null = null;
  const roles: Role[] = [];
  const notBuilt: RoleName[] = [];
  let app: FastifyInstance | null = null;
  let grpcServer: GrpcServer | null = null;
  let dataProcess: DataProcess | null = null;
  const started: Role[] = [];
  const routes: ServedRoute[] = [];
  const remote = options.remoteData;
  const split = remote
    ? { here: options.roles, child: remote.roles }
    : splitRoles(options.roles, config.SVC_SERVE_DATA_PROCESS);
  // A split role (data-process.ts SPLIT_ROLES) is named on both sides.
  const childOnly = split.child.filter((r) => !split.here.includes(r));
  const allRoles = [...split.here, ...childOnly];
  const telemetry = await startTelemetry(process.env, { roles: split.here, logger });
  telemetry?.tracePool(database.pool, databaseName(database.url));

  // Everything that holds a PostgreSQL connection closes before the database does: the embedded
  // server is stopped last, so no session of ours sees it go.
  const stop = async () => {
    // gRPC health probes see NOT_SERVING from the first moment of the drain (SPEC 4.8).
    grpcServer?.drain();
    await app?.close().catch((err: unknown) => logger.error({ err }, 'http close failed'));
    await new Promise<void>((resolve) => {
      if (!grpcServer) return resolve();
      grpcServer.server.tryShutdown(() => resolve());
    });
    for (const role of [...started].reverse()) {
      await Promise.resolve(role.stop?.()).catch((err: unknown) =>
        logger.error({ err, role: role.name }, 'role stop failed'),
      );
    }
    // After this process's requests drained (their records are on the bus), before the database.
    await dataProcess?.stop().catch((err: unknown) => logger.error({ err }, 'data process stop failed'));
    await apiKeys.stop();
    await bus?.close().catch(() => {});
    await analytics?.close().catch(() => {});
    await eventStore.close();
    await database.close();
    await telemetry?.shutdown().catch((err: unknown) => logger.warn({ err }, 'telemetry shutdown failed'));
  };

  try {
    checkpoint();
    const openedBus = await openBus(config, database);
    bus = openedBus;
    health.register('bus', async () => {
      const h = await openedBus.health();
      if (!h.ok) throw new Error(`${h.adapter}: ${h.error ?? 'unavailable'}`);
    });
    // A bus that is down at start is not fatal: publishers spool or retry, /healthz shows it.
    await openedBus
      .ensureStreams()
      .catch((err: unknown) => logger.warn({ err }, 'bus streams not ensured at start; will retry on use'));
    checkpoint();
    if (remote) {
      const given = remote.process;
      dataProcess = given;
      if (given) health.register('data-process', () => given.health());
    } else if (split.child.length > 0) {
      const started = await startDataProcess({
        config,
        databaseUrl: database.url,
        roles: split.child,
        logger,
        signal: options.signal,
      });
      dataProcess = started;
      health.register('data-process', () => started.health());
    }
    checkpoint();
    if (split.here.some((r) => ANALYTICS_ROLES.includes(r))) {
      const store = await openHereAnalytics(config, dataProcess);
      analytics = store;
      health.register('analytics', async () => {
        const h = await store.health();
        if (!h.ok) throw new Error(`${h.adapter}: ${h.error ?? 'unavailable'}`);
      });
    } else if (split.here.includes('gateway')) {
      analytics = await openGatewayAnalytics(config, dataProcess, logger);
    }
    if (split.here.some((r) => OBJECT_ROLES.includes(r))) {
      const files = openObjects(config);
      objects = files;
      health.register('objects', async () => {
        const h = await files.health();
        if (!h.ok) throw new Error(h.error ?? 'unavailable');
      });
    }
    const ctx = {
      roles: allRoles,
      backgroundElsewhere: backgroundElsewhere(split),
      apiKeys,
      bus: telemetry ? telemetry.traceBus(openedBus) : openedBus,
      telemetry,
      analytics,
      objects,
      config,
      processDir: options.processDir ?? dataDirOf(config),
      databaseUrl: database.url,
      pool: database.pool,
      eventStore,
      logger,
      metrics,
      health,
      adminToken: secrets.adminToken,
      platformAdmins: platformAdminEmails(config),
      masterKey: secrets.masterKey,
    };

    for (const name of split.here) {
      checkpoint();
      const factory = ROLE_FACTORIES[name];
      if (factory) roles.push(await factory(ctx));
      else notBuilt.push(name);
    }
    for (const role of roles) {
      checkpoint();
      await role.prepare?.();
      started.push(role);
    }
    checkpoint();
    let httpPort = 0;
    let grpcPort = 0;
    if (listen) {
      const child = dataProcess;
      // The data process's roles are named beside this process's, and serve nothing here.
      const mounts = [...roles, ...childOnly.map((name) => ({ name }))];
      app = await createHttpServer({
        logger,
        metrics,
        health,
        roles: mounts,
        onRoute: (route) => routes.push(route),
        ...(telemetry ? { instrument: (server: FastifyInstance) => telemetry.instrumentHttp(server) } : {}),
        ...(child ? { moreMetrics: () => child.metrics() } : {}),
        ...(options.ownMetrics ? { ownMetrics: () => options.ownMetrics!(metrics) } : {}),
      });
      await app.listen({ host: config.SVC_HTTP_HOST, port: config.SVC_HTTP_PORT });
      const address = app.server.address();
      httpPort = typeof address === 'object' && address ? address.port : config.SVC_HTTP_PORT;
      // A tenant origin never dials this listener (the hop mark covers addresses it cannot know).
      if (typeof address === 'object' && address) addOwnListener(address.address, address.port);
      grpcServer = createGrpcServer({ health, roles: mounts, version: VERSION });
      grpcPort = await bindGrpc(grpcServer.server, config.SVC_HTTP_HOST, config.SVC_GRPC_PORT);
    }
    for (const role of roles) {
      checkpoint();
      await role.start?.();
    }
    checkpoint();
    return {
      httpUrl: listen ? ownHttpUrl(config.SVC_HTTP_HOST, httpPort) : '',
      httpPort,
      grpcPort,
      roles: [...roles.map((r) => r.name), ...childOnly],
      dataProcess: { roles: split.child, pid: dataProcess?.pid ?? null },
      notBuilt,
      database,
      secrets,
      logger,
      analytics,
      health,
      metrics,
      routes,
      stop,
    };
  } catch (err) {
    await stop();
    // A stop asked for during start-up is that, not the failure it caused (a child cut short).
    if (options.signal?.aborted) throw options.signal.reason;
    if (err instanceof CliError) throw err;
    const code = (err as { code?: string }).code;
    if (code === 'EADDRINUSE') throw new CliError(`port already in use: ${(err as Error).message}`);
    throw err;
  }
};

/**
 * The analytics store of a gateway without a data role beside it, for the vector stores' chunks
 * (SPEC 4.1): the engine its data process owns, or a ClickHouse server (SVC_CLICKHOUSE_URL). Never
 * an embedded engine of its own: chdb binds one data path per process, and chunks written there
 * would be seen by no other process. Serving chat does not depend on it: a server that cannot be
 * opened leaves the vector stores answering 503, and is logged.
 */
const openGatewayAnalytics = async (
  config: Config,
  child: DataProcess | null,
  logger: Logger,
): Promise<AnalyticsStore | null> => {
  if (!config.SVC_CLICKHOUSE_URL && !child?.engineVersion) return null;
  try {
    return await openHereAnalytics(config, child);
  } catch (err) {
    logger.error({ err }, 'analytics not opened: the vector stores API answers 503 until a restart');
    return null;
  }
};

/**
 * The analytics store of this process's own data roles: through the data process when it owns the
 * embedded engine (chdb binds one data path per process), otherwise opened here.
 */
const openHereAnalytics = async (config: Config, child: DataProcess | null): Promise<AnalyticsStore> => {
  if (!child?.engineVersion) return openAnalytics(config);
  const { ChdbAnalyticsStore } = await import('../analytics/chdb/store.js');
  const engine = new ChannelEngine(child.engineVersion);
  child.onChannel((channel) => engine.attach(channel));
  return ChdbAnalyticsStore.over(engine, ANALYTICS_DATABASE);
};
