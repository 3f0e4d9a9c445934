import { AnalyticsError } from '../port.js';
import { type ChdbEngine, DEFAULT_REQUEST_TIMEOUT_MS, toAnalyticsError } from './engine.js';
import type { EngineFailure, EngineResult, InsertRequest, QueryRequest, WorkerEnvelope } from './protocol.js';

/**
 * The embedded engine across a process boundary. chdb binds one data path per process, so when
 * `svc serve` runs its data roles in a process of their own (cli/data-process.ts), that process
 * owns the engine and the query role in the serving process reaches it through this channel: the
 * same statements as the worker protocol (protocol.ts), carried by the IPC channel of a forked
 * child (`serialization: 'advanced'`, so result bytes cross as they are).
 */

/** What the store needs of an engine: the worker-backed ChdbEngine, or this channel's client. */
export type Engine = Pick<ChdbEngine, 'version' | 'query' | 'insert' | 'release'>;

/** The two ends of a Node IPC channel: `process` in the child, the ChildProcess in the parent. */
export interface Channel {
  send(message: unknown, callback: (err: Error | null) => void): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

/** Messages of this channel carry this tag, so they share the IPC channel with other traffic. */
const TAG = 'svc.analytics';

type Call = { tag: typeof TAG; call: WorkerEnvelope };
type Answer =
  | { tag: typeof TAG; id: number; result: EngineResult }
  | { tag: typeof TAG; id: number; error: EngineFailure };

const isCall = (m: unknown): m is Call => (m as Call | null)?.tag === TAG && 'call' in (m as Call);
const isAnswer = (m: unknown): m is Answer => (m as Answer | null)?.tag === TAG && 'id' in (m as Answer);

/** An AnalyticsError keeps its kind and retryability across the channel; anything else is a server error. */
const failureOf = (err: unknown): EngineFailure => {
  if (err instanceof AnalyticsError)
    return {
      name: err.name,
      message: err.message,
      kind: err.kind,
      retryable: err.retryable,
      ...(err.clickhouseCode === null ? {} : { clickhouseCode: err.clickhouseCode }),
    };
  const e = err instanceof Error ? err : new Error(String(err));
  return { name: e.name, message: e.message };
};

/**
 * The owner's side: answers statements arriving on `channel` with `engine`. Closing is the
 * owner's business, never the caller's: a `close` from the other side is refused.
 */
export const serveEngine = (channel: Channel, engine: Engine): (() => void) => {
  const onMessage = (m: unknown) => {
    if (!isCall(m)) return;
    const { id, request } = m.call;
    const run =
      request.op === 'query'
        ? engine.query(request)
        : request.op === 'insert'
          ? engine.insert(request)
          : Promise.reject(new Error('the engine is closed by the process that owns it'));
    // An answer the caller can no longer take (its process is going) is dropped with it.
    const ignore = () => {};
    run.then(
      (result) => channel.send({ tag: TAG, id, result } satisfies Answer, ignore),
      (err: unknown) => channel.send({ tag: TAG, id, error: failureOf(err) } satisfies Answer, ignore),
    );
  };
  channel.on('message', onMessage);
  return () => channel.off('message', onMessage);
};

interface Pending {
  resolve(result: EngineResult): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** The caller's side: an Engine whose statements run in the process at the other end. */
export class ChannelEngine implements Engine {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private channel: Channel | null = null;
  private readonly onMessage = (m: unknown) => {
    if (!isAnswer(m)) return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    if ('result' in m) p.resolve(m.result);
    else p.reject(toAnalyticsError(m.error));
  };

  constructor(
    readonly version: string,
    private readonly requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
  ) {}

  /** The channel statements go to from now on; null while the owner is gone (they then fail). */
  attach(channel: Channel | null): void {
    this.channel?.off('message', this.onMessage);
    this.channel = channel;
    channel?.on('message', this.onMessage);
    if (!channel) this.failPending('the analytics process is not running');
  }

  query(request: Omit<QueryRequest, 'op'>): Promise<EngineResult> {
    return this.call({ op: 'query', ...request });
  }

  insert(request: Omit<InsertRequest, 'op'>): Promise<EngineResult> {
    return this.call({ op: 'insert', ...request });
  }

  async release(): Promise<void> {
    this.attach(null);
  }

  private call(request: QueryRequest | InsertRequest): Promise<EngineResult> {
    const channel = this.channel;
    if (!channel)
      return Promise.reject(new AnalyticsError('unavailable', 'the analytics process is not running'));
    const id = this.nextId++;
    return new Promise<EngineResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new AnalyticsError('timeout', `chdb ${request.op} took longer than ${this.requestTimeoutMs} ms`),
        );
      }, this.requestTimeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      channel.send({ tag: TAG, call: { id, request } } satisfies Call, (err) => {
        if (!err || !this.pending.delete(id)) return;
        clearTimeout(timer);
        reject(
          new AnalyticsError(
            'unavailable',
            `the analytics process did not take the statement: ${err.message}`,
          ),
        );
      });
    });
  }

  private failPending(reason: string): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new AnalyticsError('unavailable', reason));
    }
  }
}
