import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage } from '../../src/events/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { type Scenario, scenario, sharedChdb, waitFor } from '../fixtures/ingest/ingest.fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { runSvc } from '../helpers/svc-process.js';

// `svc dlq list` shows the ingest consumer's dead letters and `svc dlq replay`
// republishes their payloads onto svc.requests.<org_id>.<request_id> (embedded default bus).

let db: TestDatabase;
let chdb: Awaited<ReturnType<typeof sharedChdb>>;
let bus: PostgresBus;
let s: Scenario;
let dataDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  chdb = await sharedChdb();
  dataDir = await mkdtemp(join(tmpdir(), 'svc-dlq-cli-'));
  bus = new PostgresBus(db.pool, { connectionString: db.url, pollMs: 100 });
  await bus.ensureStreams();
  s = await scenario(bus, await chdb.open(), 'ingest');
});
afterAll(async () => {
  await s?.cleanup();
  await bus?.close();
  await chdb?.close();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const svc = async (args: string[]) => {
  const r = await runSvc(args, { SVC_DATABASE_URL: db.url, SVC_DATA_DIR: dataDir, SVC_NATS_URL: '' });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as unknown;
};

describe('svc dlq', () => {
  it('lists dead letters by reason and replays them onto the request subject', async () => {
    await bus.publish('svc.requests.org_cli.req_cli_1', 'not json', { messageId: 'req_cli_1' });
    await bus.publish(
      'svc.requests.org_cli.req_cli_2',
      '{"schema_version":1,"org_id":"org_cli","request_id":"req_cli_2"}',
      {
        messageId: 'req_cli_2',
      },
    );
    await s.consumer();

    let listed: { reason: string; request_id: string; replay_to: string }[] = [];
    await waitFor(
      async () => {
        listed = (await svc(['dlq', 'list', '--json'])) as typeof listed;
        return listed.length === 2;
      },
      30_000,
      'two dead letters',
    );
    expect(listed.map((l) => [l.reason, l.request_id, l.replay_to])).toEqual([
      ['invalid_event', 'req_cli_1', 'svc.requests.org_cli.req_cli_1'],
      ['malformed_row', 'req_cli_2', 'svc.requests.org_cli.req_cli_2'],
    ]);
    expect(await svc(['dlq', 'list', '--reason', 'malformed_row', '--json'])).toHaveLength(1);

    const seen: BusMessage[] = [];
    const watcher = await bus.consume(
      'dlq_cli_watch',
      'svc.requests.org_cli.>',
      async (m) => {
        seen.push(m);
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 3 },
    );
    try {
      const summary = await svc(['dlq', 'replay', '--reason', 'malformed_row', '--json']);
      expect(summary).toMatchObject({ replayed: 1, failed: 0, byReason: { malformed_row: 1 } });
      await waitFor(
        async () => seen.some((m) => m.messageId.startsWith('req_cli_2:replay:')),
        10_000,
        'replayed',
      );
      const replayed = seen.find((m) => m.messageId.startsWith('req_cli_2:replay:'))!;
      expect(replayed.subject).toBe('svc.requests.org_cli.req_cli_2');
    } finally {
      await watcher.close();
    }
    const help = await runSvc(['dlq', 'replay', '--help']);
    expect(help.stdout).toContain('--reason');
  });
});
