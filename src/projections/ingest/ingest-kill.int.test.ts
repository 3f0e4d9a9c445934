import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draftFor } from '../../../test/fixtures/ingest/ingest.fixtures.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { ChdbAnalyticsStore } from '../../analytics/chdb/store.js';
import { RequestRecordPublisher } from '../../events/envelopes/publish.js';
import { PostgresBus } from '../../events/postgres/bus.js';

// The consumer killed mid-batch (SIGKILL right after a batch's rows were
// inserted, before read-back, audit or ack) and restarted loses no row and duplicates none after
// dedupe. The consumers run as child processes; this process opens the chdb folder only after
// both have exited, since chdb binds one data folder per process.

const CHILD = fileURLToPath(new URL('../../../test/fixtures/ingest/kill-child.fixtures.ts', import.meta.url));
const TOTAL = 600;

let db: TestDatabase;
let dir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'svc-ingest-kill-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

const runChild = (env: Record<string, string>) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
        env: { ...process.env, ...env },
        stdio: 'pipe',
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
    },
  );

describe('ingest consumer killed mid-batch', () => {
  it('restarts without losing or duplicating a row', { timeout: 120_000 }, async () => {
    const prefix = 'kill';
    const bus = new PostgresBus(db.pool, { connectionString: db.url, subjectPrefix: prefix });
    await bus.ensureStreams();
    const publisher = await RequestRecordPublisher.open({ bus, dataDir: join(dir, 'spool') });
    for (let i = 0; i < TOTAL; i++) {
      // Every tenth request carries a chunked body, so chunks are in flight when the kill lands.
      const response = i % 10 === 0 ? randomBytes(300_000) : `reply ${i}`;
      publisher.record(draftFor('k', i), { request: `{"n":${i}}`, response });
    }
    await publisher.flush();
    await publisher.close();
    await bus.close();

    const env = {
      DATABASE_URL: db.url,
      PREFIX: prefix,
      CHDB_PATH: join(dir, 'clickhouse'),
      OBJECTS_ROOT: join(dir, 'objects'),
      CONSUMER: 'ingest_kill',
      EXPECT_ROWS: String(TOTAL),
      KILLED_BATCH_FILE: join(dir, 'killed.json'),
    };
    const killed = await runChild({ ...env, KILL_AFTER_INSERTS: '3' });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const killedBatch = JSON.parse(await readFile(env.KILLED_BATCH_FILE, 'utf8')) as string[];
    expect(killedBatch.length).toBeGreaterThan(0);
    const unsettled = await db.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM svc_bus_deliveries WHERE consumer = 'ingest_kill'",
    );
    expect(Number(unsettled.rows[0]!.n)).toBeGreaterThan(0);

    const restarted = await runChild(env);
    expect(restarted.code, restarted.stderr).toBe(0);
    const { logged, suppressed } = JSON.parse(restarted.stdout.trim().split('\n').at(-1)!) as {
      logged: string[];
      suppressed: number;
    };
    expect(suppressed).toBe(0);
    // The killed batch was committed and never acked: the restarted consumer received it again.
    expect(killedBatch.every((id) => logged.includes(id))).toBe(true);

    const store = await ChdbAnalyticsStore.open({ path: env.CHDB_PATH, database: 'svc' });
    try {
      const one = async (sql: string) => Number((await store.query<{ n: string }>(sql))[0]!.n);
      expect(await one('SELECT count() AS n FROM requests FINAL')).toBe(TOTAL);
      expect(await one('SELECT uniqExact(request_id) AS n FROM requests')).toBe(TOTAL);
      expect(await one('SELECT count() AS n FROM request_usage_lines FINAL')).toBe(TOTAL * 3);
      expect(
        await one(
          'SELECT count() AS n FROM (SELECT request_id FROM requests FINAL GROUP BY request_id HAVING count() > 1)',
        ),
      ).toBe(0);
      // Every chunked body was packed in full despite the kill.
      expect(
        await one(
          "SELECT count() AS n FROM requests FINAL WHERE res_body_byte_count = 300000 AND res_body_pack != ''",
        ),
      ).toBe(TOTAL / 10);
    } finally {
      await store.close();
    }
  });
});
