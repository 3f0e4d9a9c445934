import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, stallMidStream, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { eventually } from '../helpers/gateway-env.js';
import { leftoversAfter, leftoversUnder } from '../helpers/leftovers.js';
import { call, missingRows, requestRow } from '../helpers/outside.js';
import { type ServeProcess, startServe, svcJson, upsertFakeGpt4o } from '../helpers/svc-process.js';

// SPEC 1.3, 2.5, 6: after `kill -9` of `svc serve` on the embedded default,
// every request that was answered is recorded exactly once, and every request whose upstream call
// began and whose process died is recorded as interrupted; the restarted service adopts the
// embedded PostgreSQL of the killed one and stops it on SIGTERM.
//
// The load keeps requests finishing all the time, and the kill is sent from the callback in which
// a reply's last byte arrived: the records of the replies that ended in the last milliseconds are
// then in the process, and only what the process wrote before its replies ended can survive it.
// Streams held mid-way by the upstream are in flight when the process dies, whatever the timing.

const STALLED = 6;
const WORKERS = 8;
const ANSWERED_BEFORE_KILL = 120;

let dataDir: string;
let env: Record<string, string>;
let fake: FakeOpenAI;
let serve: ServeProcess | null = null;
let boot: { org_id: string; project_id: string; api_key: string };
const admin = `admin-${randomBytes(12).toString('hex')}`;

const svc = svcJson(() => env);

const chatBody = (stream: boolean, text: string) => ({
  model: 'gpt-4o',
  messages: [{ role: 'user', content: text }],
  max_tokens: 16,
  ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
});

const post = (body: unknown) =>
  fetch(`${serve!.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${boot.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** A reply read to its end: a buffered 200 body, or a stream that reached `data: [DONE]`. */
const answered = async (res: Response, stream: boolean): Promise<boolean> => {
  const text = await res.text();
  return (
    res.status === 200 && (stream ? text.trimEnd().endsWith('data: [DONE]') : text.includes('"choices"'))
  );
};

beforeAll(async () => {
  dataDir = await realpath(await mkdtemp(join(tmpdir(), 'svc-crash-')));
  await chmod(dataDir, 0o755);
  // The embedded default: no database URL, so `svc serve` runs PostgreSQL from the data dir.
  env = {
    SVC_DATA_DIR: dataDir,
    SVC_DATABASE_URL: '',
    SVC_ADMIN_TOKEN: admin,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_LOG_LEVEL: 'fatal',
  };
  fake = await startFakeOpenAI();
  serve = await startServe(env);
  boot = (await svc([
    'bootstrap',
    '--workspace',
    'Crash',
    '--org',
    'Crash Org',
    '--project',
    'Crash',
  ])) as never;
  await upsertFakeGpt4o(svc, fake.url);
  await svc([
    'connections',
    'create',
    '--project',
    boot.project_id,
    '--provider',
    'openai',
    '--name',
    'primary',
    '--secret',
    'sk-x',
  ]);
  await eventually(
    async () => (await post(chatBody(false, 'warm up'))).status === 200,
    20_000,
    'the gateway serves the project',
  );
}, 60_000);

afterAll(async () => {
  await serve?.stop('SIGKILL');
  for (const p of leftoversUnder(dataDir)) {
    try {
      process.kill(p.pid, p.kind === 'svc' ? 'SIGKILL' : 'SIGINT');
    } catch {}
  }
  await leftoversAfter(dataDir, 15_000);
  await fake?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('kill -9 of svc serve on the embedded default', () => {
  it('records every answered request once and every cut stream as interrupted; the restart leaves no PostgreSQL', async () => {
    const killed = serve!;
    // Streams the upstream holds after two chunks, so they are mid-way when the process dies.
    fake.reset();
    fake.enqueue(...Array.from({ length: STALLED }, () => stallMidStream(2, 120_000)));
    const stalled: string[] = [];
    const stalledBodies = await Promise.all(
      Array.from({ length: STALLED }, async () => {
        const res = await post(chatBody(true, 'hold me'));
        stalled.push(res.headers.get('x-svc-request-id')!);
        const reader = res.body!.getReader();
        await reader.read();
        return reader;
      }),
    );
    expect(fake.queued).toBe(0);

    // Buffered and streamed requests back to back until the kill; the kill goes out in the callback
    // of a reply whose last byte just arrived.
    const done: string[] = [];
    let stop = false;
    const worker = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const stream = (w + n) % 2 === 1;
        try {
          const res = await post(chatBody(stream, `worker ${w} request ${n}`));
          const id = res.headers.get('x-svc-request-id');
          if (!(await answered(res, stream)) || !id) continue;
          done.push(id);
          if (done.length >= ANSWERED_BEFORE_KILL && !stop) {
            stop = true;
            killed.child.kill('SIGKILL');
          }
        } catch {
          // Cut by the kill: not answered.
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    await killed.stop('SIGKILL');
    for (const r of stalledBodies) await r.cancel().catch(() => {});
    const reachedUpstream = fake.requests
      .map((r) => r.headers['x-svc-request-id'])
      .filter((id): id is string => typeof id === 'string');
    expect(new Set(stalled).size).toBe(STALLED);
    for (const id of stalled) expect(reachedUpstream).toContain(id);

    // The restart adopts the killed service's PostgreSQL and what it left on disk.
    const postmasters = () => leftoversUnder(dataDir).filter((p) => p.kind === 'postgres');
    expect(postmasters().length).toBeGreaterThan(0);
    serve = await startServe(env);
    const gw = { admin, serve };

    const recorded = [...new Set([...done, ...reachedUpstream])];
    const missing = await missingRows(gw, boot.org_id, recorded, 30_000);
    expect({
      answered: done.length,
      missingAnswered: done.filter((id) => missing.includes(id)),
      missingCutStreams: stalled.filter((id) => missing.includes(id)),
      missingOtherUpstreamCalls: missing.filter((id) => !done.includes(id) && !stalled.includes(id)),
    }).toEqual({
      answered: done.length,
      missingAnswered: [],
      missingCutStreams: [],
      missingOtherUpstreamCalls: [],
    });
    for (const id of done) {
      const row = (await requestRow(gw, boot.org_id, id))!;
      expect({ id, status: row.status, http_status: row.http_status }).toEqual({
        id,
        status: 'success',
        http_status: 200,
      });
    }
    for (const id of stalled) {
      const row = (await requestRow(gw, boot.org_id, id))!;
      expect({ id, status: row.status, billing: row.billing_status, cost: row.total_cost_usd }).toEqual({
        id,
        status: 'interrupted',
        billing: 'failed',
        cost: '0',
      });
    }
    // Exactly once: every request id is one row of the list.
    const list = await call(serve.httpUrl, 'GET', `/api/requests?org_id=${boot.org_id}&limit=500`, {
      token: admin,
    });
    expect(list.status, list.text.slice(0, 300)).toBe(200);
    const ids = (list.json!.data as { request_id: string }[]).map((r) => r.request_id);
    expect({ listed: ids.length, distinct: new Set(ids).size }).toEqual({
      listed: list.json!.total,
      distinct: ids.length,
    });
    for (const id of recorded) expect(ids.filter((i) => i === id)).toHaveLength(1);

    // No embedded PostgreSQL outlives its service, an adopted one included; a clean stop leaves no
    // journal behind (everything in it is on the bus).
    expect(await serve.stop('SIGTERM')).toBe(0);
    serve = null;
    expect(await leftoversAfter(dataDir, 15_000)).toEqual([]);
    expect(await readdir(join(dataDir, 'journal'))).toEqual([]);
  }, 90_000);
});
