import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleDraft } from '../../../test/fixtures/envelopes/envelopes.fixtures.js';
import type { RequestBegun } from './interrupted.js';
import { begunLine, RequestJournal, startTicksOf } from './journal.js';
import { adoptJournals } from './journal-recovery.js';
import { buildRequestRecord } from './record.js';
import { requestCompletedSchema } from './request-completed.js';
import { decodeSpoolLine, encodeSpoolLine, type SpoolRecord } from './spool.js';

// SPEC 1.3, 2.5: what a gateway journals survives its process, and the next start publishes it.

const begun = (id: string): RequestBegun => ({
  request_id: id,
  org_id: 'org_1',
  project_id: 'prj_1',
  workspace_id: 'ws_1',
  api_key_id: 'key_1',
  route: '/v1/chat/completions',
  model_requested: 'gpt-4o',
  stream: true,
  started_at: '2026-01-02T03:04:05.006Z',
  session_id: null,
  end_user_id: null,
  trace: { full_tracing: false, source: 'none' },
  declared_tools: ['lookup'],
});
const record = (id: string): SpoolRecord => buildRequestRecord(sampleDraft({ request_id: id })).record;

let dir: string;
const opened: RequestJournal[] = [];
const open = (maxSegmentBytes?: number) => {
  const j = RequestJournal.open({ dir, maxSegmentBytes });
  opened.push(j);
  return j;
};
/** What the next start would publish: adopts and returns the envelopes, by request id. */
const adopt = async () => {
  const taken: SpoolRecord[] = [];
  const summary = await adoptJournals(dir, async (records) => {
    taken.push(...records);
  });
  const envelopes = taken.map((r) =>
    requestCompletedSchema.parse(JSON.parse(String(r.messages.at(-1)!.data))),
  );
  return { summary, envelopes };
};
/** A journal left by a process that is gone: the files of `journal`, renamed to a dead owner. */
const orphan = async (journal: RequestJournal) => {
  for (const name of await readdir(dir)) {
    const dead = name.replace(
      `requests-${journal.owner.pid}-${journal.owner.start}-`,
      'requests-999999999-1-',
    );
    await writeFile(join(dir, dead), await readFile(join(dir, name)));
    await rm(join(dir, name));
  }
};

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-journal-'));
});
afterEach(async () => {
  for (const j of opened.splice(0)) j.close();
  await rm(dir, { recursive: true, force: true });
});

describe('RequestJournal', () => {
  it('a crash leaves completed records to publish again and begun requests to record as interrupted', async () => {
    const j = open();
    j.begun(begun('req_done'));
    j.completed(record('req_done'));
    j.begun(begun('req_cut'));
    j.completed(record('req_rejected'));
    await orphan(j);
    const { summary, envelopes } = await adopt();
    expect(summary).toEqual({ segments: 1, completed: 2, interrupted: 1, corrupt: 0 });
    expect(envelopes.map((e) => [e.request_id, e.status])).toEqual([
      ['req_done', 'success'],
      ['req_rejected', 'success'],
      ['req_cut', 'interrupted'],
    ]);
    const cut = envelopes[2]!;
    expect({
      http: cut.http_status,
      error: cut.error,
      billing: cut.billing.status === 'failed' ? cut.billing.reason : null,
      cost: cut.total_cost_usd,
      tools: cut.tool_summary.declared,
    }).toEqual({
      http: 500,
      error: { type: 'api_error', code: 'interrupted' },
      billing: 'interrupted',
      cost: '0',
      tools: ['lookup'],
    });
    expect(await readdir(dir)).toEqual([]);
  });

  it('carries the requests in flight into each new segment and deletes a segment once its records are durable', async () => {
    const j = open(1);
    j.begun(begun('req_long'));
    for (let i = 0; i < 5; i++) {
      j.begun(begun(`req_${i}`));
      j.completed(record(`req_${i}`));
      j.durable(`req_${i}`);
    }
    const names = await readdir(dir);
    // Every segment but the open one was deleted: its records were durable, its begun lines carried.
    expect(names).toHaveLength(1);
    const lines = (await readFile(join(dir, names[0]!), 'utf8')).split('\n').filter(Boolean);
    expect(lines).toEqual([begunLine(begun('req_long')).trimEnd()]);
    await orphan(j);
    const { envelopes } = await adopt();
    expect(envelopes.map((e) => [e.request_id, e.status])).toEqual([['req_long', 'interrupted']]);
  });

  it('keeps a segment whose records are not durable; a begun line left in it does not make its request interrupted', async () => {
    const j = open(1);
    j.begun(begun('req_x'));
    j.completed(record('req_0'));
    j.completed(record('req_x'));
    j.durable('req_x');
    // The segment holding req_0 (and the begun line of req_x) stays; the one of req_x's record went.
    expect((await readdir(dir)).length).toBe(2);
    await orphan(j);
    const { summary, envelopes } = await adopt();
    expect(envelopes.map((e) => [e.request_id, e.status])).toEqual([['req_0', 'success']]);
    expect(summary.interrupted).toBe(0);
  });

  it('a record with body chunks comes back whole, chunks first', async () => {
    const j = open();
    const traced = buildRequestRecord(
      sampleDraft({ request_id: 'req_big', trace: { full_tracing: true, source: 'header' } }),
      {
        request: 'x'.repeat(300_000),
      },
    ).record;
    expect(traced.messages.length).toBeGreaterThan(1);
    j.completed(traced);
    await orphan(j);
    const taken: SpoolRecord[] = [];
    await adoptJournals(dir, async (records) => {
      taken.push(...records);
    });
    expect(taken).toEqual([decodeSpoolLine(encodeSpoolLine(traced).trimEnd())]);
  });

  it('a clean close deletes the journal; with something outstanding it stays', async () => {
    const j = open();
    j.begun(begun('req_1'));
    j.completed(record('req_1'));
    j.durable('req_1');
    expect(j.close()).toBe(true);
    expect(await readdir(dir)).toEqual([]);
    const k = open();
    k.completed(record('req_2'));
    expect(k.close()).toBe(false);
    expect((await readdir(dir)).length).toBe(1);
  });

  it('leaves alone the journal of a process that is alive, and skips a torn line', async () => {
    const parent = process.ppid;
    const alive = `requests-${parent}-${startTicksOf(parent) ?? 0}-000001.ndjson`;
    await writeFile(join(dir, alive), encodeSpoolLine(record('req_live')));
    await writeFile(
      join(dir, 'requests-999999999-1-000001.ndjson'),
      `${encodeSpoolLine(record('req_dead'))}{"v":1,"request_id":"req_to`,
    );
    const { summary, envelopes } = await adopt();
    expect(envelopes.map((e) => e.request_id)).toEqual(['req_dead']);
    expect(summary.corrupt).toBe(1);
    expect(await readdir(dir)).toEqual([alive]);
    expect(decodeSpoolLine((await readFile(join(dir, alive), 'utf8')).trimEnd())?.requestId).toBe('req_live');
  });

  it('a segment stays when its records could not be taken', async () => {
    const j = open();
    j.completed(record('req_1'));
    await orphan(j);
    await expect(
      adoptJournals(dir, async () => {
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect((await readdir(dir)).length).toBe(1);
  });
});
