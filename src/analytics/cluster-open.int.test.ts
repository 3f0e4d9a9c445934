import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeClickHouse, startFakeClickHouse } from '../../test/fakes/clickhouse-http.js';
import { openAnalytics } from '../cli/storage.js';
import { configSchema } from '../config/config.js';

/**
 * SVC_CLICKHOUSE_DDL=cluster from the configuration to the server. The server here is the chdb-backed
 * test server, which defines no cluster: that the migration fails there on the cluster it names
 * shows its first statement (CREATE DATABASE) was cluster DDL (the DDL itself runs in cluster.int.test.ts).
 */
describe('openAnalytics with SVC_CLICKHOUSE_DDL=cluster', () => {
  let dir: string;
  let server: FakeClickHouse;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-ch-cluster-open-'));
    server = await startFakeClickHouse({ path: join(dir, 'server') });
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const open = (env: Record<string, string>) =>
    openAnalytics(
      configSchema.parse({ SVC_DATA_DIR: join(dir, 'data'), SVC_CLICKHOUSE_DDL: 'cluster', ...env }),
    );

  it('needs a ClickHouse server and a cluster name', async () => {
    await expect(open({ SVC_CLICKHOUSE_CLUSTER: 'main' })).rejects.toThrow(
      /SVC_CLICKHOUSE_DDL=cluster needs a ClickHouse server: set SVC_CLICKHOUSE_URL/,
    );
    await expect(open({ SVC_CLICKHOUSE_URL: server.url })).rejects.toThrow(
      /analytics migrations failed: SVC_CLICKHOUSE_DDL=cluster needs SVC_CLICKHOUSE_CLUSTER/,
    );
  });

  it('creates the database on the named cluster before any table', async () => {
    await expect(open({ SVC_CLICKHOUSE_URL: server.url, SVC_CLICKHOUSE_CLUSTER: 'main' })).rejects.toThrow(
      /cannot open analytics \(ClickHouse over HTTP\): Requested cluster 'main' not found/,
    );
  });
});
