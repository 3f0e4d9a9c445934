import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ClusterTarget, clusterTarget, databaseOnCluster, toClusterStatements } from './cluster-ddl.js';
import type { AnalyticsStore } from './port.js';

export const CLICKHOUSE_MIGRATIONS_DIR = fileURLToPath(
  new URL('../../migrations/clickhouse/', import.meta.url),
);

const MIGRATIONS_TABLE = 'svc_schema_migrations';

export interface ClickHouseMigrationResult {
  applied: string[];
  alreadyApplied: number;
}

/**
 * Statements of one migration file: a `;` ending a line ends a statement. Chunks holding only
 * comments are dropped, since the engine refuses an empty statement.
 */
export const splitStatements = (sql: string): string[] =>
  sql
    .split(/;[ \t]*(?:\r?\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.split('\n').some((line) => line.trim() !== '' && !line.trim().startsWith('--')));

const listMigrations = async (dir: string): Promise<string[]> => {
  try {
    return (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  } catch (err) {
    // An empty directory is not kept by git: no directory means no migrations yet.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
};

export interface ClickHouseMigrateOptions {
  /** The migrations directory; migrations/clickhouse unless given. */
  dir?: string;
  /** SVC_CLICKHOUSE_DDL: `cluster` applies each statement in its cluster form (cluster-ddl.ts). */
  ddl?: 'single' | 'cluster';
  /** SVC_CLICKHOUSE_CLUSTER, the cluster of `cluster` DDL. */
  cluster?: string;
  /** ClusterTarget.keeper: false only to test cluster DDL on the embedded engine. */
  keeper?: boolean;
}

const RECORDS_DDL = `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
  name String,
  applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree ORDER BY name`;

const targetOf = (store: AnalyticsStore, o: ClickHouseMigrateOptions): ClusterTarget | null => {
  if ((o.ddl ?? 'single') === 'single') return null;
  const target = clusterTarget(store.database, o.cluster, o.keeper);
  if (store.adapter === 'chdb' && target.keeper)
    throw new Error(
      'SVC_CLICKHOUSE_DDL=cluster needs a ClickHouse server (SVC_CLICKHOUSE_URL), not embedded chdb',
    );
  return target;
};

/**
 * Applies migrations/clickhouse/NNNN_*.sql in name order into the store's database, recording each
 * in svc_schema_migrations once all its statements succeeded.
 *
 * ClickHouse DDL is neither transactional nor lockable, so a file that fails half way is run again
 * from its first statement next time, and two processes starting together may both run one file.
 * Migrations are therefore written to be re-runnable (`CREATE TABLE IF NOT EXISTS`,
 * `ADD COLUMN IF NOT EXISTS`); the record table is a ReplacingMergeTree so a double record collapses.
 *
 * On a cluster every statement runs in its cluster form, the records table included: a
 * Distributed table over replicated `_local` tables, so a process on any node reads the records of
 * all shards, and a record is written once its file's ON CLUSTER statements finished on every node.
 * Every pending file is translated before any runs: a statement without a cluster form stops the
 * migration before it changes anything. A database migrated in the other mode is refused, since
 * its tables exist under the names the other mode would create.
 */
export const migrateClickHouse = async (
  store: AnalyticsStore,
  options: string | ClickHouseMigrateOptions = {},
): Promise<ClickHouseMigrationResult> => {
  const o = typeof options === 'string' ? { dir: options } : options;
  const target = targetOf(store, o);
  const forServer = (statement: string): string[] =>
    target ? toClusterStatements(statement, target) : [statement];
  const dir = o.dir ?? CLICKHOUSE_MIGRATIONS_DIR;
  const files = await listMigrations(dir);
  const [records] = await store.query<{ engine: string }>(
    'SELECT engine FROM system.tables WHERE database = {database:String} AND name = {name:String}',
    { database: store.database, name: MIGRATIONS_TABLE },
  );
  if (records && (records.engine === 'Distributed') !== (target !== null))
    throw new Error(
      `database ${store.database} was migrated ${target ? 'for one server' : 'for a cluster'}: ` +
        `set SVC_CLICKHOUSE_DDL=${target ? 'single' : 'cluster'}, or use a new database`,
    );
  if (target?.keeper) await store.command(databaseOnCluster(target));
  for (const statement of forServer(RECORDS_DDL)) await store.command(statement);
  const done = new Set(
    (await store.query<{ name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE} FINAL`)).map((r) => r.name),
  );
  const pending: { file: string; statements: string[][] }[] = [];
  for (const file of files) {
    if (done.has(file)) continue;
    const statements = splitStatements(await readFile(join(dir, file), 'utf8'));
    pending.push({
      file,
      statements: statements.map((statement, i) => {
        try {
          return forServer(statement);
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          throw new Error(`clickhouse migration ${file} statement ${i + 1} has no cluster form: ${reason}`, {
            cause: err,
          });
        }
      }),
    });
  }
  const applied: string[] = [];
  for (const { file, statements } of pending) {
    for (const [i, forms] of statements.entries()) {
      try {
        for (const statement of forms) await store.command(statement);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new Error(`clickhouse migration ${file} statement ${i + 1} failed: ${reason}`, { cause: err });
      }
    }
    // A Distributed insert is queued and sent on in the background unless synchronous, and a
    // process starting on another node must find the record at once.
    if (target)
      await store.command(
        `INSERT INTO ${MIGRATIONS_TABLE} (name) SETTINGS insert_distributed_sync = 1 SELECT {name:String}`,
        { name: file },
      );
    else await store.insert(MIGRATIONS_TABLE, [{ name: file, applied_at: new Date() }]);
    applied.push(file);
  }
  return { applied, alreadyApplied: done.size };
};
