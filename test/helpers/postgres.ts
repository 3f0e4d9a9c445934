import pg from 'pg';
import { inject } from 'vitest';
import { migratePostgres } from '../../src/events/postgres/migrate.js';
import { createPool, type Pool } from '../../src/events/postgres/pool.js';
import { uniqueSuffix } from './env.js';

export interface TestDatabase {
  url: string;
  name: string;
  pool: Pool;
  drop(): Promise<void>;
}

/** The suite's server (global-setup); outside vitest (test/helpers/console-dev.ts), SVC_TEST_DATABASE_URL. */
const adminUrl = (): string => {
  if (!process.env.VITEST)
    return process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  return inject('databaseUrl');
};

const withDatabase = (url: string, database: string): string => {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
};

/**
 * A fresh database for one test file, with every migration applied. Runs never share state:
 * each gets its own name and drops it at the end.
 */
export const createTestDatabase = async (options: { migrate?: boolean; poolSize?: number } = {}) => {
  const name = `svc_t_${uniqueSuffix()}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(adminUrl(), name);
  const pool = createPool(url, { max: options.poolSize ?? 10, application: 'svc-test' });
  if (options.migrate !== false) await migratePostgres(pool);
  const db: TestDatabase = {
    url,
    name,
    pool,
    drop: async () => {
      await pool.end().catch(() => {});
      const c = new pg.Client({ connectionString: adminUrl() });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
  return db;
};
