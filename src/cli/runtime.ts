import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Config, decodeMasterKey, loadConfig, redactUrl } from '../config/config.js';
import { type EmbeddedPostgresHandle, startEmbeddedPostgres } from '../events/postgres/embedded.js';
import { PostgresEventStore } from '../events/postgres/event-store.js';
import { migratePostgres } from '../events/postgres/migrate.js';
import { createPool, type Pool } from '../events/postgres/pool.js';
import { describeError, ServiceError } from '../lib/errors.js';
import { CliError } from './output.js';

/** The secrets a data dir generates for itself on first start (file mode 0600). */
export interface Secrets {
  masterKey: Buffer;
  adminToken: string;
  /** Set when this call generated them. */
  generatedAt?: string;
  path: string;
}

export interface Database {
  url: string;
  pool: Pool;
  embedded: EmbeddedPostgresHandle | null;
  close(): Promise<void>;
}

export const dataDirOf = (config: Config): string => resolve(config.SVC_DATA_DIR);

export const readConfig = (): Config => {
  try {
    return loadConfig();
  } catch (err) {
    throw new CliError(`invalid configuration: ${describeError(err)}`);
  }
};

/**
 * Environment values win; otherwise the data dir's secrets.json, created on first use with a fresh
 * master key and admin token.
 */
export const loadSecrets = async (config: Config): Promise<Secrets> => {
  const dir = dataDirOf(config);
  const path = join(dir, 'secrets.json');
  let stored: { master_key?: string; admin_token?: string } = {};
  let generatedAt: string | undefined;
  if (existsSync(path)) {
    stored = JSON.parse(await readFile(path, 'utf8')) as typeof stored;
  } else if (!config.SVC_MASTER_KEY || !config.SVC_ADMIN_TOKEN) {
    await mkdir(dir, { recursive: true });
    stored = {
      master_key: randomBytes(32).toString('hex'),
      admin_token: `svcadm_${randomBytes(24).toString('base64url')}`,
    };
    await writeFile(path, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
    await chmod(path, 0o600);
    generatedAt = new Date().toISOString();
  }
  const masterKey = decodeMasterKey(config.SVC_MASTER_KEY ?? stored.master_key ?? '');
  const adminToken = config.SVC_ADMIN_TOKEN ?? stored.admin_token;
  if (!masterKey || !adminToken) throw new CliError(`${path} is missing master_key or admin_token`);
  return { masterKey, adminToken, path, ...(generatedAt ? { generatedAt } : {}) };
};

/**
 * The database of this deployment: SVC_DATABASE_URL when set, otherwise the embedded PostgreSQL
 * of the data dir (found running, or started for the life of this process). Migrations are applied
 * unless told not to. An unreachable server, or an embedded one that cannot start, is a one-line
 * CliError.
 */
export const openDatabase = async (
  config: Config,
  options: {
    migrate?: boolean;
    poolSize?: number;
    application?: string;
    onLog?: (line: unknown) => void;
  } = {},
): Promise<Database> => {
  let embedded: EmbeddedPostgresHandle | null = null;
  let url = config.SVC_DATABASE_URL;
  if (!url) {
    try {
      embedded = await startEmbeddedPostgres({ dataDir: dataDirOf(config), onLog: options.onLog });
    } catch (err) {
      // The binaries are optional dependencies: an install without them, or a
      // platform they cannot run on (musl), serves from a PostgreSQL server instead.
      throw new CliError(
        `cannot start the embedded PostgreSQL in ${dataDirOf(config)}: ${describeError(err)}; ` +
          'set SVC_DATABASE_URL to use a PostgreSQL server instead',
      );
    }
    url = embedded.url;
  }
  // One-shot CLI commands need few connections; test runs start many of them beside servers.
  const pool = createPool(url, { max: options.poolSize ?? 4, application: options.application ?? 'svc' });
  const close = async () => {
    await pool.end().catch(() => {});
    await embedded?.stop();
  };
  try {
    await pool.query('SELECT 1');
    if (options.migrate !== false) await migratePostgres(pool);
  } catch (err) {
    await close();
    throw new CliError(`cannot use PostgreSQL at ${redactUrl(url)}: ${describeError(err)}`);
  }
  return { url, pool, embedded, close };
};

export interface StoreContext {
  config: Config;
  secrets: Secrets;
  db: Database;
  store: PostgresEventStore;
}

const describeServiceError = (err: ServiceError) => `${err.message}${err.param ? ` (${err.param})` : ''}`;

/**
 * Opens the deployment's database and event store for one CLI command and closes them after; a
 * broken rule (ServiceError) becomes the one-line CLI failure.
 */
export const withEventStore = async <T>(
  fn: (ctx: StoreContext) => Promise<T>,
  options: { describe?: (err: ServiceError) => string } = {},
): Promise<T> => {
  const config = readConfig();
  const secrets = await loadSecrets(config);
  const db = await openDatabase(config);
  const store = new PostgresEventStore(db.pool, db.url);
  try {
    return await fn({ config, secrets, db, store });
  } catch (err) {
    if (err instanceof ServiceError) throw new CliError((options.describe ?? describeServiceError)(err));
    throw err;
  } finally {
    await store.close();
    await db.close();
  }
};

/**
 * This deployment's own HTTP address as a client on this machine dials it: a wildcard listener
 * (0.0.0.0, ::) answers on loopback; an IPv6 host is bracketed.
 */
export const ownHttpUrl = (host: string, port: number): string => {
  const h = ['0.0.0.0', '::', ''].includes(host) ? '127.0.0.1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
};
