import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drainPending, Session } from 'chdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newGeneration, VectorChunkStore } from '../vectors/store.js';
import type { ClusterTarget } from './cluster-ddl.js';
import { clusterStore } from './cluster-store.js';
import { migrateClickHouse } from './migrate.js';
import {
  type AnalyticsRow,
  type AnalyticsStore,
  decodeJsonEachRow,
  encodeJsonEachRow,
  INSERT_SETTINGS,
  QUERY_SETTINGS,
} from './port.js';

/**
 * The cluster DDL of the real migrations on the embedded engine, as far as one process can run it.
 * chdb defines no cluster, so a config file gives it a one-shard cluster of itself (a shard on the
 * engine's own address and port is local: reads and writes go to the `_local` tables in process).
 * It has no Keeper and runs no distributed DDL queue: ReplicatedMergeTree is refused (NO_ZOOKEEPER;
 * with the in-process test keeper its replica stays read-only) and so is ON CLUSTER
 * (QUERY_IS_PROHIBITED), so the migration runs with `keeper: false` (cluster-ddl.ts). What runs
 * for real is the rest: `_local` tables, Distributed tables over them, the view on the `_local`
 * tables, ALTERs of both, the records table read and written through Distributed, FINAL, and the
 * vector stores' statements through the cluster store (cluster-store.ts).
 *
 * ChdbAnalyticsStore takes no engine arguments, so this file drives a chdb Session of its own (the
 * test processes are separate, so its data path is the only one bound here).
 */

const CLUSTER = 'svc_test';
const target: ClusterTarget = { cluster: CLUSTER, database: 'svc', keeper: false };

const CONFIG = `<clickhouse>
  <tcp_port>9000</tcp_port>
  <remote_servers>
    <${CLUSTER}><shard><replica><host>localhost</host><port>9000</port></replica></shard></${CLUSTER}>
  </remote_servers>
</clickhouse>
`;

const sessionStore = (session: Session): AnalyticsStore => {
  const run = async (sql: string, params: Record<string, unknown> = {}) =>
    (await session.queryBindAsync(sql, params, { format: 'JSONEachRow' })).text();
  return {
    adapter: 'chdb',
    database: 'svc',
    insert: async (table: string, rows: readonly AnalyticsRow[]) => {
      await session.insert({ table, values: Buffer.from(encodeJsonEachRow(rows)), format: 'JSONEachRow' });
    },
    query: async <T = AnalyticsRow>(sql: string, params?: Record<string, unknown>) =>
      decodeJsonEachRow<T>(await run(sql, params)),
    command: async (sql: string, params?: Record<string, unknown>) => {
      await run(sql, params);
    },
    health: async () => ({ ok: true, adapter: 'chdb' }),
    close: async () => {},
  };
};

describe('cluster DDL on a one-shard cluster of the embedded engine', () => {
  let dir: string;
  let session: Session;
  let store: AnalyticsStore;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-ch-cluster-'));
    await writeFile(join(dir, 'config.xml'), CONFIG);
    session = new Session(join(dir, 'data'), {
      connectionArgs: [`--config-file=${join(dir, 'config.xml')}`],
    });
    for (const sql of [
      'CREATE DATABASE svc',
      'USE svc',
      ...Object.entries({ ...QUERY_SETTINGS, ...INSERT_SETTINGS }).map(([k, v]) => `SET ${k} = '${v}'`),
    ])
      await session.queryAsync(sql);
    store = sessionStore(session);
  });
  afterAll(async () => {
    session?.close();
    await drainPending();
    await rm(dir, { recursive: true, force: true });
  });

  it('has the cluster the config defines, with its one shard local', async () => {
    expect(
      await store.query(`SELECT shard_num, is_local FROM system.clusters WHERE cluster = '${CLUSTER}'`),
    ).toEqual([{ shard_num: 1, is_local: 1 }]);
  });

  it('migrates every file to _local and Distributed tables, once', async () => {
    const options = { ddl: 'cluster', cluster: CLUSTER, keeper: false } as const;
    const first = await migrateClickHouse(store, options);
    expect(first.applied).toEqual([
      '0001_requests.sql',
      '0002_alt_beta.sql',
      '0003_traces.sql',
      '0004_vector_chunks.sql',
    ]);
    expect(await migrateClickHouse(store, options)).toEqual({ applied: [], alreadyApplied: 4 });
    await expect(migrateClickHouse(store)).rejects.toThrow(/database svc was migrated for a cluster/);

    const tables = await store.query<{ name: string; engine: string; engine_full: string }>(
      "SELECT name, engine, engine_full FROM system.tables WHERE database = 'svc' ORDER BY name",
    );
    const engines = Object.fromEntries(tables.map((t) => [t.name, t.engine]));
    for (const name of ['requests', 'trace_spans', 'vector_store_files', 'svc_schema_migrations']) {
      expect(engines[name]).toBe('Distributed');
      expect(engines[`${name}_local`]).toBe('ReplacingMergeTree');
    }
    expect(engines['vector_chunks_local']).toBe('MergeTree');
    expect(engines['requests_per_minute_local']).toBe('SummingMergeTree');
    expect(engines['requests_per_minute_mv']).toBe('MaterializedView');
    expect(tables.find((t) => t.name === 'requests')?.engine_full).toBe(
      `Distributed('${CLUSTER}', 'svc', 'requests_local', cityHash64(request_id))`,
    );
    expect(
      await store.query(
        "SELECT table, type FROM system.columns WHERE database = 'svc' AND name = 'alt_beta' ORDER BY table",
      ),
    ).toEqual([
      { table: 'requests', type: 'Nullable(String)' },
      { table: 'requests_local', type: 'Nullable(String)' },
    ]);
  });

  it('collapses a redelivered request with FINAL through the Distributed table', async () => {
    const row = {
      request_id: 'req-1',
      org_id: 'org-1',
      status: 'ok',
      started_at: new Date('2030-01-02T03:04:05.678Z'),
      ingested_at: new Date('2030-01-02T03:04:06Z'),
    };
    // Two inserts, as a redelivery makes: one block would be deduplicated when written.
    await store.insert('requests', [row]);
    await store.insert('requests', [
      { ...row, status: 'error', alt_beta: 'b1', ingested_at: new Date('2030-01-02T03:04:07Z') },
    ]);
    expect(await store.query("SELECT count() AS n FROM requests_local WHERE org_id = 'org-1'")).toEqual([
      { n: '2' },
    ]);
    expect(
      await store.query("SELECT request_id, status, alt_beta FROM requests FINAL WHERE org_id = 'org-1'"),
    ).toEqual([{ request_id: 'req-1', status: 'error', alt_beta: 'b1' }]);
    // The view ran on the local table the Distributed insert reached (twice: see 0001_requests.sql).
    expect(await store.query('SELECT toString(sum(requests)) AS n FROM requests_per_minute')).toEqual([
      { n: '2' },
    ]);
  });

  it('runs the vector stores over the Distributed tables and purges through the _local tables', async () => {
    const vectors = new VectorChunkStore(clusterStore(store, target));
    const scope = { orgId: 'o', projectId: 'p', vectorStoreId: 'vs' };
    const generation = newGeneration();
    await vectors.insertChunks(scope, 'f', generation, [
      { chunkIndex: 0, text: 'east', tokenCount: 1, embedding: [1, 0, 0] },
      { chunkIndex: 1, text: 'north', tokenCount: 1, embedding: [0, 1, 0] },
    ]);
    await vectors.publishFile(scope, {
      fileId: 'f',
      generation,
      attributes: {},
      chunkCount: 2,
      tokenCount: 2,
    });
    // The signature is a MATERIALIZED column: computed for rows inserted through the Distributed table.
    expect(await store.query('SELECT hex(signature) AS s FROM vector_chunks ORDER BY chunk_index')).toEqual([
      { s: '0000000000000001' },
      { s: '0000000000000002' },
    ]);
    for (const strategy of ['exact', 'two_stage'] as const) {
      const hits = await vectors.search(scope, {
        queryEmbeddings: [[0.9, 0.1, 0]],
        maxNumResults: 1,
        strategy,
      });
      expect(hits.map((h) => h.text)).toEqual(['east']);
    }
    expect(await vectors.detachFile(scope, 'f')).toBe(generation);
    expect(await vectors.search(scope, { queryEmbeddings: [[1, 0, 0]], maxNumResults: 1 })).toEqual([]);

    const purge = "DELETE FROM vector_chunks WHERE org_id = 'o'";
    await expect(store.command(purge)).rejects.toThrow(
      /DELETE query is not supported for table svc.vector_chunks/,
    );
    await vectors.purgeStore(scope);
    expect(
      await store.query(
        'SELECT (SELECT count() FROM vector_chunks_local) AS chunks, (SELECT count() FROM vector_store_files_local) AS files',
      ),
    ).toEqual([{ chunks: '0', files: '0' }]);
    await expect(
      clusterStore(store, target).command('ALTER TABLE vector_chunks ADD COLUMN x UInt8'),
    ).rejects.toMatchObject({ kind: 'invalid' });
  });

  it('stops before running a file holding a statement without a cluster form', async () => {
    const migrations = join(dir, 'migrations');
    await mkdir(migrations);
    await writeFile(
      join(migrations, '0001_ok.sql'),
      'ALTER TABLE requests ADD COLUMN IF NOT EXISTS y UInt8;\n',
    );
    await writeFile(
      join(migrations, '0002_view.sql'),
      'CREATE TABLE IF NOT EXISTS m (id String) ENGINE = Memory;\nCREATE VIEW v AS SELECT 1;\n',
    );
    await expect(
      migrateClickHouse(store, { dir: migrations, ddl: 'cluster', cluster: CLUSTER, keeper: false }),
    ).rejects.toThrow(
      /clickhouse migration 0002_view.sql statement 1 has no cluster form: table m: engine Memory/,
    );
    expect(
      await store.query("SELECT name FROM system.columns WHERE table = 'requests' AND name = 'y'"),
    ).toEqual([]);
  });
});
