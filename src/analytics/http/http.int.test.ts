import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@clickhouse/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyticsContract, HOSTILE_STRINGS } from '../../../test/contract/analytics.contract.js';
import { type FakeClickHouse, startFakeClickHouse } from '../../../test/fakes/clickhouse-http.js';
import { AnalyticsError } from '../port.js';
import { HttpAnalyticsStore } from './store.js';

analyticsContract(
  'ClickHouse over HTTP (@clickhouse/client against the chdb-backed test server)',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-ch-http-contract-'));
    const server = await startFakeClickHouse({ path: dir });
    const admin = await HttpAnalyticsStore.open({ url: server.url });
    return {
      open: (database) => HttpAnalyticsStore.open({ url: server.url, database, createDatabase: true }),
      drop: (database) => admin.command(`DROP DATABASE IF EXISTS ${database} SYNC`),
      cleanup: async () => {
        await admin.close();
        await server.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
);

describe('HTTP adapter and the test server', () => {
  let dir: string;
  let server: FakeClickHouse;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-ch-http-'));
    server = await startFakeClickHouse({ path: dir });
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers /ping and reports errors the way ClickHouse does', async () => {
    expect(await (await fetch(`${server.url}/ping`)).text()).toBe('Ok.\n');
    const res = await fetch(`${server.url}/?query=${encodeURIComponent('SELECT * FROM no_such_table')}`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-clickhouse-exception-code')).toBe('60');
    expect(await res.text()).toMatch(/^Code: 60\. DB::Exception: .*\(UNKNOWN_TABLE\) \(version [\d.]+\)\n$/s);
    const readonly = await fetch(
      `${server.url}/?query=${encodeURIComponent('CREATE TABLE t (x UInt8) ENGINE = Memory')}`,
    );
    expect(readonly.status).toBe(403);
    expect(readonly.headers.get('x-clickhouse-exception-code')).toBe('164');
  });

  it('speaks gzip both ways, multipart parameters and the JSON format, as the client can send them', async () => {
    const client = createClient({
      url: server.url,
      compression: { request: true, response: true },
      use_multipart_params: true,
    });
    try {
      await client.command({
        query: 'CREATE TABLE IF NOT EXISTS zipped (s String) ENGINE = MergeTree ORDER BY s',
      });
      await client.insert({
        table: 'zipped',
        values: HOSTILE_STRINGS.map((s) => ({ s })),
        format: 'JSONEachRow',
      });
      const result = await client.query({
        query: 'SELECT s FROM zipped WHERE s IN {values:Array(String)} ORDER BY s',
        query_params: { values: HOSTILE_STRINGS },
        format: 'JSONEachRow',
      });
      const got = (await result.json<{ s: string }>()).map((r) => r.s);
      expect(got).toEqual((await sortedLikeClickHouse(client, HOSTILE_STRINGS)).map(String));
      expect(got).toHaveLength(HOSTILE_STRINGS.length);

      const single = await client.query({ query: 'SELECT count() AS n FROM zipped', format: 'JSON' });
      expect(await single.json()).toMatchObject({ data: [{ n: String(HOSTILE_STRINGS.length) }], rows: 1 });
    } finally {
      await client.close();
    }
  });

  it('fails fast with a retryable error when the server is unreachable', async () => {
    const port = await closedPort();
    const store = await HttpAnalyticsStore.open({ url: `http://127.0.0.1:${port}`, requestTimeoutMs: 2_000 });
    try {
      const started = Date.now();
      const err = await store.query('SELECT 1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AnalyticsError);
      expect(err).toMatchObject({ kind: 'unavailable', retryable: true });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(await store.health()).toMatchObject({ ok: false, adapter: 'clickhouse' });
    } finally {
      await store.close();
    }
  });
});

/** Byte order as the engine sorts strings, so the comparison does not depend on JS collation. */
const sortedLikeClickHouse = async (client: ReturnType<typeof createClient>, values: string[]) => {
  const result = await client.query({
    query: 'SELECT arraySort({v:Array(String)}) AS v',
    query_params: { v: values },
    format: 'JSONEachRow',
  });
  const [row] = await result.json<{ v: string[] }>();
  return row?.v ?? [];
};

/** A port nothing listens on: bound once, then released. */
const closedPort = async (): Promise<number> => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
};
