import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleDraft } from '../../../test/fixtures/envelopes/envelopes.fixtures.js';
import { ScriptedBus } from '../../../test/fixtures/envelopes/scripted-bus.fixtures.js';
import { blake3Hex, bodyBytes } from './body.js';
import { RequestRecordPublisher, type RequestRecordPublisherOptions } from './publish.js';
import { buildRequestRecord } from './record.js';
import { isChunkedBody, requestCompletedSchema } from './request-completed.js';
import { decodeSpoolLine, REJECTED_FILE, spoolPath } from './spool.js';

const SEGMENT = /^requests-\d{12}\.ndjson$/;

const waitFor = async (check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> => {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('RequestRecordPublisher', () => {
  let dataDir: string;
  const opened: RequestRecordPublisher[] = [];

  const open = async (bus: ScriptedBus, options: Partial<RequestRecordPublisherOptions> = {}) => {
    const publisher = await RequestRecordPublisher.open({
      bus,
      dataDir,
      retry: { initialMs: 5, maxMs: 20 },
      ...options,
    });
    opened.push(publisher);
    return publisher;
  };

  /** Lines of every segment file, in segment order. */
  const spooledLines = async (): Promise<string[]> => {
    const names = (await readdir(spoolPath(dataDir))).filter((n) => SEGMENT.test(n)).sort();
    const lines: string[] = [];
    for (const name of names) {
      // The drainer may delete a segment between the listing and the read.
      const text = await readFile(join(spoolPath(dataDir), name), 'utf8').catch(() => '');
      lines.push(...text.split('\n').filter((l) => l.length > 0));
    }
    return lines;
  };
  /** Pending reaches 0 when the last record is acked; its segment is deleted just after. */
  const drained = (publisher: RequestRecordPublisher) => async () =>
    publisher.pending() === 0 && (await spooledLines()).length === 0;
  const spooledIds = async () => (await spooledLines()).map((l) => decodeSpoolLine(l)?.requestId);
  const recordMany = (publisher: RequestRecordPublisher, n: number, prefix = 'req') => {
    for (let i = 0; i < n; i++) publisher.record(sampleDraft({ request_id: `${prefix}_${i}` }));
  };

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-spool-'));
  });
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((p) => p.close()));
    await rm(dataDir, { recursive: true, force: true });
  });

  it('publishes live with message id = request id and leaves no spool behind', async () => {
    const bus = new ScriptedBus();
    const publisher = await open(bus);
    recordMany(publisher, 10);
    await publisher.flush();
    expect(bus.envelopeIds().sort()).toEqual(Array.from({ length: 10 }, (_, i) => `req_${i}`).sort());
    const first = bus.stored.find((m) => m.messageId === 'req_0')!;
    expect(first.subject).toBe('svc.requests.org_a.req_0');
    expect(requestCompletedSchema.parse(JSON.parse(new TextDecoder().decode(first.data))).request_id).toBe(
      'req_0',
    );
    expect(publisher.stats()).toMatchObject({ published: 10, spooled: 0, pending: 0 });
    expect(await spooledLines()).toEqual([]);
  });

  it('batches what is recorded in one turn: a full batch at once, the rest on the next turn', async () => {
    const bus = new ScriptedBus();
    const publisher = await open(bus, { maxBatchRecords: 256 });
    recordMany(publisher, 600);
    // Two full batches left at once; the last 88 wait for the end of this turn.
    expect(bus.batches).toEqual([256, 256]);
    await publisher.flush();
    expect(bus.batches).toEqual([256, 256, 88]);
    const ids = bus.envelopeIds();
    expect([...ids].sort()).toEqual(Array.from({ length: 600 }, (_, i) => `req_${i}`).sort());
    // Batches in flight together may interleave; each keeps its records in order.
    const position = (i: number) => ids.indexOf(`req_${i}`);
    for (const [from, to] of [
      [0, 256],
      [256, 512],
      [512, 600],
    ] as const)
      for (let i = from + 1; i < to; i++) expect(position(i)).toBeGreaterThan(position(i - 1));
    expect(publisher.stats()).toMatchObject({ published: 600, spooled: 0, pending: 0 });
  });

  it('lets a partial batch wait lingerMs for more records, one publish for requests of several turns', async () => {
    const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    const bus = new ScriptedBus();
    const lingering = await open(bus, { lingerMs: 40 });
    lingering.record(sampleDraft({ request_id: 'a' }));
    await nextTurn();
    lingering.record(sampleDraft({ request_id: 'b' }));
    await nextTurn();
    lingering.record(sampleDraft({ request_id: 'c' }));
    expect(bus.batches).toEqual([]);
    await waitFor(() => bus.batches.length > 0, 2_000);
    expect(bus.batches).toEqual([3]);

    const eager = new ScriptedBus();
    const immediate = await open(eager, { lingerMs: 0 });
    immediate.record(sampleDraft({ request_id: 'd' }));
    await nextTurn();
    immediate.record(sampleDraft({ request_id: 'e' }));
    await immediate.flush();
    expect(eager.batches).toEqual([1, 1]);
  });

  it('flush does not wait out the linger', async () => {
    const bus = new ScriptedBus();
    const publisher = await open(bus, { lingerMs: 60_000 });
    publisher.record(sampleDraft({ request_id: 'a' }));
    await publisher.flush();
    expect(bus.envelopeIds()).toEqual(['a']);
  });

  it('keeps a batch within its byte bound, a larger record going alone', async () => {
    const bus = new ScriptedBus();
    // Room for two plain records, not for three, nor for the one with a body.
    const plain = buildRequestRecord(sampleDraft({ request_id: 'a' })).bytes;
    const publisher = await open(bus, { maxBatchBytes: Math.floor(2.5 * plain) });
    publisher.record(sampleDraft({ request_id: 'a' }));
    publisher.record(sampleDraft({ request_id: 'big' }), { request: 'q'.repeat(5 * plain) });
    publisher.record(sampleDraft({ request_id: 'b' }));
    publisher.record(sampleDraft({ request_id: 'c' }));
    await publisher.flush();
    expect(bus.batches).toEqual([1, 1, 2]);
    expect(bus.envelopeIds().sort()).toEqual(['a', 'b', 'big', 'c']);
  });

  it('sends a record in one batch: its chunks, then its envelope', async () => {
    const bus = new ScriptedBus();
    const publisher = await open(bus);
    publisher.record(sampleDraft({ request_id: 'one' }), { request: 'q', response: randomBytes(600_000) });
    publisher.record(sampleDraft({ request_id: 'two' }));
    await publisher.flush();
    expect(bus.batches).toEqual([5]);
    expect(bus.stored.map((m) => m.messageId)).toEqual(['one:res:0', 'one:res:1', 'one:res:2', 'one', 'two']);
  });

  it('publishes body chunks before their envelope, which references them', async () => {
    const bus = new ScriptedBus();
    const publisher = await open(bus);
    const response = randomBytes(1_000_000);
    publisher.record(sampleDraft({ request_id: 'big' }), { request: '{"messages":[]}', response });
    await publisher.flush();
    expect(bus.stored.map((m) => m.messageId)).toEqual([
      'big:res:0',
      'big:res:1',
      'big:res:2',
      'big:res:3',
      'big',
    ]);
    const envelope = requestCompletedSchema.parse(JSON.parse(new TextDecoder().decode(bus.stored[4]!.data)));
    expect(envelope.bodies?.request).toMatchObject({ encoding: 'utf8', data: '{"messages":[]}' });
    const ref = envelope.bodies?.response;
    if (!ref || !isChunkedBody(ref)) throw new Error('expected a chunked response body');
    const chunks = bus.stored
      .filter((m) => m.subject.startsWith(`${ref.subject_prefix}.`))
      .map((m) => m.data);
    const back = bodyBytes(ref, chunks);
    expect(back.ok && blake3Hex(back.bytes)).toBe(blake3Hex(response));
  });

  it('spools 100 records while the bus is down and drains them in order when it returns', async () => {
    const bus = new ScriptedBus();
    bus.mode = 'down';
    const publisher = await open(bus);
    recordMany(publisher, 100);
    expect(publisher.pending()).toBe(100);
    await publisher.flush();
    const ids = await spooledIds();
    expect(ids).toHaveLength(100);
    expect(new Set(ids).size).toBe(100);
    expect(publisher.stats()).toMatchObject({ spooled: 100, pending: 100, busUp: false, published: 0 });

    bus.mode = 'up';
    await waitFor(drained(publisher));
    expect(bus.envelopeIds()).toEqual(ids);
    expect(publisher.stats()).toMatchObject({ drained: 100, pending: 0, busUp: true });
    expect(await spooledLines()).toEqual([]);
    const left = await readdir(spoolPath(dataDir));
    expect(left.filter((n) => n !== REJECTED_FILE)).toEqual([]);

    recordMany(publisher, 5, 'after');
    await publisher.flush();
    expect(bus.envelopeIds().slice(100).sort()).toEqual([
      'after_0',
      'after_1',
      'after_2',
      'after_3',
      'after_4',
    ]);
    expect(publisher.stats().published).toBe(5);
  });

  it('a new publisher on the same data dir drains what a crashed one left, skipping a torn line', async () => {
    const down = new ScriptedBus();
    down.mode = 'down';
    // A long backoff stands in for a process that dies before its drainer ever runs again.
    const crashed = await open(down, { retry: { initialMs: 600_000, maxMs: 600_000 } });
    recordMany(crashed, 100);
    await crashed.flush();
    const [segment] = (await readdir(spoolPath(dataDir))).filter((n) => SEGMENT.test(n));
    await appendFile(join(spoolPath(dataDir), segment!), '{"v":1,"request_id":"torn","messa');

    const bus = new ScriptedBus();
    const next = await open(bus);
    expect(next.pending()).toBe(101);
    await waitFor(drained(next));
    expect(bus.envelopeIds()).toHaveLength(100);
    expect(new Set(bus.envelopeIds()).size).toBe(100);
    expect(next.stats()).toMatchObject({ drained: 100, corrupt: 1 });
    expect(await spooledLines()).toEqual([]);
    const rejected = await readFile(join(spoolPath(dataDir), REJECTED_FILE), 'utf8');
    expect(rejected).toBe('{"v":1,"request_id":"torn","messa\n');
  });

  it('resumes a drain interrupted mid-way from its checkpoint', async () => {
    const down = new ScriptedBus();
    down.mode = 'down';
    const first = await open(down, { retry: { initialMs: 600_000, maxMs: 600_000 } });
    recordMany(first, 250);
    await first.flush();

    // Goes down after 160 publishes: a checkpoint lands at 100 (periodic) and at 160 (on failure).
    const flaky = new ScriptedBus();
    flaky.budget = 160;
    const second = await open(flaky, { retry: { initialMs: 600_000, maxMs: 600_000 } });
    await waitFor(() => flaky.mode === 'down' && second.pending() === 90);
    expect(flaky.envelopeIds()).toHaveLength(160);

    flaky.mode = 'up';
    flaky.budget = Number.POSITIVE_INFINITY;
    const third = await open(flaky);
    await waitFor(drained(third));
    expect(flaky.envelopeIds()).toHaveLength(250);
    expect(new Set(flaky.envelopeIds()).size).toBe(250);
    // 160 delivered, 1 refused as the bus went down, then only the 90 after the checkpoint.
    expect(flaky.calls.filter((id) => !id.includes(':'))).toHaveLength(161 + 90);
  });

  it('rolls the spool over into small segments and drains them oldest first', async () => {
    const bus = new ScriptedBus();
    bus.mode = 'down';
    const publisher = await open(bus, { maxSegmentBytes: 8 * 1024 });
    recordMany(publisher, 40);
    await publisher.flush();
    const segments = (await readdir(spoolPath(dataDir))).filter((n) => SEGMENT.test(n));
    expect(segments.length).toBeGreaterThan(3);
    const ids = await spooledIds();
    expect(ids).toHaveLength(40);
    bus.mode = 'up';
    await waitFor(drained(publisher));
    expect(bus.envelopeIds()).toEqual(ids);
  });

  it('sets aside a record the bus keeps refusing, without holding back the others', async () => {
    const bus = new ScriptedBus();
    bus.refuse = (id) => id === 'req_3';
    const errors: string[] = [];
    const publisher = await open(bus, {
      maxRecordAttempts: 3,
      onError: (_, context) => errors.push(context),
    });
    recordMany(publisher, 6);
    await waitFor(drained(publisher));
    expect(bus.envelopeIds().sort()).toEqual(['req_0', 'req_1', 'req_2', 'req_4', 'req_5']);
    expect(publisher.stats()).toMatchObject({ rejected: 1, busUp: true, published: 5 });
    const rejected = await readFile(join(spoolPath(dataDir), REJECTED_FILE), 'utf8');
    expect(decodeSpoolLine(rejected.trim())?.requestId).toBe('req_3');
    expect(errors.some((c) => c.startsWith('publish req_3'))).toBe(true);
  });

  it('spools instead of buffering once the in-memory queue is full', async () => {
    const bus = new ScriptedBus();
    bus.delayMs = 20;
    const publisher = await open(bus, { concurrency: 1, maxQueuedRecords: 5 });
    recordMany(publisher, 30);
    await publisher.flush();
    expect(publisher.stats().spooled).toBeGreaterThanOrEqual(20);
    await waitFor(drained(publisher));
    expect(new Set(bus.envelopeIds()).size).toBe(30);
  });

  it('close() spools what is still in flight, and the next process delivers it', async () => {
    const bus = new ScriptedBus();
    bus.mode = 'hang';
    const publisher = await open(bus, { closeTimeoutMs: 50, concurrency: 2 });
    recordMany(publisher, 5);
    await publisher.close();
    expect((await spooledIds()).sort()).toEqual(['req_0', 'req_1', 'req_2', 'req_3', 'req_4']);
    expect(() => publisher.record(sampleDraft())).toThrow(/closed/);

    const next = new ScriptedBus();
    const reopened = await open(next);
    await waitFor(drained(reopened));
    expect(next.envelopeIds().sort()).toEqual(['req_0', 'req_1', 'req_2', 'req_3', 'req_4']);
  });

  it('records the same request twice as one stored message', async () => {
    const bus = new ScriptedBus();
    const publisher = await open(bus);
    publisher.record(sampleDraft({ request_id: 'same' }));
    await publisher.flush();
    publisher.record(sampleDraft({ request_id: 'same' }));
    await publisher.flush();
    expect(bus.calls).toEqual(['same', 'same']);
    expect(bus.envelopeIds()).toEqual(['same']);
  });

  it('delivers a segment again after a crash lost its deletion, storing no duplicate', async () => {
    const down = new ScriptedBus();
    down.mode = 'down';
    const first = await open(down);
    recordMany(first, 50);
    await first.close();
    const dir = spoolPath(dataDir);
    const [segment] = (await readdir(dir)).filter((n) => SEGMENT.test(n));
    const saved = await readFile(join(dir, segment!));

    const bus = new ScriptedBus();
    const second = await open(bus);
    await waitFor(drained(second));
    await second.close();
    expect(await spooledLines()).toEqual([]);

    await writeFile(join(dir, segment!), saved);
    const third = await open(bus);
    expect(third.pending()).toBe(50);
    await waitFor(drained(third));
    expect(bus.calls).toHaveLength(100);
    expect(bus.envelopeIds()).toHaveLength(50);
    expect(third.stats().drained).toBe(50);
  });
});
