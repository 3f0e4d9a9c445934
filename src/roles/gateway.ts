import { Gauge } from 'prom-client';
import { spendCaps } from '../commands/spend-cap/reads.js';
import { PostgresEscrow } from '../commands/wallet/postgres-escrow.js';
import { grpcPolicy } from '../edges/grpc/policy-client.js';
import { grpcMonthlySpend } from '../edges/grpc/query-client.js';
import type { GatewayEdgeDeps } from '../edges/http/gateway/client.js';
import { refuseOwnHops } from '../edges/http/gateway/loop.js';
import { registerGatewayRoutes } from '../edges/http/gateway/routes.js';
import { journalPath } from '../events/envelopes/journal.js';
import { RequestRecordPublisher } from '../events/envelopes/publish.js';
import { Files } from '../files/service.js';
import { FileStore } from '../files/store.js';
import { begunOf, envelopeOf } from '../gateway/envelope.js';
import { inProcessPolicy, RemotePolicy } from '../gateway/policy.js';
import { RateLimiter } from '../gateway/rate-limit.js';
import { RegistrySnapshotCache } from '../gateway/registry/index.js';
import type { PolicyPort } from '../gateway/scope.js';
import { SharedRateLimiter } from '../gateway/shared-rate-limit.js';
import { SnapshotCache } from '../gateway/snapshot-cache.js';
import { type MonthlySpend, SpendCapCache } from '../gateway/spend-caps.js';
import { tenancySource } from '../gateway/tenancy.js';
import { embedForTenant } from '../gateway/tenant-embeddings.js';
import { describeError } from '../lib/errors.js';
import { hopValue } from '../lib/hop.js';
import { policySnapshotSource } from '../projections/policy/reads.js';
import { anthropicAdapter } from '../providers/anthropic/adapter.js';
import { azureAdapter, azureGovAdapter } from '../providers/azure/adapter.js';
import { bedrockAdapter, bedrockGovAdapter } from '../providers/bedrock/adapter.js';
import type { Adapter } from '../providers/endpoint.js';
import { openAiAdapter } from '../providers/openai/adapter.js';
import type { ProviderAdapter } from '../providers/provider.js';
import { monthlyUsageSnapshot } from '../query/snapshot.js';
import { engineChunker, engineExtractor, engineFilters, engineIndex } from '../vector-stores/engine.js';
import { vectorStoresFileSearch } from '../vector-stores/file-search-port.js';
import { filesSource } from '../vector-stores/file-source.js';
import { AttachJobs } from '../vector-stores/jobs.js';
import type { Embedder } from '../vector-stores/ports.js';
import { VectorStores } from '../vector-stores/service.js';
import { VectorStoreTables } from '../vector-stores/store.js';
import { AttachWorker } from '../vector-stores/worker.js';
import { type GatewayMetrics, gatewayMetrics, recordMetrics } from './gateway-metrics.js';
import type { Role, RoleContext } from './role.js';

/** Adapters by registry adapter id; adding a provider touches this map only (STYLE.md rule 7). */
export const ADAPTERS: ReadonlyMap<Adapter, ProviderAdapter> = new Map<Adapter, ProviderAdapter>([
  ['openai', openAiAdapter],
  ['anthropic', anthropicAdapter],
  ['azure', azureAdapter],
  ['azure-gov', azureGovAdapter],
  ['bedrock', bedrockAdapter],
  ['bedrock-gov', bedrockGovAdapter],
]);

const SPEC_MESSAGE_CAP = 64 * 1024;
const FILE_SWEEP_MS = 60_000;

/**
 * Where the spend-cap cache reads month-to-date spend: a QueryService over gRPC when
 * SVC_GATEWAY_QUERY_GRPC_ENDPOINT names one, else the query code in this process when the
 * analytics store is open here (a gateway-only process may open it for the vector stores), else
 * nowhere (caps not enforced).
 */
const spendSource = (
  ctx: RoleContext,
): { spend(month: string, orgIds: readonly string[]): Promise<MonthlySpend>; close?(): void } | null => {
  const endpoint = ctx.config.SVC_GATEWAY_QUERY_GRPC_ENDPOINT;
  if (endpoint) return grpcMonthlySpend(endpoint, ctx.adminToken);
  const analytics = ctx.analytics;
  return analytics
    ? { spend: (month, orgIds) => monthlyUsageSnapshot(analytics, month, new Date(), orgIds) }
    : null;
};

/**
 * Policy decisions (SPEC 1.9, 4.8): PolicyService over gRPC when POLICY_GRPC_ENDPOINT is set (with
 * its deadline, decision cache and fail mode), else the same evaluation over an in-memory snapshot.
 */
const policySource = (ctx: RoleContext, metrics: GatewayMetrics) => {
  const c = ctx.config;
  const endpoint = c.POLICY_GRPC_ENDPOINT;
  if (endpoint) {
    const client = grpcPolicy(endpoint, ctx.adminToken);
    let lastProblem = '';
    const port: PolicyPort = new RemotePolicy(client.evaluate, {
      deadlineMs: c.SVC_POLICY_DEADLINE_MS,
      cacheMs: c.SVC_POLICY_CACHE_MS,
      failMode: c.SVC_POLICY_FAIL_MODE,
      onError: (err) => {
        const problem = describeError(err);
        if (problem === lastProblem) return;
        lastProblem = problem;
        ctx.logger.warn({ err, fail_mode: c.SVC_POLICY_FAIL_MODE }, 'the policy service did not answer');
      },
    });
    return { port, start: async () => {}, stop: async () => client.close() };
  }
  const snapshot = new SnapshotCache(policySnapshotSource(ctx.pool), ctx.databaseUrl, {
    onReload: () => metrics.onReload('policy'),
    onError: (err) => ctx.logger.error({ err }, 'policy snapshot refresh failed'),
  });
  return {
    port: inProcessPolicy(() => snapshot.current()),
    start: async () => {
      await snapshot.start();
    },
    stop: () => snapshot.stop(),
  };
};

export const gatewayRole = (ctx: RoleContext): Role => {
  let publisher: RequestRecordPublisher | null = null;
  const keys = ctx.apiKeys;
  const metrics = gatewayMetrics([ctx.metrics]);
  const registry = new RegistrySnapshotCache(ctx.pool, ctx.databaseUrl, {
    onReload: () => metrics.onReload('registry'),
    onError: (err) => ctx.logger.error({ err }, 'registry snapshot refresh failed'),
  });
  const tenancy = new SnapshotCache(
    tenancySource(ctx.pool, ctx.masterKey, (what) =>
      ctx.logger.error({ what }, 'a stored credential does not decrypt with SVC_MASTER_KEY'),
    ),
    ctx.databaseUrl,
    {
      onReload: () => metrics.onReload('tenancy'),
      onError: (err) => ctx.logger.error({ err }, 'tenancy snapshot refresh failed'),
    },
  );
  const c = ctx.config;
  const spend = spendSource(ctx);
  const policy = policySource(ctx, metrics);
  // Policy rate limits hold across every gateway process on this database (fail open, logged once).
  const keyLimits = new SharedRateLimiter(ctx.pool, {
    onError: (err) =>
      ctx.logger.warn({ err }, 'policy rate limits: the database did not answer; admitting meanwhile'),
  });
  // A refresh runs every few seconds: a lasting failure is logged when it starts, not every time.
  let lastProblem = '';
  const caps = new SpendCapCache(
    {
      caps: () => spendCaps(ctx.pool),
      spend: (month, orgIds) =>
        spend
          ? spend.spend(month, orgIds)
          : Promise.reject(
              new Error('no analytics store in this process and SVC_GATEWAY_QUERY_GRPC_ENDPOINT is unset'),
            ),
    },
    {
      refreshMs: c.SVC_GATEWAY_SPEND_CAP_REFRESH_MS,
      onError: (err, what) => {
        const problem = `${what}: ${describeError(err)}`;
        if (problem === lastProblem) return;
        lastProblem = problem;
        ctx.logger.warn({ err, what }, 'spend-cap refresh failed; the last known value stays in force');
      },
    },
  );
  // /v1/files (SPEC 4.1): bytes in this process's object store, metadata in PostgreSQL.
  const objects = ctx.objects;
  const fileStore = new FileStore(ctx.pool);
  const files = objects
    ? new Files(fileStore, objects, {
        maxBytes: c.SVC_FILES_MAX_BYTES,
        onError: (err, what) => ctx.logger.warn({ err }, what),
      })
    : null;
  let fileSweep: NodeJS.Timeout | null = null;
  let sweeping: Promise<void> | null = null;
  const chat: GatewayEdgeDeps = {
    registry: () => registry.current(),
    tenancy: () => tenancy.current(),
    adapters: ADAPTERS,
    budget: {
      retries: c.SVC_GATEWAY_RETRIES,
      deadlineMs: c.SVC_GATEWAY_REQUEST_DEADLINE_MS,
      attemptTimeoutMs: c.SVC_GATEWAY_ATTEMPT_TIMEOUT_MS,
      backoffMs: c.SVC_GATEWAY_RETRY_BACKOFF_MS,
    },
    limits: {
      maxResponseBytes: c.SVC_GATEWAY_MAX_UPSTREAM_BYTES,
      maxErrorMessageBytes: Math.min(SPEC_MESSAGE_CAP, c.SVC_GATEWAY_MAX_RESPONSE_BYTES ?? SPEC_MESSAGE_CAP),
    },
    rateLimiter: new RateLimiter(c.SVC_GATEWAY_RATE_LIMIT_RPM),
    onAttempt: metrics.onAttempt,
    // SPEC 2.5: a request is journaled when its upstream call begins and before its reply ends, so a
    // process that dies leaves its requests recorded (events/envelopes/journal.ts).
    onBegun: (begun) => {
      try {
        publisher?.begun(begunOf(begun));
      } catch (err) {
        ctx.logger.error({ err, request_id: begun.requestId }, 'request not journaled');
      }
    },
    onCompleted: (completed) => {
      try {
        const { draft, bodies } = envelopeOf(completed);
        publisher?.record(draft, bodies);
      } catch (err) {
        ctx.logger.error({ err, request_id: completed.requestId }, 'request.completed not recorded');
      }
      try {
        metrics.onCompleted(completed);
        ctx.telemetry?.onCompleted(completed);
      } catch (err) {
        ctx.logger.error({ err, request_id: completed.requestId }, 'request metrics not counted');
      }
    },
    observe: metrics.observe,
    bodyLimit: c.SVC_GATEWAY_MAX_REQUEST_BYTES,
    files,
    // One round trip per hold; never below zero under concurrency (SPEC 1.4, 8 "escrow hold").
    escrow: new PostgresEscrow(ctx.pool, c.SVC_WALLET_HOLD_TTL_SECONDS),
    spendCaps: caps,
    policy: policy.port,
    keyLimits,
  };
  // /v1/vector_stores (SPEC 4.1): stores in PostgreSQL, chunks in the analytics store when this
  // process has one (cli/service.ts), indexed by attach workers whose embeddings requests go
  // through this gateway's own request path as requests of the key that attached the file.
  const analytics = ctx.analytics;
  let attachWorker: AttachWorker | null = null;
  if (analytics && files) {
    const index = engineIndex(analytics);
    const source = filesSource(files, fileStore);
    const tables = new VectorStoreTables(ctx.pool);
    const jobs = new AttachJobs(ctx.pool);
    const embedder: Embedder = {
      embed: (key, model, inputs, signal) => embedForTenant(chat, key, model, inputs, { signal }),
    };
    const onError = (err: unknown, what: string) => ctx.logger.warn({ err }, what);
    const worker = new AttachWorker(
      jobs,
      {
        files: source,
        index,
        chunker: engineChunker,
        extractor: engineExtractor,
        embedder,
        keys: (id) => keys.identity(id),
      },
      { onError },
    );
    attachWorker = worker;
    const stores = new VectorStores(
      tables,
      jobs,
      {
        files: source,
        extractor: engineExtractor,
        index,
        filters: engineFilters,
        embedder,
        kick: () => worker.kick(),
      },
      { onError },
    );
    chat.vectorStores = stores;
    // Hosted file_search on /v1/responses retrieves from the same stores (gateway/file-search.ts).
    chat.fileSearch = vectorStoresFileSearch(stores);
    new Gauge({
      name: 'svc_vector_store_attach_jobs',
      help: 'Vector store files this process is indexing now',
      registers: [ctx.metrics],
      collect() {
        this.set(worker.busy);
      },
    });
  }
  const vectorStores = chat.vectorStores ?? null;
  return {
    name: 'gateway',
    http: (app) => {
      // A request one of this deployment's upstream calls sent back here is refused first.
      refuseOwnHops(app, hopValue(ctx.masterKey));
      return registerGatewayRoutes(app, keys, chat);
    },
    // Caches warm before the servers listen, so no request meets a cold one.
    prepare: async () => {
      publisher = await RequestRecordPublisher.open({
        bus: ctx.bus,
        dataDir: ctx.processDir,
        // Close runs after the HTTP drain, inside SVC_SHUTDOWN_TIMEOUT_MS: publishes still in
        // flight on a hung bus must fall back to the spool well before the forced exit.
        closeTimeoutMs: Math.floor(c.SVC_SHUTDOWN_TIMEOUT_MS / 4),
        onError: (err) => ctx.logger.warn({ err }, 'request.completed publication problem'),
        journalDir: journalPath(ctx.processDir),
      });
      const records = publisher;
      if (records.adopted.segments > 0)
        ctx.logger.warn(
          { ...records.adopted },
          'adopted the request journal of a gateway that stopped without closing it',
        );
      recordMetrics(ctx.metrics, () => records.stats());
      await keys.start({ onError: (err) => ctx.logger.error({ err }, 'api key cache refresh failed') });
      await registry.start();
      await tenancy.start();
      await policy.start();
      await caps.start();
      new Gauge({
        name: 'svc_gateway_spend_cap_snapshot_age_seconds',
        help: 'Age of the month-to-date spend the spend caps are checked against (-1: none in force)',
        registers: [ctx.metrics],
        collect() {
          const at = caps.status().spendReadAt;
          this.set(at === null ? -1 : (Date.now() - at) / 1_000);
        },
      });
    },
    // Expired files, abandoned uploads and unfinished deletions (of files and vector stores) are
    // cleared every minute; attach jobs are claimed by their worker's own sweep.
    start: () => {
      attachWorker?.start();
      if (!files) return;
      const sweep = () => {
        sweeping ??= Promise.all([files.sweep(), vectorStores?.sweep()])
          .then(() => undefined)
          .catch((err: unknown) =>
            ctx.logger.warn({ err }, 'the files and vector stores sweep failed; it runs again in a minute'),
          )
          .finally(() => {
            sweeping = null;
          });
      };
      sweep();
      fileSweep = setInterval(sweep, FILE_SWEEP_MS);
      fileSweep.unref();
    },
    stop: async () => {
      if (fileSweep) clearInterval(fileSweep);
      // Attach jobs in flight give their rows back before the records of their requests close.
      await attachWorker?.stop();
      await sweeping;
      // The HTTP server has drained: every served request is recorded before the bus closes.
      await publisher?.close();
      await registry.stop();
      await tenancy.stop();
      await policy.stop();
      await keyLimits.close();
      await caps.stop();
      spend?.close?.();
    },
  };
};
