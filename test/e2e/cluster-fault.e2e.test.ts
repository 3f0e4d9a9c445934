import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseUsd, subUsd, ZERO_USD } from '../../src/lib/money.js';
import { INGEST_CONSUMER } from '../../src/projections/ingest/options.js';
import { type FakeClickHouse, startFakeClickHouse } from '../fakes/clickhouse-http.js';
import { type FakeOpenAI, reply, stall, stallMidStream, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { TEST_NATS_URL } from '../helpers/env.js';
import { eventually } from '../helpers/gateway-env.js';
import { leftoversAfter, leftoversUnder } from '../helpers/leftovers.js';
import { call, metricSum, sleep } from '../helpers/outside.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { allLedgerLines, allRequestRows, type RequestRow, repeated } from '../helpers/records.js';
import { type ServeProcess, startServe, svcJson, upsertFakeGpt4o } from '../helpers/svc-process.js';

// SPEC 1.3, 2.5, 6 across processes on one machine: two gateways (`svc serve --roles gateway`),
// one process of data roles (control plane, query, ingest with wallet settlement, projector), one
// PostgreSQL server, NATS JetStream, ClickHouse over HTTP. Every request is wallet traffic (a
// platform key only), so each one holds escrow at its gateway and is settled by ingest.
//
// 1. Under load, one gateway is killed with SIGKILL (from the callback in which one of its replies
//    ended) and started again on its data dir: every request answered with a 200 is one request
//    row and one ledger charge of exactly its priced cost; every request whose upstream call began
//    and whose gateway died is one row, recorded as interrupted (not charged, its hold released at
//    0 USD) unless its record was written before the process died; nothing else is recorded.
// 2. Ingest as two processes on the one JetStream consumer: both take work; one killed with
//    SIGKILL, the other takes over what it held unacknowledged (after the consumer's ack_wait),
//    and still every answered request is one row and one charge.
//
// The bus is the machine's NATS JetStream server: this run's streams and subjects have names of
// their own (SVC_NATS_STREAM_PREFIX, SVC_NATS_SUBJECT_PREFIX), so parallel runs never take each
// other's messages, and they are deleted at the end.

const WORKERS = 8;
const STALLED = 4;
const FUNDING = '5.00';
/** Replies through the gateway to be killed, and in all, before the kill. */
const A_BEFORE_KILL = 25;
const ANSWERED_BEFORE_KILL = 80;
/** Replies through the restarted gateway, and in all, before the load of case 1 stops. */
const A_AFTER_RESTART = 30;
const ANSWERED_CASE_1 = 200;
/** Rows each ingest process writes before one is killed; replies after the kill. */
const INGEST_WORK_EACH = 10;
const ANSWERED_AFTER_INGEST_KILL = 60;
/** A load that does not reach its counts in this time stops, and the counts fail the case. */
const LOAD_LIMIT_MS = 60_000;

interface Gateway {
  name: 'a' | 'b';
  dir: string;
  serve: ServeProcess | null;
}

interface Sent {
  phase: string;
  gateway: Gateway['name'];
  /** The process it was sent to (a restarted gateway is a new one); null when it was down. */
  process: ServeProcess | null;
  marker: string;
  stream: boolean;
  /** x-svc-request-id of the reply, when one came. */
  id: string | null;
  status: number | null;
  /** A 200 read to its end: a buffered body with choices, or a stream that reached [DONE]. */
  answered: boolean;
}

let db: TestDatabase;
const run = randomBytes(4).toString('hex');
const STREAMS = `T${run}_`;
let nc: NatsConnection | null = null;
let clickhouse: FakeClickHouse;
let fake: FakeOpenAI;
let env: Record<string, string>;
let dataDir: string;
let data: ServeProcess | null = null;
const ingest: (ServeProcess | null)[] = [];
const dirs: string[] = [];
const running = new Set<ServeProcess>();
const gateways: Record<Gateway['name'], Gateway> = {
  a: { name: 'a', dir: '', serve: null },
  b: { name: 'b', dir: '', serve: null },
};
let boot: { workspace_id: string; org_id: string; project_id: string; api_key: string };
const admin = `admin-${randomBytes(12).toString('hex')}`;
/** Every request sent, by every case: what the outside knows. */
const sent: Sent[] = [];
/** Request ids that reached the upstream, by every case (the fake is reset between cases). */
const reachedUpstream = new Set<string>();

const newDir = async (prefix: string) => {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  dirs.push(dir);
  return dir;
};

/** `svc serve --roles <roles>` on its own data dir, with the cluster's settings. */
const serve = async (dir: string, roles: string, extra: Record<string, string> = {}) => {
  const p = await startServe({ ...env, SVC_DATA_DIR: dir, ...extra }, ['--roles', roles]);
  running.add(p);
  return p;
};
const stopProcess = async (p: ServeProcess | null, signal: NodeJS.Signals) => {
  if (!p) return null;
  const code = await p.stop(signal);
  running.delete(p);
  return code;
};
/** One process per gateway, whatever the host has cores for: the kill takes the whole gateway. */
const startGateway = (g: Gateway) => serve(g.dir, 'gateway', { SVC_SERVE_WORKERS: '1' });

const svc = svcJson(() => ({ ...env, SVC_DATA_DIR: dataDir }));

const chatBody = (stream: boolean, text: string) => ({
  model: 'gpt-4o',
  messages: [{ role: 'user', content: text }],
  max_tokens: 16,
  ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
});

const post = (url: string, body: unknown) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${boot.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });

const answered = async (res: Response, stream: boolean): Promise<boolean> => {
  const text = await res.text();
  return (
    res.status === 200 && (stream ? text.trimEnd().endsWith('data: [DONE]') : text.includes('"choices"'))
  );
};

/** A request as a failed expectation shows it. */
const brief = (s: Sent) => ({ marker: s.marker, gateway: s.gateway, status: s.status, id: s.id });

/** Sends one request and notes what came back. */
const send = async (g: Gateway, phase: string, marker: string, stream: boolean): Promise<Sent> => {
  const target = g.serve;
  const s: Sent = {
    phase,
    gateway: g.name,
    process: target,
    marker,
    stream,
    id: null,
    status: null,
    answered: false,
  };
  sent.push(s);
  if (!target) return s;
  try {
    const res = await post(target.httpUrl, chatBody(stream, marker));
    s.status = res.status;
    s.id = res.headers.get('x-svc-request-id');
    s.answered = (await answered(res, stream)) && s.id !== null;
  } catch {
    // Cut by a kill, or refused while the gateway is down: not answered.
  }
  return s;
};

/**
 * WORKERS clients sending buffered and streamed requests back to back until `done()`; each request
 * goes to the gateway `pick` names (a gateway that is down is skipped, as a load balancer would).
 * `onReply` runs in the callback in which a reply's last byte arrived.
 */
const load = async (o: {
  phase: string;
  pick: (w: number, n: number) => Gateway;
  done: () => boolean;
  onReply?: (s: Sent) => void;
}) => {
  const deadline = Date.now() + LOAD_LIMIT_MS;
  const worker = async (w: number) => {
    for (let n = 0; !o.done() && Date.now() < deadline; n++) {
      let g = o.pick(w, n);
      if (!g.serve) g = gateways[g.name === 'a' ? 'b' : 'a'];
      if (!g.serve) {
        await sleep(20);
        continue;
      }
      const s = await send(g, o.phase, `${o.phase} worker ${w} request ${n}`, (w + n) % 2 === 1);
      if (s.answered) o.onReply?.(s);
      else await sleep(20);
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
};

/** The request ids of the upstream calls since the fake's last reset, noted in `reachedUpstream`. */
const noteUpstreamCalls = (): Set<string> => {
  const ids = new Set<string>();
  for (const headers of fake.arrivals) {
    const id = headers['x-svc-request-id'];
    if (typeof id === 'string') ids.add(id);
  }
  for (const id of ids) reachedUpstream.add(id);
  return ids;
};

const queryUrl = () => data!.httpUrl;
const rows = () => allRequestRows(queryUrl(), admin, boot.org_id);
const ledger = async () =>
  (await allLedgerLines(queryUrl(), admin, boot.workspace_id)).filter((l) => l.kind === 'charge');
const wallet = async () => {
  const r = await call(queryUrl(), 'GET', `/api/workspaces/${boot.workspace_id}/wallet`, { token: admin });
  return r.json as { balance_usd: string; held_usd: string };
};
const activeHolds = async () => {
  const r = await call(queryUrl(), 'GET', `/api/workspaces/${boot.workspace_id}/wallet/holds?limit=200`, {
    token: admin,
  });
  return (r.json as { data: { hold_id: string }[] }).data.map((h) => h.hold_id);
};
/** ChargeSettled events in the event store (the ledger's source), by request id. */
const settlementsInStore = async (): Promise<Map<string, number>> => {
  const { rows: found } = await db.pool.query<{ id: string; n: string }>(
    `SELECT data->>'request_id' AS id, count(*)::text AS n FROM svc_events
      WHERE category = 'wallet' AND type = 'ChargeSettled' GROUP BY 1`,
  );
  return new Map(found.map((r) => [r.id, Number(r.n)]));
};

/** Waits until each id has a request row and a ledger charge; returns what is then listed. */
const recorded = async (ids: readonly string[], timeoutMs: number) => {
  let listed: RequestRow[] = [];
  let charges: Awaited<ReturnType<typeof ledger>> = [];
  const missing = () => {
    const rowIds = new Set(listed.map((r) => r.request_id));
    const chargeIds = new Set(charges.map((l) => l.id));
    return {
      rows: ids.filter((id) => !rowIds.has(id)),
      charges: ids.filter((id) => !chargeIds.has(id)),
    };
  };
  // Twice a second: each look lists every row and every ledger line.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    listed = await rows().catch(() => listed);
    charges = await ledger().catch(() => charges);
    const m = missing();
    if ((m.rows.length === 0 && m.charges.length === 0) || Date.now() > deadline) break;
    await sleep(500);
  }
  expect(missing()).toEqual({ rows: [], charges: [] });
  return { listed, charges };
};

/**
 * What holds whatever the case: the list has each request once and only requests the outside
 * knows of; the ledger has one charge for each listed request whose upstream call began (its hold
 * was placed before it), of its priced cost (0 USD when billing failed), and none for a request
 * it has no row of; the event store agrees; the balance is the funding minus the charges; no
 * recorded request still holds funds.
 */
const expectExactlyOnce = async (listed: RequestRow[], charges: Awaited<ReturnType<typeof ledger>>) => {
  const known = new Set([...sent.flatMap((s) => (s.id ? [s.id] : [])), ...reachedUpstream]);
  const rowIds = listed.map((r) => r.request_id);
  // A gateway killed after a request's upstream call was about to begin (its journal's begun line)
  // and before any byte of it reached the upstream leaves a row the outside has no id of: recorded
  // as interrupted and not charged, at most one for each request cut without a reply.
  const unknown = listed.filter((r) => !known.has(r.request_id));
  const cutWithoutReply = sent.filter((s) => s.process !== null && s.id === null).length;
  expect({
    repeatedRows: repeated(rowIds),
    unknownRows: unknown
      .filter((r) => r.status !== 'interrupted' || r.billing_status !== 'failed')
      .map((r) => r.request_id),
    moreUnknownThanCut: Math.max(0, unknown.length - cutWithoutReply),
  }).toEqual({ repeatedRows: [], unknownRows: [], moreUnknownThanCut: 0 });

  const chargeIds = charges.map((l) => l.id);
  const charged = new Set(chargeIds);
  const rowById = new Map(listed.map((r) => [r.request_id, r]));
  expect({
    repeatedCharges: repeated(chargeIds),
    chargesWithoutRow: chargeIds.filter((id) => !rowById.has(id)),
    heldRowsWithoutCharge: rowIds.filter((id) => reachedUpstream.has(id) && !charged.has(id)),
  }).toEqual({ repeatedCharges: [], chargesWithoutRow: [], heldRowsWithoutCharge: [] });
  const wrongAmounts = charges.flatMap((l) => {
    const row = rowById.get(l.id)!;
    const cost = row.billing_status === 'priced' ? parseUsd(row.total_cost_usd) : ZERO_USD;
    return parseUsd(l.amount_usd) === -cost
      ? []
      : [{ id: l.id, charged: l.amount_usd, status: row.status, cost: row.total_cost_usd }];
  });
  expect(wrongAmounts).toEqual([]);

  const inStore = await settlementsInStore();
  expect({
    settledOnce: chargeIds.filter((id) => inStore.get(id) === 1).length,
    others: [...inStore.keys()].filter((id) => !charged.has(id)),
  }).toEqual({ settledOnce: chargeIds.length, others: [] });

  const spent = charges.reduce((sum, l) => subUsd(sum, parseUsd(l.amount_usd)), ZERO_USD);
  expect((await wallet()).balance_usd).toBe(formatUsd(subUsd(parseUsd(FUNDING), spent)));
  // A gateway killed after its hold and before its upstream call began leaves a hold of a request
  // that never began (released by the expiry sweep); a recorded request never does.
  const holds = await activeHolds();
  expect(holds.filter((id) => rowById.has(id))).toEqual([]);
};

/** JetStream state of the requests consumer and the dead-letter stream. */
const busState = async () => {
  nc ??= await connect({ servers: TEST_NATS_URL });
  const jsm = await nc.jetstreamManager();
  const consumer = await jsm.consumers.info(`${STREAMS}REQUESTS`, INGEST_CONSUMER);
  const dlq = await jsm.streams.info(`${STREAMS}DLQ`);
  return {
    pending: consumer.num_pending,
    ackPending: consumer.num_ack_pending,
    /** Deliveries beyond the first of each message, since the consumer was made (it takes the whole stream). */
    redeliveries: consumer.delivered.consumer_seq - consumer.delivered.stream_seq,
    deadLetters: dlq.state.messages,
  };
};

const writtenRows = (p: ServeProcess) =>
  metricSum(p.httpUrl, /^svc_ingest_clickhouse_durable_writes_total\{table="requests"\}/);

beforeAll(async () => {
  db = await createTestDatabase();
  clickhouse = await startFakeClickHouse({ path: await newDir('svc-cluster-ch-') });
  fake = await startFakeOpenAI();
  dataDir = await newDir('svc-cluster-data-');
  gateways.a.dir = await newDir('svc-cluster-gw-a-');
  gateways.b.dir = await newDir('svc-cluster-gw-b-');
  env = {
    SVC_DATABASE_URL: db.url,
    SVC_NATS_URL: TEST_NATS_URL,
    SVC_NATS_STREAM_PREFIX: STREAMS,
    SVC_NATS_SUBJECT_PREFIX: `t${run}`,
    SVC_CLICKHOUSE_URL: clickhouse.url,
    SVC_ADMIN_TOKEN: admin,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_LOG_LEVEL: 'error',
  };
  data = await serve(dataDir, 'control-plane,query,ingest,projector');
  [gateways.a.serve, gateways.b.serve] = await Promise.all([
    startGateway(gateways.a),
    startGateway(gateways.b),
  ]);
  boot = (await svc([
    'bootstrap',
    '--workspace',
    'Cluster',
    '--org',
    'Cluster Org',
    '--project',
    'Cluster',
  ])) as never;
  await upsertFakeGpt4o(svc, fake.url);
  // A platform key and no connection of the project's own: every request is wallet traffic.
  await svc([
    'keys',
    'platform',
    'set',
    '--provider',
    'openai',
    '--secret',
    'sk-platform',
    '--base-url',
    fake.url,
  ]);
  await svc([
    'wallet',
    'grant',
    '--workspace',
    boot.workspace_id,
    '--amount',
    FUNDING,
    '--reason',
    'cluster fault e2e',
    '--idempotency-key',
    'cluster-fault',
  ]);
  for (const g of [gateways.a, gateways.b])
    await eventually(
      async () => (await send(g, 'warm-up', `warm up ${g.name}`, false)).answered,
      30_000,
      `gateway ${g.name} serving wallet traffic`,
    );
  noteUpstreamCalls();
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([...running].map((p) => p.stop('SIGKILL')));
  for (const dir of dirs)
    for (const p of leftoversUnder(dir)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {}
    }
  // This run's streams, and nothing else of the shared server.
  try {
    nc ??= await connect({ servers: TEST_NATS_URL });
    const jsm = await nc.jetstreamManager();
    for await (const stream of jsm.streams.list())
      if (stream.config.name.startsWith(STREAMS)) await jsm.streams.delete(stream.config.name);
  } catch {}
  await nc?.close().catch(() => {});
  await clickhouse?.close();
  await fake?.close();
  await db?.drop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('SPEC 1.3, 2.5, 6: two gateways, one data process, PostgreSQL and JetStream', () => {
  it('a gateway killed with SIGKILL under load and restarted: every 200 is one row and one charge, every cut call one interrupted row, nothing else', async () => {
    const a = gateways.a;
    const killed = a.serve!;
    fake.reset();
    // Streams the upstream holds after two chunks, through the gateway to be killed: in flight
    // when it dies, whatever the timing.
    fake.enqueue(...Array.from({ length: STALLED }, () => stallMidStream(2, 120_000)));
    const stalledReaders: ReadableStreamDefaultReader<Uint8Array>[] = [];
    const stalled: string[] = [];
    for (let i = 0; i < STALLED; i++) {
      const res = await post(killed.httpUrl, chatBody(true, `stalled ${i}`));
      expect(res.status).toBe(200);
      const id = res.headers.get('x-svc-request-id')!;
      sent.push({
        phase: 'stalled',
        gateway: 'a',
        process: killed,
        marker: `stalled ${i}`,
        stream: true,
        id,
        status: 200,
        answered: false,
      });
      stalled.push(id);
      const reader = res.body!.getReader();
      await reader.read();
      stalledReaders.push(reader);
    }
    expect(fake.queued).toBe(0);
    // Every other call spends a little while upstream, so the gateway dies with calls of both kinds
    // mid-way: buffered ones waiting for the upstream's answer, streams between two chunks.
    fake.setDefault(stall(15, reply({ chunkDelayMs: 3 })));

    let answeredByA = 0;
    let total = 0;
    let afterRestart = 0;
    let restarted: Promise<void> | null = null;
    await load({
      phase: 'case 1',
      pick: (w, n) => gateways[(w + n) % 2 === 0 ? 'a' : 'b'],
      done: () => restarted !== null && afterRestart >= A_AFTER_RESTART && total >= ANSWERED_CASE_1,
      onReply: (s) => {
        total++;
        if (s.gateway !== 'a') return;
        if (s.process !== killed) afterRestart++;
        else answeredByA++;
        if (restarted || answeredByA < A_BEFORE_KILL || total < ANSWERED_BEFORE_KILL) return;
        // In the callback of a reply through it: its other requests are mid-way.
        killed.child.kill('SIGKILL');
        a.serve = null;
        restarted = (async () => {
          await stopProcess(killed, 'SIGKILL');
          // The same data dir: the new process adopts the journal of the killed one.
          a.serve = await startGateway(a);
        })();
      },
    });
    await restarted;
    for (const r of stalledReaders) await r.cancel().catch(() => {});
    const calls = noteUpstreamCalls();
    expect(restarted).not.toBeNull();
    expect(answeredByA).toBeGreaterThanOrEqual(A_BEFORE_KILL);
    expect(afterRestart).toBeGreaterThanOrEqual(A_AFTER_RESTART);
    expect(total).toBeGreaterThanOrEqual(ANSWERED_CASE_1);
    const mine = sent.filter((s) => s.phase === 'case 1' || s.phase === 'stalled');
    // The gateway that lived answered everything sent to it.
    expect(mine.filter((s) => s.gateway === 'b' && !s.answered).map(brief)).toEqual([]);
    // The restarted gateway took the killed one's journal: none of its segments is left.
    await eventually(
      async () =>
        !(await readdir(join(a.dir, 'journal'))).some((f) => f.startsWith(`requests-${killed.child.pid}-`)),
      30_000,
      'the killed gateway journal adopted',
    );

    const answeredIds = mine.filter((s) => s.answered).map((s) => s.id!);
    const cut = [...calls].filter((id) => !answeredIds.includes(id) && !stalled.includes(id));
    for (const id of stalled) expect(calls.has(id), `stalled ${id} reached the upstream`).toBe(true);
    const warmUps = sent.filter((s) => s.phase === 'warm-up' && s.answered).map((s) => s.id!);
    const { listed, charges } = await recorded([...warmUps, ...answeredIds, ...stalled, ...cut], 60_000);
    const row = new Map(listed.map((r) => [r.request_id, r]));
    const shape = (id: string) => {
      const r = row.get(id)!;
      return { id, status: r.status, http_status: r.http_status, billing: r.billing_status };
    };
    expect(
      answeredIds
        .map(shape)
        .filter((r) => r.status !== 'success' || r.http_status !== 200 || r.billing !== 'priced'),
    ).toEqual([]);
    expect(answeredIds.filter((id) => !(parseUsd(row.get(id)!.total_cost_usd) > 0n))).toEqual([]);
    expect(stalled.map(shape)).toEqual(
      stalled.map((id) => ({ id, status: 'interrupted', http_status: 500, billing: 'failed' })),
    );
    // A call cut by the kill is interrupted, unless its record was written (before the last bytes
    // of its reply) and the process died before those bytes left: then it is a success, charged.
    expect(
      cut
        .map(shape)
        .filter(
          (r) =>
            !(r.status === 'interrupted' && r.billing === 'failed') &&
            !(r.status === 'success' && r.billing === 'priced'),
        ),
    ).toEqual([]);
    await expectExactlyOnce(listed, charges);
    const bus = await busState();
    expect(bus.deadLetters).toBe(0);
    console.info(
      `cluster-fault case 1: ${answeredIds.length} answered (${answeredByA} through the killed gateway before its death, ${afterRestart} after its restart), ${stalled.length} stalled and ${cut.length} other calls cut (${cut.filter((id) => row.get(id)!.status === 'success').length} recorded as success)`,
    );
  }, 150_000);

  it('two ingest processes on the one consumer share the work; one killed with SIGKILL loses nothing and doubles nothing', async () => {
    // The data process gives its ingest role to two processes of their own.
    expect(await stopProcess(data, 'SIGTERM')).toBe(0);
    data = await serve(dataDir, 'control-plane,query,projector');
    const ingestDirs = [await newDir('svc-cluster-ingest-0-'), await newDir('svc-cluster-ingest-1-')];
    for (const dir of ingestDirs) ingest.push(await serve(dir, 'ingest'));
    const [victim, survivor] = ingest as [ServeProcess, ServeProcess];
    fake.reset();

    const before = await busState();
    const base = [await writtenRows(victim), await writtenRows(survivor)] as const;
    const written = { victim: 0, survivor: 0 };
    let bothWorked = false;
    let killedAt = -1;
    let total = 0;
    // Both processes write rows while the load runs; then one is killed (below, from a reply).
    const watch = (async () => {
      const deadline = Date.now() + LOAD_LIMIT_MS;
      while (!bothWorked && Date.now() < deadline) {
        written.victim = (await writtenRows(victim)) - base[0];
        written.survivor = (await writtenRows(survivor)) - base[1];
        bothWorked = written.victim >= INGEST_WORK_EACH && written.survivor >= INGEST_WORK_EACH;
        if (!bothWorked) await sleep(200);
      }
    })();
    await load({
      phase: 'case 2',
      pick: (w, n) => gateways[(w + n) % 2 === 0 ? 'a' : 'b'],
      done: () => killedAt >= 0 && total - killedAt >= ANSWERED_AFTER_INGEST_KILL,
      onReply: () => {
        total++;
        if (killedAt >= 0 || !bothWorked) return;
        killedAt = total;
        victim.child.kill('SIGKILL');
      },
    });
    await watch;
    expect({ bothWorked, killed: killedAt > 0 }).toEqual({ bothWorked: true, killed: true });
    const survivorAtKill = written.survivor;
    await stopProcess(victim, 'SIGKILL');
    ingest[0] = null;
    noteUpstreamCalls();

    const mine = sent.filter((s) => s.phase === 'case 2');
    expect(mine.filter((s) => !s.answered).map(brief)).toEqual([]);
    const ids = mine.map((s) => s.id!);
    // What the killed process held unacknowledged comes back after the consumer's ack_wait (30 s).
    const waited = Date.now();
    const { listed, charges } = await recorded(ids, 90_000);
    const waitedMs = Date.now() - waited;
    const row = new Map(listed.map((r) => [r.request_id, r]));
    expect(
      ids.filter((id) => row.get(id)!.status !== 'success' || row.get(id)!.billing_status !== 'priced'),
    ).toEqual([]);
    await expectExactlyOnce(listed, charges);
    await eventually(
      async () => {
        const b = await busState();
        return b.pending === 0 && b.ackPending === 0;
      },
      30_000,
      'the consumer caught up',
    );
    const after = await busState();
    const survivorRows = (await writtenRows(survivor)) - base[1];
    // The survivor wrote on after the kill, and delivered again what the killed process held.
    expect(survivorRows).toBeGreaterThan(survivorAtKill);
    expect(after.redeliveries - before.redeliveries).toBeGreaterThan(0);
    expect(after.deadLetters).toBe(0);
    console.info(
      `cluster-fault case 2: ${ids.length} answered; rows written: ${written.victim} by the killed ingest process before its death (as last seen), ${survivorRows} by the survivor (${survivorAtKill} before the kill); ${after.redeliveries - before.redeliveries} redeliveries; all recorded ${waitedMs} ms after the load`,
    );
    expect(leftoversUnder(ingestDirs[0]!)).toEqual([]);
  }, 150_000);

  it('SIGTERM stops every process of the cluster and leaves none behind', async () => {
    const codes = await Promise.all(
      [data, gateways.a.serve, gateways.b.serve, ...ingest].map((p) => stopProcess(p, 'SIGTERM')),
    );
    expect(codes.filter((c) => c !== null && c !== 0)).toEqual([]);
    data = null;
    gateways.a.serve = null;
    gateways.b.serve = null;
    for (const dir of dirs) expect(await leftoversAfter(dir, 15_000)).toEqual([]);
    // A clean stop lets go of each gateway's journal: everything in it is on the bus.
    for (const g of [gateways.a, gateways.b]) expect(await readdir(join(g.dir, 'journal'))).toEqual([]);
  }, 60_000);
});
