import { relative } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { type Command, Option } from 'commander';
import { type Logger, pino } from 'pino';
import { type Config, redactUrl } from '../../config/config.js';
import { VERSION } from '../../lib/version.js';
import { ROLE_FACTORIES } from '../../roles/index.js';
import type { RoleName } from '../../roles/role.js';
import { splitRoles } from '../data-process.js';
import { runDataProcess } from '../data-process-child.js';
import { emit } from '../output.js';
import { dataDirOf, readConfig } from '../runtime.js';
import { parseRoles, type RunningService, startService } from '../service.js';
import { runWorker } from '../worker-process.js';
import { type RunningWorkers, retireSlots, startWorkers, workerCount, workerRoles } from '../workers.js';

/**
 * SVC_HEAP=lean, and `auto` in a process without data roles (a gateway). V8 reads the factor at
 * every full collection, so setting it before the roles allocate takes effect. Measured with
 * bench/gateway: RSS after load 149 MB instead of 204 MB, at the same throughput. Keeping the
 * young generation small as well (--semi-space-growth-factor=1) gave 111 MB but cost a quarter of
 * the throughput in scavenges, so it is not done. Ingest holds whole batches: there the factor
 * cost about 6 % of bench/ingest's rate, so `auto` leaves it out.
 */
export const LEAN_HEAP_FLAGS = ['--heap-growing-percent=25'] as const;

export const leanHeap = (setting: Config['SVC_HEAP'], roles: readonly RoleName[]): boolean =>
  setting === 'lean' ||
  (setting === 'auto' && !roles.some((r) => BATCH_ROLES.includes(r) && ROLE_FACTORIES[r] !== undefined));

/**
 * Roles that hold whole batches in memory, where the bound cost throughput (those built so far: a
 * role named but not built yet runs nothing). Trace ingest holds one export per request, as the
 * gateway holds one body, so it stays lean; the audit role holds one batch (SVC_AUDIT_BATCH_MAX_EVENTS
 * events) at a time. The query role reads
 * page by page: measured with `npm start` under load, the serving process (gateway, control plane,
 * auth, query) used 216 MB RSS with V8's heuristics and 156 MB lean.
 */
const BATCH_ROLES: readonly RoleName[] = ['ingest'];

/** The roles of this process: a `svc serve` that hands ingest to a data process holds no batches. */
const ownRoles = (config: Config, roles: readonly RoleName[]): RoleName[] =>
  splitRoles(roles, config.SVC_SERVE_DATA_PROCESS).here;

const displayPath = (path: string): string => {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
};

/** What the banner shows of one process's service, or of a supervisor's workers. */
type Served = Pick<
  RunningService,
  'httpUrl' | 'grpcPort' | 'roles' | 'notBuilt' | 'dataProcess' | 'database' | 'secrets'
> & {
  workers?: (number | null)[];
};

const banner = (s: Served): string => {
  const lines = [
    `svc is serving on ${s.httpUrl} (gRPC on port ${s.grpcPort})${s.workers ? ` in ${s.workers.length} worker processes (pids ${s.workers.join(', ')})` : ''}`,
    `  roles:    ${s.roles.join(', ') || '(none)'}${s.notBuilt.length ? `   not built yet: ${s.notBuilt.join(', ')}` : ''}`,
    ...(s.dataProcess.roles.length
      ? [
          `            ${s.dataProcess.roles.join(', ')} in a data process of their own (pid ${s.dataProcess.pid})`,
        ]
      : []),
    `  database: ${s.database.embedded ? `embedded PostgreSQL (cluster in ${displayPath(s.database.embedded.clusterDir)}), ` : ''}${redactUrl(s.database.url)}`,
    `  health:   curl ${s.httpUrl}/healthz`,
    `  metrics:  curl ${s.httpUrl}/metrics`,
    `  admin:    the admin token is in ${displayPath(s.secrets.path)} (admin_token)`,
  ];
  if (s.roles.includes('gateway')) {
    lines.push(
      `  try it:   node bin/svc.js demo${s.httpUrl === 'http://127.0.0.1:8080' ? '' : ` --url ${s.httpUrl}`}   (no provider account: a local echo upstream, a funded wallet, one request)`,
      '  gateway:  mint a key:   node bin/svc.js bootstrap --workspace Demo --org Demo --project Demo',
      '            add a model:  node bin/svc.js registry upsert --adapter openai --model gpt-4o-mini --provider-model-id gpt-4o-mini \\',
      '                            --input-price-per-token 0.00000015 --output-price-per-token 0.0000006',
      '            and a key:    node bin/svc.js keys platform set --provider openai --secret $OPENAI_API_KEY',
      '            fund it:      node bin/svc.js wallet grant --workspace Demo --amount 5.00 --reason first --idempotency-key first',
      '                          (platform keys serve wallet traffic; a project connection of its own needs no funding)',
      `            then call:    OpenAI SDK with baseURL ${s.httpUrl}/v1`,
    );
  }
  if (s.roles.includes('trace-ingest'))
    lines.push(
      `  traces:   OTLP/HTTP exporters to ${s.httpUrl}/v1/traces with a trace ingest key (POST /api/trace-ingest-keys)`,
    );
  if (s.roles.includes('console'))
    lines.push(
      `  console:  ${s.httpUrl}/console; sign in through SVC_OIDC_PROVIDERS, or without one:`,
      '            node bin/svc.js users add --email you@example.com --workspace <workspace_id> --role manager',
      '            node bin/svc.js console link --email you@example.com   (prints a single-use sign-in link)',
    );
  if (s.secrets.generatedAt)
    lines.push(`  generated a master key and an admin token in ${displayPath(s.secrets.path)} (mode 0600)`);
  lines.push('  stop with Ctrl-C (SIGINT) or SIGTERM');
  return lines.join('\n');
};

/** Why start-up was abandoned: a stop signal, not a failure (exit code 0). */
class StopRequested extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`stopped by ${signal} during start-up`);
    this.name = 'StopRequested';
  }
}

/** The same signal again within this window is a duplicate delivery, not a second request. */
const REPEAT_WINDOW_MS = 500;

/**
 * SIGTERM and SIGINT. Installed before start-up begins: a signal then aborts
 * start-up, which closes what it opened, instead of killing a process whose embedded PostgreSQL
 * would live on. Once running, the first signal stops the service gracefully within
 * SVC_SHUTDOWN_TIMEOUT_MS; a second signal, or the timeout, exits at once. Either exit still
 * signals the embedded PostgreSQL (its process exit hook), which completes a fast shutdown alone.
 */
const handleSignals = (logger: Logger, timeoutMs: number) => {
  const controller = new AbortController();
  let stopService: (() => Promise<void>) | null = null;
  let first: { signal: NodeJS.Signals; at: number } | null = null;
  const finish = (stop: () => Promise<void>) =>
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  const shutdown = (signal: NodeJS.Signals) => {
    if (first) {
      // Ctrl-C on `npm start` reaches node twice within milliseconds: from the terminal (to the
      // whole process group) and forwarded by npm. That is one request, not a second one.
      if (signal === first.signal && Date.now() - first.at < REPEAT_WINDOW_MS) return;
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    first = { signal, at: Date.now() };
    controller.abort(new StopRequested(signal));
    logger.info({ signal }, 'shutting down: draining requests and stopping workers');
    const timer = setTimeout(() => {
      logger.error({ timeout_ms: timeoutMs }, 'shutdown timed out; exiting');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    if (stopService) void finish(stopService);
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  return {
    signal: controller.signal,
    /** Hands over the started service: a signal from now on stops it. */
    running: (stop: () => Promise<void>) => {
      stopService = stop;
      if (controller.signal.aborted) void finish(stop);
    },
  };
};

export const registerServe = (program: Command): void => {
  program
    .command('serve')
    .description('run the service: every role in one process, or the roles named with --roles')
    .option('--roles <list>', 'comma-separated roles to run (default: all)')
    .option(
      '--workers <n>',
      'processes to serve the HTTP roles in, sharing the ports (default SVC_SERVE_WORKERS: one per core for the gateway alone, else 1)',
    )
    .option('--json', 'print the start-up summary as JSON')
    // The children `svc serve` starts itself (cli/data-process.ts, cli/workers.ts); not for people.
    .addOption(new Option('--data-process').hideHelp())
    .addOption(new Option('--worker <slot>').hideHelp())
    .action(
      async (opts: {
        roles?: string;
        json?: boolean;
        dataProcess?: boolean;
        worker?: string;
        workers?: string;
      }) => {
        const config = readConfig();
        const roles = parseRoles(opts.roles);
        const workers =
          opts.dataProcess || opts.worker !== undefined
            ? 1
            : workerCount(config.SVC_SERVE_WORKERS, opts.workers, roles);
        const own =
          opts.dataProcess || opts.worker !== undefined
            ? roles
            : workers > 1
              ? workerRoles(roles).http
              : ownRoles(config, roles);
        if (leanHeap(config.SVC_HEAP, own)) for (const flag of LEAN_HEAP_FLAGS) setFlagsFromString(flag);
        if (opts.dataProcess) {
          const logger = pino({ level: config.SVC_LOG_LEVEL, base: { svc: VERSION, process: 'data' } });
          return runDataProcess(config, roles, logger);
        }
        if (opts.worker !== undefined) {
          const slot = Number(opts.worker);
          const logger = pino({
            level: config.SVC_LOG_LEVEL,
            base: { svc: VERSION, process: 'worker', slot },
          });
          await runWorker(config, roles, slot, logger);
          return;
        }
        const logger = pino({ level: config.SVC_LOG_LEVEL, base: { svc: VERSION } });
        // A supervisor's stop is its workers' drain (each bounded by the timeout) and then its data
        // process's (the same again): its own bound covers both.
        const timeoutMs = config.SVC_SHUTDOWN_TIMEOUT_MS;
        const signals = handleSignals(logger, workers > 1 ? 2 * timeoutMs + 5_000 : timeoutMs);
        let served: Served;
        let stop: () => Promise<void>;
        try {
          if (workers > 1) {
            const running: RunningWorkers = await startWorkers(config, {
              roles,
              count: workers,
              logger,
              signal: signals.signal,
            });
            served = { ...running, workers: running.workerPids() };
            stop = running.stop;
          } else {
            // One process: the slots an earlier `--workers` ran hand their records to the data dir's.
            if (roles.includes('gateway')) retireSlots(dataDirOf(config), 1, logger);
            const service = await startService(config, { roles, logger, signal: signals.signal });
            served = service;
            stop = service.stop;
          }
        } catch (err) {
          if (!(err instanceof StopRequested)) throw err;
          logger.info({ signal: err.signal }, 'stopped during start-up');
          process.exit(0);
        }
        emit(
          opts.json,
          {
            http_url: served.httpUrl,
            grpc_port: served.grpcPort,
            roles: served.roles,
            data_process: { roles: served.dataProcess.roles, pid: served.dataProcess.pid },
            workers: served.workers ?? [process.pid],
            not_built: served.notBuilt,
            database: redactUrl(served.database.url),
            embedded_database: served.database.embedded !== null,
            secrets_file: served.secrets.path,
          },
          () => banner(served),
          { compact: true },
        );
        signals.running(stop);
      },
    );
};
