import type { Worker } from 'node:worker_threads';
import { moduleWorker } from '../../lib/module-worker.js';
import { type BatchInput, type BuiltBatch, batchFromThread } from './batch.js';
import type { SealAnswer, SealRequest } from './seal-worker.js';

/**
 * A standalone copy of a small buffer that may sit in a shared 8 KB slab (the secret key): a view
 * would carry the whole slab, and with it other bytes, across to the thread. The rows' buffers go as
 * they are: their slabs hold this batch's rows, and each slab crosses once.
 */
const own = (b: Buffer): Buffer => Buffer.from(b);

/** Longest a batch may take on the thread (65,536 events take a few seconds) before it is given up. */
const BUILD_TIMEOUT_MS = 120_000;

/**
 * One worker thread that builds audit batches (SealDeps.builder): sealing's CPU (a few hundred
 * milliseconds for a batch of 4,096 events) leaves the event loop that stores incoming events.
 * Started on first use; a thread that fails or exits fails what it was building (the sealer's
 * transaction rolls back and the batch is sealed again next round) and the next batch starts a
 * new one. A batch the input cannot build (a subtree missing) answers null: the caller builds it.
 */
export class SealThread {
  constructor(private readonly timeoutMs = BUILD_TIMEOUT_MS) {}

  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<
    number,
    { resolve: (b: BuiltBatch | null) => void; reject: (e: Error) => void }
  >();

  build = (input: BatchInput): Promise<BuiltBatch | null> => {
    const worker = this.worker ?? this.start();
    const id = this.next++;
    const request: SealRequest = {
      id,
      input: {
        ...input,
        frontier: own(input.frontier),
        secretKey: own(input.secretKey),
        previousManifestSha: input.previousManifestSha && own(input.previousManifestSha),
      },
    };
    return new Promise((resolve, reject) => {
      worker.postMessage(request);
      // A thread that stops answering would hold the tenant's lock and transaction for ever.
      const timer = setTimeout(() => {
        if (this.worker === worker)
          this.lose(
            worker,
            new Error(
              `building audit batch ${input.batchNo} of ${input.tenantId} took longer than ${this.timeoutMs} ms`,
            ),
          );
        void worker.terminate();
      }, this.timeoutMs);
      timer.unref();
      this.pending.set(id, {
        resolve: (b) => {
          clearTimeout(timer);
          resolve(b);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  };

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.failAll(new Error('the audit seal thread was closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    const worker = moduleWorker(import.meta.url, 'seal-worker', { name: 'audit-seal' });
    worker.on('message', (answer: SealAnswer) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (answer.ok) waiting.resolve(batchFromThread(answer.built));
      else if (answer.missing) waiting.resolve(null);
      else waiting.reject(Object.assign(new Error(answer.message), { stack: answer.stack }));
    });
    worker.on('messageerror', (err) => this.lose(worker, err));
    worker.on('error', (err) => this.lose(worker, err));
    worker.on('exit', (code) =>
      this.lose(worker, new Error(`the audit seal thread exited with code ${code}`)),
    );
    // After the listeners: adding a 'message' listener refs the worker again.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** The thread is gone or useless: what it was building fails, and the next batch starts another. */
  private lose(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.failAll(err);
  }

  private failAll(err: Error): void {
    for (const { reject } of this.pending.values()) reject(err);
    this.pending.clear();
  }
}
