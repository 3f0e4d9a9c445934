import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { drainPending, Session } from 'chdb';
import { assertNever } from '../../lib/assert.js';
import { QUERY_SETTINGS } from '../port.js';
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
 * The chdb worker thread: owns the one Session of this process and runs statements one at a time,
 * so a long query stalls only this thread, never the service's event loop. The session starts with
 * the port's QUERY_SETTINGS, so results have the same shape as from the HTTP adapter.
 *
 * Statements go to the addon's connection-level entry points rather than Session.queryBind: those
 * take parameters already in the server's text form, which is what lets the adapter bind exactly
 * like the HTTP interface and lets the test server pass a client's `param_` values through as
 * received. The entry points are checked at start so a chdb upgrade that drops them fails loudly.
 */

interface NativeResult {
  bytes?: Uint8Array;
  elapsed?: number;
  rowsRead?: number;
  bytesRead?: number;
  rowsWritten?: number;
}

interface NativeAddon {
  QueryAsyncConnection(
    connection: unknown,
    sql: string,
    format: string,
    params?: Record<string, string>,
  ): Promise<NativeResult>;
  InsertRawAsyncConnection(
    connection: unknown,
    prefix: string,
    data: Buffer,
    countLines: boolean,
  ): Promise<NativeResult>;
}

const port = parentPort;
if (!port) throw new Error('analytics/chdb/worker.ts must run in a worker thread');
const init = workerData as WorkerInit;

const loadNative = (): NativeAddon => {
  const chdbEntry = createRequire(import.meta.url).resolve('chdb');
  const loader = createRequire(chdbEntry)('./dist/loader.js') as { loadNative(): Partial<NativeAddon> };
  const native = loader.loadNative();
  if (
    typeof native.QueryAsyncConnection !== 'function' ||
    typeof native.InsertRawAsyncConnection !== 'function'
  ) {
    throw new Error(
      'the installed chdb lacks QueryAsyncConnection/InsertRawAsyncConnection (written for chdb 3.4)',
    );
  }
  return native as NativeAddon;
};

const CODE_RE = /Code: (\d+)\./;

const toFailure = (err: unknown): EngineFailure => {
  const e = err instanceof Error ? err : new Error(String(err));
  const declared = (e as { clickhouseCode?: unknown }).clickhouseCode;
  const parsed = CODE_RE.exec(e.message)?.[1];
  const code = typeof declared === 'number' ? declared : parsed === undefined ? undefined : Number(parsed);
  return { name: e.name, message: e.message, ...(code === undefined ? {} : { clickhouseCode: code }) };
};

const sqlString = (v: string): string => `'${v.replace(/[\\']/g, (c) => `\\${c}`)}'`;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

const start = async (): Promise<void> => {
  const native = loadNative();
  const session = new Session(init.path);
  let currentDatabase = 'default';

  const run = (sql: string, format = 'JSONEachRow', params?: Record<string, string>) =>
    params === undefined
      ? native.QueryAsyncConnection(session.connection, sql, format)
      : native.QueryAsyncConnection(session.connection, sql, format, params);
  const text = async (sql: string): Promise<string> => {
    const r = await run(sql, 'TabSeparatedRaw');
    return Buffer.from(r.bytes ?? new Uint8Array())
      .toString('utf8')
      .replace(/\n$/, '');
  };

  const useDatabase = async (database: string | undefined): Promise<void> => {
    if (database === undefined || database === currentDatabase) return;
    if (!IDENT.test(database))
      throw new Error(`Code: 81. DB::Exception: Invalid database name ${database}. (UNKNOWN_DATABASE)`);
    await run(`USE \`${database}\``);
    currentDatabase = database;
  };

  /** HTTP requests are stateless: a setting given with one statement must not leak into the next. */
  const withSettings = async <T>(
    settings: Record<string, string> | undefined,
    work: () => Promise<T>,
  ): Promise<T> => {
    const entries = Object.entries(settings ?? {});
    const previous: [string, string][] = [];
    try {
      for (const [name, value] of entries) {
        if (!IDENT.test(name))
          throw new Error(`Code: 115. DB::Exception: Unknown setting ${name}. (UNKNOWN_SETTING)`);
        const old = await text(`SELECT toString(getSetting(${sqlString(name)}))`);
        if (old === value) continue;
        await run(`SET ${name} = ${sqlString(value)}`);
        previous.push([name, old]);
      }
      return await work();
    } finally {
      for (const [name, old] of previous.reverse())
        await run(`SET ${name} = ${sqlString(old)}`).catch(() => {});
    }
  };

  const result = (r: NativeResult, started: number): EngineResult => ({
    body: r.bytes ? new Uint8Array(r.bytes) : new Uint8Array(),
    rowsRead: r.rowsRead ?? 0,
    bytesRead: r.bytesRead ?? 0,
    rowsWritten: r.rowsWritten ?? 0,
    elapsedMs: typeof r.elapsed === 'number' ? r.elapsed * 1000 : performance.now() - started,
  });

  const query = async (req: QueryRequest): Promise<EngineResult> => {
    const started = performance.now();
    await useDatabase(req.database);
    const hasParams = Object.keys(req.params).length > 0;
    return result(
      await withSettings(req.settings, () => run(req.sql, req.format, hasParams ? req.params : undefined)),
      started,
    );
  };

  const insert = async (req: InsertRequest): Promise<EngineResult> => {
    const started = performance.now();
    await useDatabase(req.database);
    const data =
      typeof req.data === 'string'
        ? Buffer.from(req.data)
        : Buffer.from(req.data.buffer, req.data.byteOffset, req.data.byteLength);
    return result(
      await withSettings(req.settings, () =>
        native.InsertRawAsyncConnection(session.connection, req.statement, data, true),
      ),
      started,
    );
  };

  const close = async (): Promise<EngineResult> => {
    session.close();
    // Until the addon has really let go of the path, another Session in this process is refused.
    await drainPending();
    return result({}, performance.now());
  };

  const handle = (request: EngineRequest): Promise<EngineResult> => {
    switch (request.op) {
      case 'query':
        return query(request);
      case 'insert':
        return insert(request);
      case 'close':
        return close();
      default:
        return assertNever(request);
    }
  };

  let queue: Promise<unknown> = Promise.resolve();
  port.on('message', ({ id, request }: WorkerEnvelope) => {
    queue = queue.then(async () => {
      let reply: WorkerMessage;
      try {
        reply = { type: 'reply', id, result: await handle(request) };
      } catch (err) {
        reply = { type: 'error', id, error: toFailure(err) };
      }
      port.postMessage(reply, reply.type === 'reply' ? [reply.result.body.buffer as ArrayBuffer] : []);
      if (request.op === 'close') port.close();
    });
  });

  for (const [name, value] of Object.entries(QUERY_SETTINGS)) await run(`SET ${name} = ${sqlString(value)}`);
  port.postMessage({ type: 'ready', version: await text('SELECT version()') } satisfies WorkerMessage);
};

start().catch((err: unknown) => {
  port.postMessage({ type: 'failed', error: toFailure(err) } satisfies WorkerMessage);
  port.close();
});
