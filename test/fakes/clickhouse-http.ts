import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { ChdbEngine } from '../../src/analytics/chdb/engine.js';
import type { EngineResult } from '../../src/analytics/chdb/protocol.js';
import { AnalyticsError, parseClickHouseException } from '../../src/analytics/port.js';

/**
 * A minimal ClickHouse HTTP interface backed by chdb, for testing the HTTP adapter end to end: no
 * modern ClickHouse server can be installed on this machine. It speaks what
 * @clickhouse/client sends: `/ping`; GET or POST with the query in the `query` URL parameter and/or
 * the body (or a multipart form); `param_<name>` values handed to the engine exactly as received;
 * `database`, `default_format`, `query_id` and any other parameter as a per-request setting;
 * `INSERT ... FORMAT <fmt>` with the rows in the body; gzip both ways; and errors the way the
 * server reports them (status, `X-ClickHouse-Exception-Code`, `Code: N. DB::Exception: ...`).
 */

export interface FakeClickHouse {
  /** Base URL for SVC_CLICKHOUSE_URL / createClient({ url }). */
  readonly url: string;
  /** Statements executed so far. */
  readonly statements: number;
  close(): Promise<void>;
}

/** URL parameters of the HTTP interface that are not settings. */
const NOT_SETTINGS = new Set([
  'query',
  'database',
  'default_format',
  'query_id',
  'session_id',
  'session_timeout',
  'session_check',
  'role',
  'user',
  'password',
  'quota_key',
  'compress',
  'decompress',
  'buffer_size',
  'wait_end_of_query',
  'enable_http_compression',
  'http_zlib_compression_level',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'add_http_cors_header',
]);

const STATUS_BY_CODE: Record<number, number> = {
  62: 400, // SYNTAX_ERROR
  115: 400, // UNKNOWN_SETTING
  456: 400, // UNKNOWN_QUERY_PARAMETER
  164: 403, // READONLY
  60: 404, // UNKNOWN_TABLE
  81: 404, // UNKNOWN_DATABASE
};

const INSERT_WITH_DATA = /^\s*(INSERT\s+INTO\s[\s\S]*?\bFORMAT\s+[A-Za-z]\w*)[ \t]*(?:\r?\n)?([\s\S]*)$/i;
const TRAILING_FORMAT = /\bFORMAT\s+([A-Za-z]\w*)\s*;?\s*$/i;
const READ_ONLY_STATEMENT = /^\s*(?:SELECT|WITH|SHOW|DESCRIBE|DESC|EXISTS|EXPLAIN)\b/i;

const readBody = async (req: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const encoding = req.headers['content-encoding'];
  if (encoding === 'gzip') return gunzipSync(raw);
  if (encoding === 'deflate') return inflateSync(raw);
  return raw;
};

/** The parts of a multipart/form-data body, as @clickhouse/client builds it for large params. */
const parseMultipart = (body: string, boundary: string): Map<string, string> => {
  const parts = new Map<string, string>();
  for (const section of body.split(`--${boundary}`)) {
    const split = section.indexOf('\r\n\r\n');
    if (split < 0) continue;
    const name = /name="([^"]+)"/.exec(section.slice(0, split))?.[1];
    if (name !== undefined) parts.set(name, section.slice(split + 4).replace(/\r\n$/, ''));
  }
  return parts;
};

class HttpFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface Statement {
  sql: string;
  data: Buffer | null;
  params: Record<string, string>;
  settings: Record<string, string>;
  database: string | undefined;
  format: string;
  queryId: string;
  gzipResponse: boolean;
}

const parseRequest = async (req: IncomingMessage, url: URL): Promise<Statement> => {
  const body = await readBody(req);
  const fields = new Map<string, string>(url.searchParams);
  let bodyText: string | null = null;
  const contentType = req.headers['content-type'] ?? '';
  const boundary = /^multipart\/form-data;\s*boundary=(.+)$/i.exec(contentType)?.[1];
  if (boundary !== undefined) {
    for (const [k, v] of parseMultipart(body.toString('utf8'), boundary)) fields.set(k, v);
  } else if (body.length > 0) {
    bodyText = body.toString('utf8');
  }
  const params: Record<string, string> = {};
  const settings: Record<string, string> = {};
  for (const [k, v] of fields) {
    if (k.startsWith('param_')) params[k.slice('param_'.length)] = v;
    else if (!NOT_SETTINGS.has(k)) settings[k] = v;
  }
  const urlQuery = fields.get('query');
  let sql: string;
  let data: Buffer | null = null;
  if (
    urlQuery !== undefined &&
    body.length > 0 &&
    boundary === undefined &&
    INSERT_WITH_DATA.test(urlQuery)
  ) {
    sql = urlQuery.trim();
    data = body;
  } else {
    // As the server does: the URL part and the body together form the statement.
    sql = `${urlQuery ?? ''}${bodyText ?? ''}`;
    const inline = INSERT_WITH_DATA.exec(sql);
    if (inline?.[1] !== undefined && inline[2]?.trim()) {
      sql = inline[1];
      data = Buffer.from(inline[2], 'utf8');
    }
  }
  if (sql.trim() === '') throw new HttpFailure(62, 'Empty query. (SYNTAX_ERROR)');
  if (req.method === 'GET' && (data !== null || !READ_ONLY_STATEMENT.test(sql))) {
    throw new HttpFailure(164, 'Cannot execute query in readonly mode. (READONLY)');
  }
  return {
    sql,
    data,
    params,
    settings,
    database: fields.get('database'),
    format: TRAILING_FORMAT.exec(sql)?.[1] ?? fields.get('default_format') ?? 'TabSeparated',
    queryId: fields.get('query_id') ?? randomUUID(),
    gzipResponse:
      fields.get('enable_http_compression') === '1' && /\bgzip\b/.test(req.headers['accept-encoding'] ?? ''),
  };
};

const summary = (r: EngineResult, resultBytes: number): string =>
  JSON.stringify({
    read_rows: String(r.rowsRead),
    read_bytes: String(r.bytesRead),
    written_rows: String(r.rowsWritten),
    written_bytes: '0',
    total_rows_to_read: String(r.rowsRead),
    result_rows: '0',
    result_bytes: String(resultBytes),
    elapsed_ns: String(Math.round(r.elapsedMs * 1e6)),
  });

const contentType = (format: string): string =>
  format.startsWith('JSON') ? 'application/json; charset=UTF-8' : 'text/plain; charset=UTF-8';

export const startFakeClickHouse = async (options: {
  path: string;
  host?: string;
}): Promise<FakeClickHouse> => {
  const engine = await ChdbEngine.acquire(options.path);
  let statements = 0;

  const fail = (res: ServerResponse, code: number, message: string) => {
    const parsed = parseClickHouseException(message);
    const text = parsed ? message.trim() : `Code: ${code}. DB::Exception: ${message}`;
    res.writeHead(STATUS_BY_CODE[parsed?.code ?? code] ?? 500, {
      'Content-Type': 'text/plain; charset=UTF-8',
      'X-ClickHouse-Exception-Code': String(parsed?.code ?? code),
      'X-ClickHouse-Server-Display-Name': 'svc-fake-clickhouse',
    });
    res.end(`${text} (version ${engine.version})\n`);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname === '/ping' || (url.pathname === '/' && req.method === 'GET' && url.search === '')) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8' }).end('Ok.\n');
      return;
    }
    if (url.pathname !== '/' || (req.method !== 'GET' && req.method !== 'POST')) {
      fail(res, 1001, `There is no handle ${url.pathname}. (UNKNOWN_HANDLER)`);
      return;
    }
    const st = await parseRequest(req, url);
    statements += 1;
    const context = {
      ...(st.database === undefined ? {} : { database: st.database }),
      settings: st.settings,
    };
    const result = st.data
      ? await engine.insert({ statement: st.sql, data: st.data, ...context })
      : await engine.query({ sql: st.sql, params: st.params, format: st.format, ...context });
    const body = st.gzipResponse ? gzipSync(result.body) : Buffer.from(result.body);
    res.writeHead(200, {
      'Content-Type': contentType(st.format),
      'X-ClickHouse-Query-Id': st.queryId,
      'X-ClickHouse-Format': st.format,
      'X-ClickHouse-Timezone': 'UTC',
      'X-ClickHouse-Server-Display-Name': 'svc-fake-clickhouse',
      'X-ClickHouse-Summary': summary(result, result.body.byteLength),
      ...(st.gzipResponse ? { 'Content-Encoding': 'gzip' } : {}),
    });
    res.end(body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (err instanceof HttpFailure) return fail(res, err.code, err.message);
      if (err instanceof AnalyticsError) return fail(res, err.clickhouseCode ?? 1001, err.message);
      fail(res, 1001, `${err instanceof Error ? err.message : String(err)}. (STD_EXCEPTION)`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, options.host ?? '127.0.0.1', resolve));
  const { address, port } = server.address() as AddressInfo;

  return {
    url: `http://${address}:${port}`,
    get statements() {
      return statements;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await engine.release();
    },
  };
};
