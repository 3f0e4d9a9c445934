import pg from 'pg';
import { migratePostgres } from '../../src/events/postgres/migrate.js';
import { createPool, type Pool } from '../../src/events/postgres/pool.js';

/**
 * A throwaway database for one benchmark run on the machine's PostgreSQL
 * (SVC_TEST_DATABASE_URL, default the local server), dropped at the end.
 */
export const benchDatabase = async (
  label: string,
): Promise<{ url: string; pool: Pool; drop(): Promise<void> }> => {
  const admin = process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const name = `svc_bench_${label}_${process.pid}_${Date.now().toString(36)}`;
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const url = u.toString();
  const pool = createPool(url, { max: 32, application: 'svc-bench' });
  await migratePostgres(pool);
  return {
    url,
    pool,
    drop: async () => {
      await pool.end();
      const d = new pg.Client({ connectionString: admin });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await d.end();
    },
  };
};
