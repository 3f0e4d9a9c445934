import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/**
 * Applies migrations/clickhouse/NNNN_*.sql in name order into the store's database, recording each
 * in svc_schema_migrations once all its statements succeeded.
 *
 * ClickHouse DDL is neither transactional nor lockable, so a file that fails half way is run again
 * from its first statement next time, and two processes starting together may both run one file.
 * Migrations are therefore written to be re-runnable (`CREATE TABLE IF NOT EXISTS`,
 * `ADD COLUMN IF NOT EXISTS`); the record table is a ReplacingMergeTree so a double record collapses.
 */
export const migrateClickHouse = async (
  store: AnalyticsStore,
  dir = CLICKHOUSE_MIGRATIONS_DIR,
): Promise<ClickHouseMigrationResult> => {
  const files = await listMigrations(dir);
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
       name String,
       applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
     ) ENGINE = ReplacingMergeTree ORDER BY name`,
  );
  const done = new Set(
    (await store.query<{ name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE} FINAL`)).map((r) => r.name),
  );
  const applied: string[] = [];
  for (const file of files) {
    if (done.has(file)) continue;
    const statements = splitStatements(await readFile(join(dir, file), 'utf8'));
    for (const [i, statement] of statements.entries()) {
      try {
        await store.command(statement);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new Error(`clickhouse migration ${file} statement ${i + 1} failed: ${reason}`, { cause: err });
      }
    }
    await store.insert(MIGRATIONS_TABLE, [{ name: file, applied_at: new Date() }]);
    applied.push(file);
  }
  return { applied, alreadyApplied: done.size };
};
