import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type ClusterTarget,
  clusterTarget,
  databaseOnCluster,
  SHARDING_KEYS,
  toClusterCommand,
  toClusterStatements,
} from './cluster-ddl.js';
import { CLICKHOUSE_MIGRATIONS_DIR, splitStatements } from './migrate.js';

const target: ClusterTarget = { cluster: 'main', database: 'svc', keeper: true };
const noKeeper: ClusterTarget = { ...target, keeper: false };

/** One line per statement, comments dropped, runs of blanks as one space. */
const flat = (sql: string): string =>
  sql
    .replace(/--[^\n]*/g, '')
    .replace(/\s+/g, ' ')
    .trim();

const migrationStatements = readdirSync(CLICKHOUSE_MIGRATIONS_DIR)
  .filter((f) => f.endsWith('.sql'))
  .sort()
  .flatMap((file) =>
    splitStatements(readFileSync(join(CLICKHOUSE_MIGRATIONS_DIR, file), 'utf8')).map((sql) => ({
      file,
      sql,
    })),
  );
const creates = migrationStatements.filter((s) => /^CREATE TABLE/m.test(s.sql));

describe('cluster form of every migration statement', () => {
  it('covers the four files, with a sharding key for each of their tables', () => {
    expect(new Set(migrationStatements.map((s) => s.file)).size).toBe(4);
    const tables = creates.map((s) => /CREATE TABLE IF NOT EXISTS (\w+)/.exec(s.sql)![1]!);
    expect(tables).toHaveLength(9);
    expect(Object.keys(SHARDING_KEYS).sort()).toEqual([...tables, 'svc_schema_migrations'].sort());
  });

  it.each(creates.map((s) => [/CREATE TABLE IF NOT EXISTS (\w+)/.exec(s.sql)![1]!, s.sql]))(
    'makes %s a Replicated _local table on the cluster and a Distributed table over it',
    (name, sql) => {
      const [local, distributed, ...more] = toClusterStatements(sql, target);
      expect(more).toEqual([]);
      // The single-node statement with only its name and engine changed: columns, indexes,
      // PARTITION BY, ORDER BY and SETTINGS are kept as written.
      const engine = /ENGINE = (\w+)(?:\(([^)]*)\))?/.exec(sql)!;
      const path = `'/clickhouse/tables/{shard}/{database}/${name}_local', '{replica}'`;
      const expected = flat(sql)
        .replace(`EXISTS ${name} (`, `EXISTS svc.${name}_local ON CLUSTER 'main' (`)
        .replace(engine[0], `ENGINE = Replicated${engine[1]}(${engine[2] ? `${path}, ${engine[2]}` : path})`);
      expect(flat(local!).replace(/\( /g, '(')).toBe(expected.replace(/\( /g, '('));
      expect(distributed).toBe(
        `CREATE TABLE IF NOT EXISTS svc.${name} ON CLUSTER 'main' AS svc.${name}_local\n` +
          `ENGINE = Distributed('main', 'svc', '${name}_local', ${SHARDING_KEYS[name]})`,
      );
    },
  );

  it('keeps engine parameters and every clause after the engine', () => {
    const [requests] = toClusterStatements(creates[0]!.sql, target);
    expect(requests).toContain(
      "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/requests_local', " +
        "'{replica}', ingested_at)\nPARTITION BY toYYYYMM(started_at)\nORDER BY (org_id, toDate(started_at), request_id)",
    );
    expect(requests).toContain('INDEX requests_batch_id batch_id TYPE bloom_filter(0.01) GRANULARITY 4');
    const chunks = creates.find((s) => s.sql.includes('vector_chunks'))!.sql;
    const [local] = toClusterStatements(chunks, target);
    expect(local).toMatch(
      /ORDER BY \(org_id, project_id, vector_store_id, file_id, generation, chunk_index\)\s+SETTINGS index_granularity = 64$/,
    );
    expect(local).toContain(
      "signature String MATERIALIZED unhex(arrayStringConcat(arrayMap(w -> leftPad(hex(w), 16, '0')",
    );
    expect(local).toContain(
      "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/vector_chunks_local', '{replica}')\n",
    );
  });

  it('puts the materialized view on the _local tables', () => {
    const view = migrationStatements.find((s) => s.sql.includes('MATERIALIZED VIEW'))!.sql;
    const [statement, ...more] = toClusterStatements(view, target);
    expect(more).toEqual([]);
    expect(statement).toMatch(
      /^CREATE MATERIALIZED VIEW IF NOT EXISTS svc\.requests_per_minute_mv ON CLUSTER 'main' TO svc\.requests_per_minute_local AS SELECT\n/,
    );
    expect(statement).toMatch(/\nFROM svc\.requests_local\nGROUP BY minute, org_id,/);
    expect(flat(statement!).replace('svc.requests_local', 'requests')).toContain(
      flat(view.slice(view.indexOf('SELECT'))),
    );
  });

  it('adds a column to the _local tables and then to the Distributed table', () => {
    const alter = migrationStatements.find((s) => s.file === '0002_alt_beta.sql')!.sql;
    expect(toClusterStatements(alter, target)).toEqual([
      "ALTER TABLE svc.requests_local ON CLUSTER 'main' ADD COLUMN IF NOT EXISTS alt_beta Nullable(String) AFTER end_user_id",
      "ALTER TABLE svc.requests ON CLUSTER 'main' ADD COLUMN IF NOT EXISTS alt_beta Nullable(String) AFTER end_user_id",
    ]);
  });

  it('without Keeper keeps the single-node engines and says ON CLUSTER nowhere', () => {
    for (const { sql } of migrationStatements) {
      for (const statement of toClusterStatements(sql, noKeeper))
        expect(statement).not.toMatch(/CLUSTER|Replicated/);
    }
    const [local, distributed] = toClusterStatements(creates[0]!.sql, noKeeper);
    expect(local).toMatch(/^CREATE TABLE IF NOT EXISTS svc\.requests_local \(\n/);
    expect(local).toContain(') ENGINE = ReplacingMergeTree(ingested_at)\nPARTITION BY');
    expect(distributed).toContain("Distributed('main', 'svc', 'requests_local', cityHash64(request_id))");
  });
});

describe('cluster form of other statements', () => {
  const keys = { t: 'cityHash64(id)', u: 'cityHash64(id)' };
  const table = (engine: string, tail = ' ORDER BY id') =>
    `CREATE TABLE t (id String, s String DEFAULT 'ON CLUSTER (') ENGINE = ${engine}${tail}`;

  it('maps every MergeTree engine and keeps its parameters', () => {
    const [local] = toClusterStatements(table('VersionedCollapsingMergeTree(sign, v)'), target, keys);
    expect(local).toBe(
      "CREATE TABLE svc.t_local ON CLUSTER 'main' (id String, s String DEFAULT 'ON CLUSTER (') ENGINE = " +
        "ReplicatedVersionedCollapsingMergeTree('/clickhouse/tables/{shard}/{database}/t_local', '{replica}', sign, v) ORDER BY id",
    );
    expect(toClusterStatements(table('MergeTree()'), target, keys)[0]).toContain(
      "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/t_local', '{replica}') ORDER BY id",
    );
  });

  it('sends column changes to both tables and storage changes to the _local tables only', () => {
    expect(
      toClusterStatements(
        "ALTER TABLE t ADD COLUMN x UInt8 DEFAULT 1, ADD INDEX t_x x TYPE minmax GRANULARITY 1, MODIFY SETTING index_granularity = 64, COMMENT COLUMN x 'a, b'",
        target,
      ),
    ).toEqual([
      "ALTER TABLE svc.t_local ON CLUSTER 'main' ADD COLUMN x UInt8 DEFAULT 1, ADD INDEX t_x x TYPE minmax GRANULARITY 1, MODIFY SETTING index_granularity = 64, COMMENT COLUMN x 'a, b'",
      "ALTER TABLE svc.t ON CLUSTER 'main' ADD COLUMN x UInt8 DEFAULT 1, COMMENT COLUMN x 'a, b'",
    ]);
    expect(toClusterStatements('ALTER TABLE t UPDATE a = 1, b = 2 WHERE id IN (1, 2)', target)).toEqual([
      "ALTER TABLE svc.t_local ON CLUSTER 'main' UPDATE a = 1, b = 2 WHERE id IN (1, 2)",
    ]);
  });

  it('sends mutations to the _local tables, and inserts through the Distributed table unchanged', () => {
    expect(toClusterStatements("DELETE FROM t WHERE id = 'x'", target)).toEqual([
      "DELETE FROM svc.t_local ON CLUSTER 'main' WHERE id = 'x'",
    ]);
    expect(toClusterStatements('OPTIMIZE TABLE t FINAL', target)).toEqual([
      "OPTIMIZE TABLE svc.t_local ON CLUSTER 'main' FINAL",
    ]);
    expect(toClusterStatements('TRUNCATE TABLE IF EXISTS t', target)).toEqual([
      "TRUNCATE TABLE IF EXISTS svc.t_local ON CLUSTER 'main'",
    ]);
    expect(toClusterStatements("-- seed\nINSERT INTO t VALUES ('a')", target)).toEqual([
      "INSERT INTO t VALUES ('a')",
    ]);
  });

  it.each([
    [table('Memory', ''), /engine Memory has no Replicated form/],
    [table('ReplicatedMergeTree'), /engine ReplicatedMergeTree has no Replicated form/],
    [table('MergeTree').replace('TABLE t', 'TABLE t ON CLUSTER x'), /says ON CLUSTER already/],
    [table('MergeTree').replace('TABLE t', 'TABLE db.t'), /a table name without its database/],
    ['CREATE TABLE t AS u', /a table name without its database/],
    [table('MergeTree').replace('TABLE t', 'TABLE v'), /table v has no sharding key/],
    [
      table('ReplacingMergeTree', ' ORDER BY s'),
      /sharding key cityHash64\(id\) reads id, outside its ORDER BY/,
    ],
    [table('MergeTree', ''), /reads id, outside its ORDER BY/],
    ['CREATE MATERIALIZED VIEW m TO t AS SELECT id FROM u JOIN v USING id', /must read one table/],
    [
      'CREATE MATERIALIZED VIEW m TO t AS SELECT id FROM u WHERE id IN (SELECT id FROM v)',
      /must read one table/,
    ],
    ['CREATE MATERIALIZED VIEW m TO t AS SELECT * FROM db.u', /must read one table/],
    [
      'CREATE MATERIALIZED VIEW m ENGINE = MergeTree ORDER BY id AS SELECT id FROM u',
      /name TO table AS SELECT/,
    ],
    ['CREATE VIEW v AS SELECT * FROM t', /no cluster form is known for "CREATE VIEW v"/],
    ['DROP TABLE t', /no cluster form is known for "DROP TABLE t"/],
    ['ALTER TABLE t FREEZE', /ALTER command "FREEZE" has no cluster form/],
    ['ALTER TABLE t DELETE WHERE 1, DROP COLUMN x', /has no cluster form/],
    ["INSERT INTO t VALUES ('a", /unterminated '/],
  ])('refuses %j', (sql, reason) => {
    expect(() => toClusterStatements(sql, target, keys)).toThrow(reason);
  });
});

describe('statements the service runs on a cluster', () => {
  it('sends a lightweight DELETE to the _local tables of every node', () => {
    expect(
      toClusterCommand(
        'DELETE FROM vector_chunks WHERE org_id = {org:String} AND project_id = {project:String}',
        target,
      ),
    ).toBe(
      "DELETE FROM svc.vector_chunks_local ON CLUSTER 'main' WHERE org_id = {org:String} AND project_id = {project:String}",
    );
    expect(toClusterCommand('ALTER TABLE t DELETE WHERE id = 1', target)).toBe(
      "ALTER TABLE svc.t_local ON CLUSTER 'main' DELETE WHERE id = 1",
    );
  });

  it('passes reads and inserts unchanged and refuses schema changes', () => {
    const insert = 'INSERT INTO vector_store_files (org_id) SELECT org_id FROM vector_store_files';
    expect(toClusterCommand(insert, target)).toBe(insert);
    expect(toClusterCommand('SELECT 1', target)).toBe('SELECT 1');
    expect(() => toClusterCommand('ALTER TABLE t ADD COLUMN x UInt8', target)).toThrow(
      /belongs in migrations/,
    );
    expect(() => toClusterCommand('DROP TABLE t', target)).toThrow(/would reach one node/);
  });

  it('refuses a change of rows in a form it does not read, rather than send it to one table', () => {
    for (const statement of [
      'DELETE FROM svc.vector_chunks WHERE 1',
      'TRUNCATE TABLE requests;',
      'TRUNCATE requests SETTINGS x = 1',
      'WITH 1 AS x DELETE FROM vector_chunks WHERE 1',
      'OPTIMIZE TABLE svc.requests FINAL',
    ])
      expect(() => toClusterCommand(statement, target)).toThrow(/a change of rows cluster DDL does not read/);
    expect(toClusterCommand('OPTIMIZE TABLE requests FINAL', target)).toBe(
      "OPTIMIZE TABLE svc.requests_local ON CLUSTER 'main' FINAL",
    );
  });
});

describe('clusterTarget', () => {
  it('needs SVC_CLICKHOUSE_CLUSTER, a name safe to quote', () => {
    expect(() => clusterTarget('svc', undefined)).toThrow(/SVC_CLICKHOUSE_CLUSTER/);
    expect(() => clusterTarget('svc', "a'b")).toThrow(/SVC_CLICKHOUSE_CLUSTER "a'b" is not a cluster name/);
    expect(clusterTarget('svc', '{cluster}')).toEqual({
      cluster: '{cluster}',
      database: 'svc',
      keeper: true,
    });
    expect(databaseOnCluster(target)).toBe("CREATE DATABASE IF NOT EXISTS svc ON CLUSTER 'main'");
  });
});
