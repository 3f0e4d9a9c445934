import type { AnalyticsErrorKind } from '../port.js';

/** Messages between the main thread (`engine.ts`) and the chdb worker thread (`worker.ts`). */

export interface WorkerInit {
  /** The engine's data directory; one per process (chdb binds one path per process). */
  path: string;
}

/** Fields every statement carries: where unqualified names resolve and per-call settings. */
interface StatementContext {
  /** `USE`d before the statement when it differs from the current database. */
  database?: string;
  /** Applied for this statement only; the previous values are restored afterwards. */
  settings?: Record<string, string>;
}

export interface QueryRequest extends StatementContext {
  op: 'query';
  sql: string;
  /** Values already in the server's parameter text form (see `params.ts`). */
  params: Record<string, string>;
  /** Output format when the SQL names none. */
  format: string;
}

export interface InsertRequest extends StatementContext {
  op: 'insert';
  /** `INSERT INTO t [(cols)] [SETTINGS ...] FORMAT <fmt>`, the data following in `data`. */
  statement: string;
  /** Text is encoded to UTF-8 in the worker, which keeps that copy off the service's event loop. */
  data: Uint8Array | string;
}

export interface CloseRequest {
  op: 'close';
}

export type EngineRequest = QueryRequest | InsertRequest | CloseRequest;

export interface EngineResult {
  /** The formatted result (empty for statements returning nothing). */
  body: Uint8Array;
  rowsRead: number;
  bytesRead: number;
  rowsWritten: number;
  elapsedMs: number;
}

export interface EngineFailure {
  name: string;
  message: string;
  clickhouseCode?: number;
  /** Set when the failure is already an AnalyticsError (an engine in another process): kept as it is. */
  kind?: AnalyticsErrorKind;
  retryable?: boolean;
}

export type WorkerMessage =
  | { type: 'ready'; version: string }
  | { type: 'failed'; error: EngineFailure }
  | { type: 'reply'; id: number; result: EngineResult }
  | { type: 'error'; id: number; error: EngineFailure };

export type WorkerEnvelope = { id: number; request: EngineRequest };
