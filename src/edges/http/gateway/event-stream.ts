import type { Writable } from 'node:stream';
import type { FrameSink } from '../../../gateway/request.js';

/**
 * The writer of one committed server-sent-event reply (SPEC 4.1 rule 5, 4.2 rule 5, 7.6 rule 1).
 *
 * Frames queued in one tick (one upstream read yields several) leave in one socket write at the
 * end of that tick, so the relay stays chunk by chunk at one syscall per read. This is our own
 * buffer, not `res.cork()`: on Node >= 21 a response corked, written and ended in the same tick
 * sends its terminating chunk before the corked frames, and the client sees a clean end without
 * the last frames. `end()` therefore hands the last frames to `res.end()` itself.
 *
 * Back-pressure is honoured without trusting an event that may not come: after a refused write
 * the next `write()` waits only while Node reports `writableNeedDrain` (the flag that promises a
 * 'drain'), or until the response closes.
 */
export class EventStreamWriter implements FrameSink {
  private pending: string[] = [];
  private scheduled = false;
  private draining: Promise<void> | undefined;

  /** `capture` receives every frame written, for full payload tracing (SPEC 1.10). */
  constructor(
    private readonly res: Writable,
    private readonly capture: string[] | null = null,
  ) {}

  /** The client went away before the whole reply was written. */
  get closed(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  /** Queues frames; the returned promise (when there is one) settles once the client can take more. */
  write(frames: string | readonly string[]): Promise<void> | undefined {
    if (typeof frames === 'string') this.pending.push(frames);
    else for (const frame of frames) this.pending.push(frame);
    if (!this.scheduled && this.pending.length > 0) {
      this.scheduled = true;
      process.nextTick(this.flush);
    }
    return this.draining;
  }

  /**
   * Takes what is queued and the last frames (captured now), and ends the response once the current
   * turn is over: the request path records the request in this turn, so its record is written
   * before the client can see the end of the reply (FrameSink.end, SPEC 2.5).
   */
  end(frames: string | readonly string[] = []): void {
    this.write(frames);
    const text = this.take();
    process.nextTick(() => {
      if (this.res.destroyed || this.res.writableEnded) return;
      this.res.end(text);
    });
  }

  private readonly flush = (): void => {
    const text = this.take();
    if (text === '' || this.res.destroyed || this.res.writableEnded) return;
    if (!this.res.write(text) && !this.draining) {
      const waiting = waitForDrain(this.res);
      this.draining = waiting;
      void waiting.then(() => {
        if (this.draining === waiting) this.draining = undefined;
      });
    }
  };

  private take(): string {
    this.scheduled = false;
    if (this.pending.length === 0) return '';
    const text = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
    this.pending = [];
    this.capture?.push(text);
    return text;
  }
}

/**
 * Waits until a response that refused a write can take more, or is closed. Node emits 'drain' only
 * when it set `writableNeedDrain`; when it did not (or the response is already gone) this settles
 * at once instead of hanging the relay. Whichever event comes first removes both listeners, so a
 * long stream does not pile up one 'close' listener per full buffer.
 */
export const waitForDrain = (res: Writable): Promise<void> =>
  new Promise<void>((resolve) => {
    if (res.destroyed || !res.writableNeedDrain) return resolve();
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
