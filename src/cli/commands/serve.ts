import { relative } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import type { Command } from 'commander';
import { type Config, redactUrl } from '../../config/config.js';
import type { RoleName } from '../../roles/role.js';
import { emit } from '../output.js';
import { readConfig } from '../runtime.js';
import { DATA_ROLES, parseRoles, type RunningService, startService } from '../service.js';

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
  setting === 'lean' || (setting === 'auto' && !roles.some((r) => DATA_ROLES.includes(r)));

const displayPath = (path: string): string => {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
};

const banner = (s: RunningService): string => {
  const lines = [
    `svc is serving on ${s.httpUrl} (gRPC on port ${s.grpcPort})`,
    `  roles:    ${s.roles.join(', ') || '(none)'}${s.notBuilt.length ? `   not built yet: ${s.notBuilt.join(', ')}` : ''}`,
    `  database: ${s.database.embedded ? `embedded PostgreSQL (cluster in ${displayPath(s.database.embedded.clusterDir)}), ` : ''}${redactUrl(s.database.url)}`,
    `  health:   curl ${s.httpUrl}/healthz`,
    `  metrics:  curl ${s.httpUrl}/metrics`,
    `  admin:    the admin token is in ${displayPath(s.secrets.path)} (admin_token)`,
  ];
  if (s.roles.includes('gateway')) {
    lines.push(
      '  gateway:  mint a key:   node bin/svc.js bootstrap --workspace Demo --org Demo --project Demo',
      '            add a model:  node bin/svc.js registry upsert --adapter openai --model gpt-4o-mini --provider-model-id gpt-4o-mini \\',
      '                            --input-price-per-token 0.00000015 --output-price-per-token 0.0000006',
      '            and a key:    node bin/svc.js keys platform set --provider openai --secret $OPENAI_API_KEY',
      `            then call:    OpenAI SDK with baseURL ${s.httpUrl}/v1`,
    );
  }
  if (s.secrets.generatedAt)
    lines.push(`  generated a master key and an admin token in ${displayPath(s.secrets.path)} (mode 0600)`);
  lines.push('  stop with Ctrl-C (SIGINT) or SIGTERM');
  return lines.join('\n');
};

export const registerServe = (program: Command): void => {
  program
    .command('serve')
    .description('run the service: every role in one process, or the roles named with --roles')
    .option('--roles <list>', 'comma-separated roles to run (default: all)')
    .option('--json', 'print the start-up summary as JSON')
    .action(async (opts: { roles?: string; json?: boolean }) => {
      const config = readConfig();
      const roles = parseRoles(opts.roles);
      if (leanHeap(config.SVC_HEAP, roles)) for (const flag of LEAN_HEAP_FLAGS) setFlagsFromString(flag);
      const service = await startService(config, { roles });
      emit(
        opts.json,
        {
          http_url: service.httpUrl,
          grpc_port: service.grpcPort,
          roles: service.roles,
          not_built: service.notBuilt,
          database: redactUrl(service.database.url),
          embedded_database: service.database.embedded !== null,
          secrets_file: service.secrets.path,
        },
        () => banner(service),
        { compact: true },
      );
      let stopping = false;
      const shutdown = (signal: string) => {
        if (stopping) {
          service.logger.warn({ signal }, 'second signal: exiting now');
          process.exit(1);
        }
        stopping = true;
        service.logger.info({ signal }, 'shutting down: draining requests and stopping workers');
        const timer = setTimeout(() => {
          service.logger.error({ timeout_ms: config.SVC_SHUTDOWN_TIMEOUT_MS }, 'shutdown timed out; exiting');
          process.exit(1);
        }, config.SVC_SHUTDOWN_TIMEOUT_MS);
        timer.unref();
        service.stop().then(
          () => {
            service.logger.info('stopped');
            process.exit(0);
          },
          (err: unknown) => {
            service.logger.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => shutdown('SIGTERM'));
      process.on('SIGINT', () => shutdown('SIGINT'));
    });
};
