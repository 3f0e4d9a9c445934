import { parentPort } from 'node:worker_threads';
import { type BatchInput, buildBatch, inputFromThread, subtreesOf } from './batch.js';
import { MissingSubtreeError } from './subtrees.js';

/**
 * The audit sealer's worker thread (seal-thread.ts): builds batches (hashing, proofs, the
 * archive's JSON and gzip, signatures) off the audit role's event loop, which meanwhile goes on
 * storing events. One request at a time, answered by id.
 */
export type SealRequest = { id: number; input: BatchInput };
export type SealAnswer =
  | { id: number; ok: true; built: ReturnType<typeof buildBatch> }
  | { id: number; ok: false; missing: boolean; message: string; stack?: string };

parentPort?.on('message', ({ id, input: sent }: SealRequest) => {
  let answer: SealAnswer;
  try {
    const input = inputFromThread(sent);
    answer = { id, ok: true, built: buildBatch(input, subtreesOf(input)) };
  } catch (err) {
    answer = {
      id,
      ok: false,
      missing: err instanceof MissingSubtreeError,
      message: err instanceof Error ? err.message : String(err),
      stack: err instanceof Error ? err.stack : undefined,
    };
  }
  parentPort?.postMessage(answer);
});
