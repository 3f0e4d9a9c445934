import type { Writable } from 'node:stream';

/**
 * Waits until a response that refused a write can take more, or is closed. Whichever comes first
 * removes both listeners, so a long stream does not pile up one 'close' listener per full buffer.
 */
export const waitForDrain = (res: Writable): Promise<void> =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
