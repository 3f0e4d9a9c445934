import pg from 'pg';

// BIGINT positions and versions arrive as strings by default; they stay below 2^53 in practice
// and the event store reads them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

const ignore = () => {};

/**
 * A named statement: PostgreSQL parses it once per connection and, after a few executions, may plan
 * it once too, where an unnamed one is parsed and planned on every call. Only for statements whose
 * plan cannot go bad as a table grows: function calls, inserts, singleton and tiny tables (a plan
 * cached while a table was small keeps scanning it once large, until an ANALYZE). One name, one
 * text: `pg` refuses a name prepared with another text on the same connection.
 */
export const namedStatement =
  (name: string, text: string) =>
  (values: unknown[] = []): pg.QueryConfig => ({ name, text, values });

export const createPool = (
  connectionString: string,
  options: { max?: number; application?: string } = {},
) => {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    application_name: options.application ?? 'svc',
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the process; the next checkout reconnects.
  pool.on('error', ignore);
  // Nor may a checked-out one: pg-pool listens only while a client is idle, and
  // a server ending the session between two queries emits 'error' on the client. pg fails that
  // client's next query, and pg-pool drops a client that is no longer queryable when it is
  // released. graphile-worker looks for this 'connect' listener on a pool it is given.
  pool.on('connect', (client) => client.on('error', ignore));
  return pool;
};

/**
 * Run `fn` inside one transaction on one client; roll back on any throw. A connection lost while
 * checked out surfaces as the query's rejection, never as an uncaught 'error' event, and the broken
 * client is destroyed instead of going back to the pool.
 */
export const withTransaction = async <T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> => {
  const client = await pool.connect();
  client.on('error', ignore);
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw err;
  } finally {
    client.off('error', ignore);
    client.release(broken);
  }
};
