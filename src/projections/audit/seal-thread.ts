import type { Worker } from 'node:worker_threads';
import { moduleWorker } from '../../lib/module-worker.js';
import type { BatchInput, BuiltBatch } from './batch.js';
import type { SealAnswer, SealRequest } from './seal-worker.js';

/** A standalone copy: a view into a shared pool slab would carry the whole slab across. */
const own = (u: Uint8Array): Uint8Array => new Uint8Array(u);

/**
 * One worker thread that builds audit batches (SealDeps.builder): sealing's CPU (a few hundred
 * milliseconds for a batch of 4,096 events) leaves the event loop that stores incoming events.
 * Started on first use; a thread that fails or exits fails what it was building (the sealer's
 * transaction rolls back and the batch is sealed again next round) and the next batch starts a
 * new one. A batch the input cannot build (a subtree missing) answers null: the caller builds it.
 */
export class SealThread {
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
        rows: input.rows.map((r) => ({ ...r, bytes: r.bytes && own(r.bytes), leaf: own(r.leaf) })),
      },
    };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage(request);
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
    worker.unref();
    worker.on('message', (answer: SealAnswer) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (answer.ok) waiting.resolve(answer.built);
      else if (answer.missing) waiting.resolve(null);
      else waiting.reject(new Error(answer.message));
    });
    const lost = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.failAll(err);
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the audit seal thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    for (const { reject } of this.pending.values()) reject(err);
    this.pending.clear();
  }
}
