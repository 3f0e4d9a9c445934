import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { moduleWorker } from '../../lib/module-worker.js';
import { AnalyticsError } from '../port.js';
import type {
  EngineFailure,
  EngineRequest,
  EngineResult,
  InsertRequest,
  QueryRequest,
  WorkerEnvelope,
  WorkerInit,
  WorkerMessage,
} from './protocol.js';

/**
 * The main-thread side of the chdb worker (`worker.ts`): posts statements, awaits replies, never
 * runs the engine itself. chdb binds one data path per process, so engines are shared per path
 * and reference counted; opening a second path while one is open fails with the engine's error.
 */

export interface ChdbEngineOptions {
  /** A reply slower than this rejects with a retryable `timeout` (the statement still finishes). */
  requestTimeoutMs?: number;
  startTimeoutMs?: number;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
const DEFAULT_START_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 10_000;

const nodeRequire = createRequire(import.meta.url);

let nativePinned = false;
/**
 * Node unloads a worker's native addons when the worker exits; libchdb leaves thread-local
 * destructors behind and the process then crashes. Holding one reference from the main thread
 * keeps the library mapped for the life of the process (loading it runs no query).
 */
const pinNativeLibrary = (): void => {
  if (nativePinned) return;
  let chdbEntry: string;
  try {
    chdbEntry = nodeRequire.resolve('chdb');
  } catch (err) {
    // chdb is an optional dependency; Node's own message runs over several
    // lines with a require stack. A missing platform binding is chdb's own one-line error.
    if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
    throw new AnalyticsError('unavailable', 'chdb is not installed', { retryable: false, cause: err });
  }
  const loader = createRequire(chdbEntry)('./dist/loader.js') as { loadNative(): unknown };
  loader.loadNative();
  nativePinned = true;
};

const spawnWorker = (path: string): Worker => {
  pinNativeLibrary();
  return moduleWorker(import.meta.url, 'worker', { workerData: { path } satisfies WorkerInit, name: 'chdb' });
};

export const toAnalyticsError = (failure: EngineFailure): AnalyticsError => {
  const code = failure.clickhouseCode === undefined ? {} : { clickhouseCode: failure.clickhouseCode };
  if (failure.kind)
    return new AnalyticsError(failure.kind, failure.message, { ...code, retryable: failure.retryable });
  if (failure.name === 'ChdbClosedError') return new AnalyticsError('closed', failure.message);
  return new AnalyticsError('server', failure.message, {
    ...(failure.clickhouseCode === undefined ? {} : { clickhouseCode: failure.clickhouseCode }),
  });
};

interface SharedEngine {
  engine: Promise<ChdbEngine>;
  refs: number;
}

interface Pending {
  resolve(result: EngineResult): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class ChdbEngine {
  private static readonly shared = new Map<string, SharedEngine>();

  /** The engine for `path`, started on first use; pair every call with `release()`. */
  static async acquire(path: string, options: ChdbEngineOptions = {}): Promise<ChdbEngine> {
    const key = resolve(path);
    const existing = ChdbEngine.shared.get(key);
    if (existing) {
      existing.refs += 1;
      const engine = await existing.engine;
      if (engine.alive) return engine;
      // The worker died under an earlier user: start afresh rather than hand out a dead engine.
      existing.refs -= 1;
      if (ChdbEngine.shared.get(key) === existing) ChdbEngine.shared.delete(key);
    }
    const entry: SharedEngine = { engine: ChdbEngine.start(key, options), refs: 1 };
    ChdbEngine.shared.set(key, entry);
    try {
      const engine = await entry.engine;
      engine.entry = entry;
      return engine;
    } catch (err) {
      if (ChdbEngine.shared.get(key) === entry) ChdbEngine.shared.delete(key);
      throw err;
    }
  }

  private static async start(path: string, options: ChdbEngineOptions): Promise<ChdbEngine> {
    const worker = spawnWorker(path);
    const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const version = await new Promise<string>((resolveStart, rejectStart) => {
      const timer = setTimeout(() => {
        void worker.terminate();
        rejectStart(new AnalyticsError('timeout', `chdb did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
      };
      const onMessage = (m: WorkerMessage) => {
        if (m.type === 'ready') {
          done();
          resolveStart(m.version);
        } else if (m.type === 'failed') {
          done();
          rejectStart(toAnalyticsError(m.error));
        }
      };
      const onError = (err: Error) => {
        done();
        rejectStart(
          new AnalyticsError('unavailable', `chdb worker failed to start: ${err.message}`, { cause: err }),
        );
      };
      worker.on('message', onMessage);
      worker.once('error', onError);
    });
    return new ChdbEngine(path, version, worker, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  }

  private entry: SharedEngine | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private stopped: AnalyticsError | null = null;
  private closing = false;
  private readonly exited: Promise<void>;

  private constructor(
    readonly path: string,
    readonly version: string,
    private readonly worker: Worker,
    private readonly requestTimeoutMs: number,
  ) {
    worker.on('message', (m: WorkerMessage) => this.onMessage(m));
    worker.on('error', (err) =>
      this.fail(new AnalyticsError('unavailable', `chdb worker crashed: ${err.message}`)),
    );
    this.exited = new Promise((resolveExit) =>
      worker.once('exit', (code) => {
        this.fail(new AnalyticsError('closed', `chdb worker exited (code ${code})`, { retryable: false }));
        resolveExit();
      }),
    );
    // An idle engine must not keep the process alive; `call` refs it while work is in flight.
    worker.unref();
  }

  get alive(): boolean {
    return this.stopped === null;
  }

  query(request: Omit<QueryRequest, 'op'>): Promise<EngineResult> {
    return this.call({ op: 'query', ...request });
  }

  insert(request: Omit<InsertRequest, 'op'>): Promise<EngineResult> {
    // Copied rather than transferred: the caller's bytes may sit in Buffer's shared pool.
    return this.call({ op: 'insert', ...request });
  }

  /** Drops one reference; the last one closes the session and lets the worker exit. */
  async release(): Promise<void> {
    const entry = this.entry;
    if (entry) {
      entry.refs -= 1;
      if (entry.refs > 0) return;
      if (ChdbEngine.shared.get(this.path) === entry) ChdbEngine.shared.delete(this.path);
    }
    if (this.stopped) return;
    // Stay referenced until the worker is gone, or an otherwise idle process exits mid-close.
    this.closing = true;
    this.worker.ref();
    await this.call({ op: 'close' }).catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    const exitedInTime = await Promise.race([
      this.exited.then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), CLOSE_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!exitedInTime) await this.worker.terminate();
  }

  private call(request: EngineRequest): Promise<EngineResult> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<EngineResult>((resolveCall, rejectCall) => {
      const timer = setTimeout(() => {
        this.settle(id);
        rejectCall(
          new AnalyticsError('timeout', `chdb ${request.op} took longer than ${this.requestTimeoutMs} ms`),
        );
      }, this.requestTimeoutMs);
      this.pending.set(id, { resolve: resolveCall, reject: rejectCall, timer });
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ id, request } satisfies WorkerEnvelope);
    });
  }

  private settle(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    clearTimeout(p.timer);
    this.pending.delete(id);
    if (this.pending.size === 0 && !this.closing) this.worker.unref();
    return p;
  }

  private onMessage(m: WorkerMessage): void {
    if (m.type === 'reply') this.settle(m.id)?.resolve(m.result);
    else if (m.type === 'error') this.settle(m.id)?.reject(toAnalyticsError(m.error));
  }

  private fail(err: AnalyticsError): void {
    this.stopped ??= err;
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(err);
  }
}
