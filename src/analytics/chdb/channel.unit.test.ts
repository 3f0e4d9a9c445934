import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AnalyticsError } from '../port.js';
import { type Channel, ChannelEngine, type Engine, serveEngine } from './channel.js';
import type { EngineResult } from './protocol.js';

// The embedded engine across a process boundary (the data process of `svc serve` owns it; the
// query role reaches it over IPC). Two in-memory ends stand in for the IPC channel.

const pair = (): [Channel & { closed: boolean }, Channel] => {
  const a = new EventEmitter();
  const b = new EventEmitter();
  const end = (self: EventEmitter, other: EventEmitter) => {
    const ch = {
      closed: false,
      send: (m: unknown, cb: (err: Error | null) => void) => {
        if (ch.closed) {
          setImmediate(() => cb(new Error('channel closed')));
          return false;
        }
        setImmediate(() => {
          other.emit('message', structuredClone(m));
          cb(null);
        });
        return true;
      },
      on: (e: 'message', l: (m: unknown) => void) => self.on(e, l),
      off: (e: 'message', l: (m: unknown) => void) => self.off(e, l),
    };
    return ch;
  };
  return [end(a, b), end(b, a)];
};

const result = (text: string): EngineResult => ({
  body: new TextEncoder().encode(text),
  rowsRead: 1,
  bytesRead: 2,
  rowsWritten: 0,
  elapsedMs: 0.5,
});

const fakeEngine = (): Engine & { seen: string[] } => {
  const seen: string[] = [];
  return {
    seen,
    version: '25.1-test',
    query: async (r) => {
      seen.push(r.sql);
      if (r.sql.startsWith('BAD'))
        throw new AnalyticsError('server', 'Code: 62. DB::Exception: Syntax error', { clickhouseCode: 62 });
      return result(`{"echo":${JSON.stringify(r.sql)}}\n`);
    },
    insert: async (r) => {
      seen.push(r.statement);
      return { ...result(''), rowsWritten: 3 };
    },
    release: async () => {},
  };
};

describe('ChannelEngine and serveEngine', () => {
  it('runs statements in the owner and returns its bytes and counters', async () => {
    const [caller, owner] = pair();
    const engine = fakeEngine();
    serveEngine(owner, engine);
    const client = new ChannelEngine(engine.version);
    client.attach(caller);
    const r = await client.query({ sql: 'SELECT 1', params: {}, format: 'JSONEachRow', database: 'svc' });
    expect(new TextDecoder().decode(r.body)).toBe('{"echo":"SELECT 1"}\n');
    expect(r.rowsRead).toBe(1);
    const w = await client.insert({ statement: 'INSERT INTO t FORMAT JSONEachRow', data: '{}' });
    expect(w.rowsWritten).toBe(3);
    expect(engine.seen).toEqual(['SELECT 1', 'INSERT INTO t FORMAT JSONEachRow']);
  });

  it("an engine error arrives as the same AnalyticsError, with ClickHouse's code", async () => {
    const [caller, owner] = pair();
    serveEngine(owner, fakeEngine());
    const client = new ChannelEngine('v');
    client.attach(caller);
    const err = await client.query({ sql: 'BAD SQL', params: {}, format: 'JSONEachRow' }).catch((e) => e);
    expect(err).toBeInstanceOf(AnalyticsError);
    expect(err).toMatchObject({ kind: 'server', clickhouseCode: 62, retryable: false });
  });

  it("the owner's own kind of failure crosses as it is: a timeout stays a retryable timeout", async () => {
    const [caller, owner] = pair();
    const engine = fakeEngine();
    engine.query = async () => {
      throw new AnalyticsError('timeout', 'chdb query took longer than 300000 ms');
    };
    serveEngine(owner, engine);
    const client = new ChannelEngine('v');
    client.attach(caller);
    const err = await client.query({ sql: 'SELECT 1', params: {}, format: 'JSONEachRow' }).catch((e) => e);
    expect(err).toMatchObject({
      kind: 'timeout',
      retryable: true,
      message: expect.stringContaining('300000'),
    });
  });

  it('without an owner, statements fail as unavailable (retryable), and pending ones with it', async () => {
    const client = new ChannelEngine('v');
    const err = await client.query({ sql: 'SELECT 1', params: {}, format: 'JSONEachRow' }).catch((e) => e);
    expect(err).toMatchObject({ kind: 'unavailable', retryable: true });

    const [caller] = pair(); // nobody serves the other end: the statement waits
    client.attach(caller);
    const pending = client.query({ sql: 'SELECT 2', params: {}, format: 'JSONEachRow' }).catch((e) => e);
    await new Promise((r) => setImmediate(r));
    client.attach(null); // the owner went away
    expect(await pending).toMatchObject({ kind: 'unavailable' });
  });

  it('a channel that refuses the message fails the statement at once', async () => {
    const [caller] = pair();
    caller.closed = true;
    const client = new ChannelEngine('v');
    client.attach(caller);
    const err = await client.query({ sql: 'SELECT 1', params: {}, format: 'JSONEachRow' }).catch((e) => e);
    expect(err).toMatchObject({ kind: 'unavailable' });
  });

  it('the caller cannot close the owner’s engine', async () => {
    const [caller, owner] = pair();
    const engine = fakeEngine();
    serveEngine(owner, engine);
    caller.send({ tag: 'svc.analytics', call: { id: 1, request: { op: 'close' } } }, () => {});
    const answer = await new Promise<unknown>((r) => caller.on('message', r));
    expect(answer).toMatchObject({ id: 1, error: { message: expect.stringContaining('owns it') } });
  });
});
