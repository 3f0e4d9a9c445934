import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { waitForDrain } from './drain.js';

const slowSink = () =>
  new Writable({
    highWaterMark: 1,
    write(_chunk, _encoding, done) {
      setImmediate(done);
    },
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
