import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { EventStreamWriter, waitForDrain } from './event-stream.js';

const slowSink = () =>
  new Writable({
    highWaterMark: 1,
    write(_chunk, _encoding, done) {
      setImmediate(done);
    },
  });

const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** Serves one SSE response written by `handler`; returns the body the client received. */
const serve = async (handler: (res: ServerResponse) => void | Promise<void>): Promise<string> => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    void handler(res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const reply = await fetch(`http://127.0.0.1:${port}/`);
  return reply.text();
};

const frame = (n: number, size = 16) => `data: ${String(n).padStart(size, '.')}\n\n`;

describe('EventStreamWriter (SPEC 4.1 rule 5, 4.2 rule 5: every frame, then the end)', () => {
  it('frames written and ended in the same tick all reach the client, in order', async () => {
    const frames = [frame(1), frame(2), frame(3)];
    const body = await serve(async (res) => {
      await new Promise((r) => setTimeout(r, 5));
      const stream = new EventStreamWriter(res);
      stream.write(frames[0]!);
      stream.write([frames[1]!]);
      stream.end(frames[2]);
    });
    expect(body).toBe(frames.join(''));
  });

  it('a frame over 64 KiB and the terminal frame after it arrive whole', async () => {
    const big = frame(7, 200 * 1024);
    const body = await serve((res) => {
      const stream = new EventStreamWriter(res);
      stream.write(frame(1));
      stream.write(big);
      stream.end('data: [DONE]\n\n');
    });
    expect(body).toBe(`${frame(1)}${big}data: [DONE]\n\n`);
  });

  it('frames queued across ticks and awaited one by one all arrive before the end', async () => {
    const frames = Array.from({ length: 200 }, (_, i) => frame(i, 2_000));
    const body = await serve(async (res) => {
      const stream = new EventStreamWriter(res);
      for (const f of frames) {
        await stream.write(f);
        if (frames.indexOf(f) % 3 === 0) await new Promise((r) => setImmediate(r));
      }
      stream.end('data: [DONE]\n\n');
    });
    expect(body).toBe(`${frames.join('')}data: [DONE]\n\n`);
  });

  it('frames queued in one tick leave in one write; a later tick is its own write', async () => {
    const sink = new Writable({ write: (_c, _e, done) => done() });
    const writes: string[] = [];
    const original = sink.write.bind(sink);
    sink.write = ((chunk: string) => {
      writes.push(chunk);
      return original(chunk);
    }) as typeof sink.write;
    const captured: string[] = [];
    const stream = new EventStreamWriter(sink, captured);
    stream.write('a');
    stream.write(['b', 'c']);
    await new Promise((r) => setImmediate(r));
    stream.write('d');
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(['abc', 'd']);
    expect(captured.join('')).toBe('abcd');
  });

  it('waits for the client after a refused write, and goes on once it drains', async () => {
    const sink = slowSink();
    const stream = new EventStreamWriter(sink);
    expect(stream.write('x')).toBeUndefined();
    await new Promise((r) => process.nextTick(r));
    const waiting = stream.write('y');
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
    expect(sink.writableNeedDrain).toBe(false);
  });

  it('does not wait for a drain that Node never promised', async () => {
    // What Node >= 22 does to a corked response: write() answers false, writableNeedDrain stays false.
    const sink = new Writable({ write: (_c, _e, done) => done() });
    sink.write = (() => false) as typeof sink.write;
    const stream = new EventStreamWriter(sink);
    stream.write('x');
    await new Promise((r) => process.nextTick(r));
    const waiting = stream.write('y');
    await expect(
      Promise.race([waiting, new Promise((r) => setTimeout(() => r('hung'), 200))]),
    ).resolves.not.toBe('hung');
  });

  it('end() after the client left neither throws nor writes', async () => {
    const sink = slowSink();
    const stream = new EventStreamWriter(sink);
    sink.destroy();
    stream.write('x');
    expect(() => stream.end('y')).not.toThrow();
  });
});

describe('waitForDrain', () => {
  it('leaves no listener behind when drain comes first, however many times the buffer fills', async () => {
    const res = slowSink();
    const closeListeners = res.listenerCount('close');
    const drainListeners = res.listenerCount('drain');
    for (let i = 0; i < 20; i++) {
      expect(res.write('x')).toBe(false);
      await waitForDrain(res);
    }
    expect(res.listenerCount('close')).toBe(closeListeners);
    expect(res.listenerCount('drain')).toBe(drainListeners);
  });

  it('resolves when the response closes instead, leaving no drain listener', async () => {
    const res = slowSink();
    const drainListeners = res.listenerCount('drain');
    expect(res.write('x')).toBe(false);
    const waited = waitForDrain(res);
    res.destroy();
    await waited;
    expect(res.listenerCount('drain')).toBe(drainListeners);
  });
});
