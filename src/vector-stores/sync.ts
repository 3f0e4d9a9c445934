import type { AttachJobs } from './jobs.js';
import type { VectorIndex } from './ports.js';

/** Rounds of read, apply, read again before giving up on a file that keeps changing. */
const ROUNDS = 5;

/**
 * Makes the index show what PostgreSQL says of one file of a store: its completed generation with
 * its current attributes, or nothing. Used wherever the two may have parted: a worker whose claim
 * was lost after it published, an attribute update, a detach racing an attach. The state is read
 * again after it is applied, and applied again if it changed meanwhile, so two of these running
 * at once for one file end on the last state either of them read. Searches check hits against
 * PostgreSQL as well, so a moment of disagreement never shows.
 */
export const syncFile = async (
  jobs: AttachJobs,
  index: VectorIndex,
  file: { orgId: string; projectId: string; vectorStoreId: string; fileId: string },
): Promise<void> => {
  const store = { orgId: file.orgId, projectId: file.projectId, vectorStoreId: file.vectorStoreId };
  let state = await jobs.indexState(file.vectorStoreId, file.fileId);
  for (let round = 0; round < ROUNDS; round++) {
    const live = state.live;
    if (live)
      await index.publish(
        { ...store, fileId: file.fileId, generation: live.generation },
        { attributes: live.attributes, chunkCount: live.chunkCount, tokenCount: live.tokenCount },
      );
    else await index.hideFile(store, file.fileId);
    const now = await jobs.indexState(file.vectorStoreId, file.fileId);
    if (JSON.stringify(now.live) === JSON.stringify(live)) return;
    state = now;
  }
  throw new Error(
    `${file.fileId} of ${file.vectorStoreId} kept changing while the index was brought in step`,
  );
};
