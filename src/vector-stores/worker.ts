import { describeError } from '../lib/errors.js';
import type { AttachJobs, Claim, JobRef } from './jobs.js';
import type { ErrorCode } from './model.js';
import type {
  Chunker,
  ChunkOwner,
  Embedder,
  Extractor,
  FileSource,
  KeySource,
  VectorIndex,
} from './ports.js';
import { syncFile } from './sync.js';

/**
 * The attach jobs of every vector store file (SPEC 4.1 "service-native chunking, embeddings and
 * vector search"), run in the background of each gateway process.
 *
 * A job is its `vector_store_files` row, durable in PostgreSQL: an attach writes it in progress, a
 * worker of any process claims it under a fresh generation and a lease, renews the lease while it
 * works, and marks it completed or failed. A process that dies leaves the lease to run out, and
 * the next sweep of any process claims the row again (the new claim hides what the old one wrote).
 * Chunks go into the index under the claim's generation and become searchable when the worker
 * publishes them, just before it completes the row; a detach, a store deletion or a takeover in
 * the middle of an attach leaves nothing visible: the worker that finds its claim gone (at a lease
 * renewal, or when completing after its last insert) brings the index back in step with the row
 * and removes its chunks, and searches show only files completed in PostgreSQL.
 */

export interface AttachWorkerPorts {
  files: FileSource;
  index: VectorIndex;
  chunker: Chunker;
  extractor: Extractor;
  embedder: Embedder;
  keys: KeySource;
}

export interface AttachWorkerOptions {
  /** Files this process indexes at once. */
  concurrency?: number;
  /** How long a claim holds its row without a renewal; renewed every third of it. */
  leaseSeconds?: number;
  /** How often this process looks for rows that are due (new, released, or whose lease ran out). */
  sweepMs?: number;
  /** Chunks per embeddings request. */
  batchSize?: number;
  /** Claims of one row before a failure that might pass fails the file for good. */
  maxAttempts?: number;
  /** How long a row given back after such a failure waits before it is due again. */
  retrySeconds?: number;
  /** The most chunks one file may have (OpenAI caps a file at 5,000,000 tokens). */
  maxChunks?: number;
  /** The largest file indexed, in bytes: it is read into memory to extract its text. */
  maxFileBytes?: number;
  onError?: (err: unknown, what: string) => void;
}

const DEFAULTS = {
  concurrency: 2,
  leaseSeconds: 60,
  sweepMs: 5_000,
  batchSize: 64,
  maxAttempts: 5,
  retrySeconds: 30,
  maxChunks: 12_500,
  maxFileBytes: 64 * 1024 * 1024,
};

/** How one job ended. */
type Outcome = 'completed' | 'failed' | 'lost' | 'released';

/** A failure of this file that no retry mends. */
class FileFailure extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export class AttachWorker {
  private readonly o: Required<Omit<AttachWorkerOptions, 'onError'>>;
  private readonly onError: (err: unknown, what: string) => void;
  private readonly running = new Set<Promise<Outcome>>();
  private readonly stopping = new AbortController();
  private claiming: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly jobs: AttachJobs,
    private readonly ports: AttachWorkerPorts,
    options: AttachWorkerOptions = {},
  ) {
    const { onError, ...rest } = options;
    this.o = { ...DEFAULTS, ...rest };
    this.onError = onError ?? (() => {});
  }

  /** Starts the periodic sweep (an unref'd timer: it never keeps the process alive). */
  start(): void {
    if (this.timer || this.stopping.signal.aborted) return;
    this.kick();
    this.timer = setInterval(() => this.kick(), this.o.sweepMs);
    this.timer.unref();
  }

  /**
   * Claims due rows while this process has room; returns at once. Called after an attach (so the
   * attaching process starts at once), by the sweep, and whenever a job ends.
   */
  kick(): void {
    if (this.stopping.signal.aborted) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = this.claimSome()
      .catch((err: unknown) =>
        this.onError(err, 'vector store attach jobs could not be claimed; the sweep retries'),
      )
      .finally(() => {
        this.claiming = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Runs due jobs until none is left, then resolves (tests and one-off use). */
  async drain(): Promise<void> {
    for (;;) {
      this.kick();
      while (this.claiming) await this.claiming;
      if (this.running.size === 0) return;
      await Promise.race(this.running);
    }
  }

  /**
   * Stops claiming and cancels the jobs in flight: each gives its row back at once (lease ended)
   * for another process, or this one after a restart, to resume.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.claiming;
    await Promise.allSettled([...this.running]);
  }

  get busy(): number {
    return this.running.size;
  }

  private async claimSome(): Promise<void> {
    const room = this.o.concurrency - this.running.size;
    if (room <= 0) return;
    const claims = await this.jobs.claim(room, this.o.leaseSeconds);
    for (const claim of claims) {
      const job = this.run(claim).catch((err: unknown): Outcome => {
        // The database did not answer while the job was closed: the lease runs out and any
        // process resumes it.
        this.onError(
          err,
          `indexing ${claim.fileId} of ${claim.vectorStoreId} stopped; it resumes after its lease`,
        );
        return 'released';
      });
      this.running.add(job);
      void job.finally(() => {
        this.running.delete(job);
        this.kick();
      });
    }
  }

  /** One claimed row, from the file's bytes to a completed or failed row. */
  private async run(claim: Claim): Promise<Outcome> {
    const ref: JobRef = {
      vectorStoreId: claim.vectorStoreId,
      fileId: claim.fileId,
      generation: claim.generation,
    };
    const owner: ChunkOwner = {
      orgId: claim.orgId,
      projectId: claim.projectId,
      vectorStoreId: claim.vectorStoreId,
      fileId: claim.fileId,
      generation: claim.generation,
    };
    // An earlier claim that did not finish may have written, even published: the row is in
    // progress, so nothing of the file may be searchable, and its chunks go.
    if (claim.previousGeneration) {
      await this.quietly(
        syncFile(this.jobs, this.ports.index, owner),
        `hiding an unfinished attach of ${claim.fileId}`,
      );
      await this.discard({ ...owner, generation: claim.previousGeneration });
    }
    const lost = new AbortController();
    const cancel = AbortSignal.any([lost.signal, this.stopping.signal]);
    const heartbeat = setInterval(
      () => {
        this.jobs.renew(ref, this.o.leaseSeconds).then(
          (held) => {
            if (!held) lost.abort();
          },
          (err: unknown) => this.onError(err, `the lease of ${claim.fileId} could not be renewed`),
        );
      },
      Math.max(1, Math.floor((this.o.leaseSeconds * 1_000) / 3)),
    );
    heartbeat.unref();
    let wrote = false;
    try {
      if (claim.attempts > this.o.maxAttempts)
        throw new FileFailure(
          'server_error',
          `indexing gave up after ${claim.attempts - 1} attempts${claim.lastReason ? `; the last one failed: ${claim.lastReason}` : ''}`,
        );
      const done = await this.index(claim, owner, cancel, () => {
        wrote = true;
      });
      if (!done) return await this.interrupted(ref, owner, lost.signal.aborted);
      return await this.publish(claim, ref, owner, done);
    } catch (err) {
      if (cancel.aborted) return await this.interrupted(ref, owner, lost.signal.aborted);
      if (wrote) await this.discard(owner);
      if (err instanceof FileFailure) {
        await this.jobs.fail(ref, err.code, err.message);
        return 'failed';
      }
      const reason = describeError(err);
      this.onError(err, `indexing ${claim.fileId} of ${claim.vectorStoreId} failed; it is retried`);
      await this.jobs.release(ref, this.o.retrySeconds, reason);
      return 'released';
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Publishes the written chunks with the file's attributes as they are now, then completes the
   * row. A claim lost meanwhile (detach, store deleted, takeover) brings the index back in step
   * with the row and removes its chunks; attributes changed meanwhile are published again.
   */
  private async publish(
    claim: Claim,
    ref: JobRef,
    owner: ChunkOwner,
    done: { usageBytes: number; chunkCount: number; tokenCount: number },
  ): Promise<Outcome> {
    const { index } = this.ports;
    const before = await this.jobs.indexState(claim.vectorStoreId, claim.fileId);
    if (before.status === 'in_progress' && before.generation === claim.generation) {
      const { attributes } = before;
      await index.publish(owner, { attributes, chunkCount: done.chunkCount, tokenCount: done.tokenCount });
      if (await this.jobs.complete(ref, done)) {
        const after = await this.jobs.indexState(claim.vectorStoreId, claim.fileId);
        if (JSON.stringify(after.live?.attributes) !== JSON.stringify(attributes))
          await this.quietly(syncFile(this.jobs, index, owner), `updating the attributes of ${claim.fileId}`);
        return 'completed';
      }
    }
    await syncFile(this.jobs, index, owner);
    await this.discard(owner);
    return 'lost';
  }

  /** A job cut short: its claim was lost (remove what it wrote), or this process stops (give the row back). */
  private async interrupted(ref: JobRef, owner: ChunkOwner, lost: boolean): Promise<Outcome> {
    await this.discard(owner);
    if (lost) return 'lost';
    await this.jobs
      .release(ref, 0, 'the process indexing the file stopped', false)
      .catch((err: unknown) => this.onError(err, `${ref.fileId} is resumed when its lease runs out`));
    return 'released';
  }

  /**
   * Reads, extracts, chunks, embeds and inserts; returns what was indexed, or null when cancelled
   * (this process stops, or the claim was lost).
   */
  private async index(
    claim: Claim,
    owner: ChunkOwner,
    cancel: AbortSignal,
    onWrite: () => void,
  ): Promise<{ usageBytes: number; chunkCount: number; tokenCount: number } | null> {
    if (cancel.aborted) return null;
    const { files, extractor, chunker, embedder, index, keys } = this.ports;
    const key = keys(claim.apiKeyId);
    if (!key)
      throw new FileFailure(
        'server_error',
        `the API key that attached this file (${claim.apiKeyId}) has been revoked, so its chunks cannot be embedded; attach the file again with a key in force`,
      );
    const scope = { orgId: claim.orgId, projectId: claim.projectId, apiKeyId: claim.apiKeyId };
    const file = await files.read(scope, claim.fileId, this.o.maxFileBytes);
    if (!file) throw new FileFailure('invalid_file', `the file ${claim.fileId} no longer exists`);
    if (!file.bytes)
      throw new FileFailure(
        'invalid_file',
        `${file.filename} is ${file.size} bytes, more than the ${this.o.maxFileBytes} bytes this gateway indexes per file`,
      );
    const extracted = await extractor.extract({ ...file, bytes: file.bytes });
    if (!extracted.ok) throw new FileFailure(extracted.code, extracted.message);
    const chunks = chunker.chunk(extracted.text, claim.chunking);
    if (chunks.length === 0)
      throw new FileFailure('invalid_file', `no text could be extracted from ${file.filename}`);
    if (chunks.length > this.o.maxChunks)
      throw new FileFailure(
        'invalid_file',
        `${file.filename} makes ${chunks.length} chunks, more than the ${this.o.maxChunks} this gateway indexes per file`,
      );
    let usageBytes = 0;
    let tokenCount = 0;
    let dimensions: number | null = null;
    for (let start = 0; start < chunks.length; start += this.o.batchSize) {
      if (cancel.aborted) return null;
      const batch = chunks.slice(start, start + this.o.batchSize);
      const texts = batch.map((c) => c.text);
      const answer = await embedder.embed(key, claim.embeddingModel, texts, cancel);
      if (cancel.aborted) return null;
      if (!answer.ok) {
        const why = `embedding the chunks with ${claim.embeddingModel} failed (HTTP ${answer.status} ${answer.code}): ${answer.message}`;
        // A rate limit or an upstream outage passes: the file is released and tried again later
        // (up to maxAttempts); anything else (a 4xx of the request itself) would fail again.
        if (answer.status === 429 || (answer.status >= 500 && answer.status !== 501)) throw new Error(why);
        throw new FileFailure('server_error', why);
      }
      for (const v of answer.vectors) {
        dimensions ??= v.length;
        if (v.length !== dimensions || v.length === 0)
          throw new FileFailure(
            'server_error',
            `${claim.embeddingModel} answered vectors of ${v.length} and ${dimensions} dimensions for one file`,
          );
      }
      onWrite();
      await index.insert(
        owner,
        batch.map((c, i) => ({
          index: start + i,
          text: c.text,
          tokens: c.tokens,
          vector: answer.vectors[i]!,
        })),
      );
      for (const c of batch) {
        usageBytes += Buffer.byteLength(c.text);
        tokenCount += c.tokens;
      }
    }
    return cancel.aborted ? null : { usageBytes, chunkCount: chunks.length, tokenCount };
  }

  /** Removes the chunks of an attach run that will never be searched. */
  private discard(owner: ChunkOwner): Promise<void> {
    // Unpublished chunks are never searched; what is left is storage, removed with the store.
    return this.quietly(
      this.ports.index.discard(owner),
      `removing the chunks of an unfinished attach of ${owner.fileId}`,
    );
  }

  private async quietly(work: Promise<void>, what: string): Promise<void> {
    try {
      await work;
    } catch (err) {
      this.onError(err, `${what} failed`);
    }
  }
}
