/** Event store port (ARCHITECTURE.md "The event store"). */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface EventMetadata {
  actor?: string;
  correlation_id?: string;
  causation_id?: string;
  /** The decision time, supplied by the caller: deciders read no clock. */
  now?: string;
  [key: string]: JsonValue | undefined;
}

export interface NewEvent {
  /** Caller-supplied id; re-appending the same ids is an idempotent no-op. */
  messageId: string;
  type: string;
  schemaVersion?: number;
  data: unknown;
  metadata?: EventMetadata;
}

export interface StoredEvent {
  globalPosition: number;
  streamId: string;
  streamVersion: number;
  messageId: string;
  type: string;
  schemaVersion: number;
  data: unknown;
  metadata: EventMetadata;
  recordedAt: Date;
}

/** `no_stream`: the stream must be empty; `any`: no check; a number: the current stream version. */
export type ExpectedVersion = number | 'no_stream' | 'any';

export interface AppendResult {
  /** Stream version after the append. */
  nextVersion: number;
  /** Global position of the last event written (or found, when replayed). */
  lastPosition: number;
  positions: number[];
  /** True when every message id was already stored: nothing was written. */
  replayed: boolean;
}

export class VersionConflictError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedVersion,
    readonly actual: number,
  ) {
    super(`wrong expected version for stream ${streamId}: expected ${String(expected)}, actual ${actual}`);
    this.name = 'VersionConflictError';
  }
}

/**
 * An event holds a value PostgreSQL's `jsonb` refuses (src/lib/storable.ts): the edges refuse such
 * input with a 400, so reaching the store with one means an entry that skipped that check.
 */
export class UnstorableEventError extends Error {
  constructor(
    readonly streamId: string,
    readonly eventType: string,
    /** The field inside the event, e.g. `data.comment`. */
    readonly field: string,
    readonly problem: string,
  ) {
    super(`event ${eventType} for stream ${streamId} cannot be stored: ${field} ${problem}`);
    this.name = 'UnstorableEventError';
  }
}

export class IdempotencyMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IdempotencyMismatchError';
  }
}

export interface ReadAllOptions {
  /** Read events strictly after this position (0 = from the start). */
  after: number;
  limit: number;
  /** Only events whose category (stream id prefix before the first '-') is listed. */
  categories?: readonly string[];
}

export interface Subscription {
  close(): Promise<void>;
  /** Resolves once the subscription has caught up with the head at least once. */
  readonly caughtUp: Promise<void>;
}

/** One stream's part of `appendMany`. */
export interface StreamAppend {
  streamId: string;
  expected: ExpectedVersion;
  events: readonly NewEvent[];
}

export interface EventStore {
  append(streamId: string, expected: ExpectedVersion, events: readonly NewEvent[]): Promise<AppendResult>;
  /**
   * Several appends, in order, in one transaction: all are written or none (a version conflict,
   * an idempotency mismatch or an unstorable event in any of them rejects the whole call, with the
   * error `append` would have thrown). Each result is what `append` would have returned for it.
   */
  appendMany(appends: readonly StreamAppend[]): Promise<AppendResult[]>;
  readStream(
    streamId: string,
    options?: { fromVersion?: number },
  ): Promise<{ version: number; events: StoredEvent[] }>;
  readAll(options: ReadAllOptions): Promise<StoredEvent[]>;
  headPosition(): Promise<number>;
  /** Delivers events in global order from `after`, batch by batch; waits for notifications. */
  subscribe(
    after: number,
    handler: (batch: StoredEvent[]) => Promise<void>,
    options?: {
      batchSize?: number;
      pollMs?: number;
      categories?: readonly string[];
      onError?: (err: unknown) => void;
    },
  ): Subscription;
  close(): Promise<void>;
}

/** The category of a stream is its id up to the first '-': `wallet-ws_1` is in `wallet`. */
export const categoryOf = (streamId: string): string => {
  const dash = streamId.indexOf('-');
  return dash === -1 ? streamId : streamId.slice(0, dash);
};
