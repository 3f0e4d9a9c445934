import pg from 'pg';

// BIGINT positions and versions arrive as strings by default; they stay below 2^53 in practice
// and the event store reads them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export const createPool = (connectionString: string, options: { max?: number; application?: string } = {}) => {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    application_name: options.application ?? 'svc',
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the process; the next checkout reconnects.
  pool.on('error', () => {});
  return pool;
};

/** Run `fn` inside one transaction on one client; roll back on any throw. */
export const withTransaction = async <T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
};
