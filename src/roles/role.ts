import type * as grpc from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { AnalyticsStore } from '../analytics/port.js';
import type { Config } from '../config/config.js';
import type { Bus } from '../events/bus.js';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import type { ApiKeyCache } from '../gateway/auth/api-key-cache.js';
import type { CompletedRequest } from '../gateway/completed.js';
import type { HealthRegistry } from '../lib/health.js';
import type { ObjectStore } from '../objects/port.js';

/** Every role `svc serve --roles` knows (ARCHITECTURE.md "One codebase, one CLI, several roles"). */
export const ROLE_NAMES = [
  'gateway',
  'control-plane',
  'auth',
  'query',
  'trace-ingest',
  'ingest',
  'projector',
  'audit',
  'policy',
  'console',
] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

/** What the composition root hands each role: ports, config and the process's shared registries. */
export interface RoleContext {
  config: Config;
  /**
   * This process's own files, which no other process may share (the gateway's spool and request
   * journal): the data dir, or a worker's directory under it (cli/workers.ts).
   */
  processDir: string;
  databaseUrl: string;
  pool: Pool;
  eventStore: EventStore;
  /** NATS JetStream when SVC_NATS_URL is set, otherwise the Postgres-table bus. */
  bus: Bus;
  /**
   * Analytics: opened when ingest or query runs in this process, or for the gateway's vector stores
   * (the data process's engine, or SVC_CLICKHOUSE_URL). Objects: for the data roles and the gateway
   * (/v1/files).
   */
  analytics: AnalyticsStore | null;
  objects: ObjectStore | null;
  logger: Logger;
  metrics: Registry;
  health: HealthRegistry;
  adminToken: string;
  /** SVC_PLATFORM_ADMINS: users whose console sessions act as the platform administrator. */
  platformAdmins: ReadonlySet<string>;
  masterKey: Buffer;
  /** Every role of this `svc serve`, its data process's included. */
  roles: readonly RoleName[];
  /**
   * Roles served here whose background work (consumers, sealers) runs in the data process instead
   * (cli/data-process.ts SPLIT_ROLES): such a role mounts its routes and starts no worker here.
   */
  backgroundElsewhere: ReadonlySet<RoleName>;
  /** One per process, shared by the roles that verify API keys; `start()` is idempotent. */
  apiKeys: ApiKeyCache;
  /** OpenTelemetry export, when the OTEL_EXPORTER_OTLP_* variables ask for it (telemetry.ts). */
  telemetry?: Telemetry | null;
}

export interface Role {
  name: RoleName;
  /** Loads what the role needs before any request arrives (caches, snapshots). */
  prepare?(): Promise<void> | void;
  /** Rewrites a request's URL before routing (an alias such as the console's /api/query). */
  rewriteUrl?(url: string): string;
  /** Registers the role's HTTP routes (a fastify plugin scope). */
  http?(app: FastifyInstance): Promise<void> | void;
  /** Adds the role's gRPC services. */
  grpc?(server: grpc.Server): void;
  /** Starts background work (consumers, projectors); runs after the servers listen. */
  start?(): Promise<void> | void;
  /** Stops background work; called in reverse start order during shutdown. */
  stop?(): Promise<void> | void;
}

export type RoleFactory = (ctx: RoleContext) => Role | Promise<Role>;

/**
 * The service's own OpenTelemetry export (telemetry.ts loads it only when the OTEL_EXPORTER_OTLP_*
 * variables ask for it; telemetry-otel.ts is the implementation).
 */
export interface Telemetry {
  /** Server spans and `http.server.request.duration` for every route of the app. */
  instrumentHttp(app: FastifyInstance): void;
  /** The bus, with a producer span per publish and a consumer span per delivery. */
  traceBus(bus: Bus): Bus;
  /** Client spans for the pool's queries made inside a traced operation (a request, a delivery). */
  tracePool(pool: Pool, database: string): void;
  /** The gateway's model call of a finished request: its GenAI span and metrics. */
  onCompleted(completed: CompletedRequest): void;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}
