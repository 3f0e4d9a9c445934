import { describe, expect, it } from 'vitest';
import { migrateClickHouse, splitStatements } from './migrate.js';
import type { AnalyticsStore } from './port.js';

describe('splitStatements', () => {
  it('splits on a semicolon ending a line and drops comment-only chunks', () => {
    const sql = [
      '-- 0001: two tables',
      'CREATE TABLE a (x UInt8) ENGINE = MergeTree ORDER BY x;',
      '',
      'CREATE TABLE b (',
      "  s String DEFAULT 'a;b'",
      ') ENGINE = MergeTree ORDER BY s',
      ';',
      '-- trailing comment',
    ].join('\n');
    expect(splitStatements(sql)).toEqual([
      '-- 0001: two tables\nCREATE TABLE a (x UInt8) ENGINE = MergeTree ORDER BY x',
      "CREATE TABLE b (\n  s String DEFAULT 'a;b'\n) ENGINE = MergeTree ORDER BY s",
    ]);
  });

  it('takes a last statement without a semicolon and ignores an empty file', () => {
    expect(splitStatements('SELECT 1;\r\nSELECT 2')).toEqual(['SELECT 1', 'SELECT 2']);
    expect(splitStatements('\n-- nothing\n')).toEqual([]);
  });
});

/** Records what a migration sends; answers every query with `rows`. */
const recording = (adapter: 'chdb' | 'clickhouse', rows: Record<string, unknown>[] = []) => {
  const sent: string[] = [];
  const store: AnalyticsStore = {
    adapter,
    database: 'svc',
    insert: async (table) => {
      sent.push(`insert ${table}`);
    },
    query: async <T>(sql: string) => {
      sent.push(sql);
      return rows as T[];
    },
    command: async (sql) => {
      sent.push(sql);
    },
    health: async () => ({ ok: true, adapter }),
    close: async () => {},
  };
  return { store, sent };
};

describe('migrateClickHouse on a cluster', () => {
  it('runs the cluster form of every statement, after the database and the records table', async () => {
    const { store, sent } = recording('clickhouse');
    const result = await migrateClickHouse(store, { ddl: 'cluster', cluster: 'main' });
    expect(result.applied).toHaveLength(4);
    expect(sent[1]).toBe("CREATE DATABASE IF NOT EXISTS svc ON CLUSTER 'main'");
    expect(sent[2]).toMatch(
      /^CREATE TABLE IF NOT EXISTS svc\.svc_schema_migrations_local ON CLUSTER 'main' \([\s\S]*ReplicatedReplacingMergeTree\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/svc_schema_migrations_local', '\{replica\}'\) ORDER BY name$/,
    );
    expect(sent[3]).toContain("Distributed('main', 'svc', 'svc_schema_migrations_local', cityHash64(name))");
    expect(sent[4]).toBe('SELECT name FROM svc_schema_migrations FINAL');
    expect(sent.filter((s) => s.startsWith('CREATE TABLE') && !s.includes("ON CLUSTER 'main'"))).toEqual([]);
    expect(sent.filter((s) => s.startsWith('INSERT INTO svc_schema_migrations'))).toHaveLength(4);
    expect(sent).not.toContain('insert svc_schema_migrations');
  });

  it('needs a cluster name and a server, and refuses a database of the other mode', async () => {
    const server = recording('clickhouse');
    await expect(migrateClickHouse(server.store, { ddl: 'cluster' })).rejects.toThrow(
      /needs SVC_CLICKHOUSE_CLUSTER/,
    );
    const chdb = recording('chdb');
    await expect(migrateClickHouse(chdb.store, { ddl: 'cluster', cluster: 'main' })).rejects.toThrow(
      /needs a ClickHouse server \(SVC_CLICKHOUSE_URL\)/,
    );
    expect([...server.sent, ...chdb.sent]).toEqual([]);
    const single = recording('clickhouse', [{ engine: 'ReplacingMergeTree' }]);
    await expect(migrateClickHouse(single.store, { ddl: 'cluster', cluster: 'main' })).rejects.toThrow(
      /database svc was migrated for one server: set SVC_CLICKHOUSE_DDL=single/,
    );
    expect(single.sent).toHaveLength(1);
  });
});
