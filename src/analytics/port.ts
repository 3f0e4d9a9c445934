/**
 * Analytics port (ARCHITECTURE.md "Storage and the flow of data"). The SQL is
 * ClickHouse SQL written once: the embedded default runs it on chdb in a worker thread
 * (`chdb/store.ts`), the scale-out deployment on a ClickHouse server over HTTP (`http/store.ts`).
 * `test/contract/analytics.contract.ts` holds both adapters to the same behaviour.
 */

export type AnalyticsRow = Record<string, unknown>;

/** Values of `{name:Type}` placeholders, bound by the engine: never spliced into the SQL text. */
export type QueryParams = Record<string, unknown>;

export interface AnalyticsHealth {
  ok: boolean;
  adapter: 'chdb' | 'clickhouse';
  latencyMs?: number;
  /** Engine version reported by `version()` when reachable. */
  version?: string;
  error?: string;
}

export interface AnalyticsStore {
  readonly adapter: 'chdb' | 'clickhouse';
  /** The database unqualified table names resolve in. */
  readonly database: string;
  /**
   * Appends rows as JSONEachRow. Date values travel as ISO-8601 text and bigint as decimal
   * strings, so DateTime64 and 64-bit columns keep their precision. Resolves once durable.
   */
  insert(table: string, rows: readonly AnalyticsRow[]): Promise<void>;
  /** A SELECT; rows come back as JSONEachRow objects (64-bit integers and decimals as strings). */
  query<T = AnalyticsRow>(sql: string, params?: QueryParams): Promise<T[]>;
  /** DDL or any statement whose result is not read. */
  command(sql: string, params?: QueryParams): Promise<void>;
  health(): Promise<AnalyticsHealth>;
  close(): Promise<void>;
}

/**
 * What went wrong, for `svc_ingest_clickhouse_errors_total{kind}` and for the retry decision:
 * `unavailable` (no answer, connection refused or reset), `timeout`, `server` (the engine raised
 * an exception), `invalid` (the caller's input was refused before reaching the engine),
 * `closed` (the store was closed).
 */
export type AnalyticsErrorKind = 'unavailable' | 'timeout' | 'server' | 'invalid' | 'closed';

export class AnalyticsError extends Error {
  readonly kind: AnalyticsErrorKind;
  /** True when the same call may succeed later unchanged: callers nak or spool, not dead-letter. */
  readonly retryable: boolean;
  /** The ClickHouse exception code (`Code: N.`), when the engine raised one. */
  readonly clickhouseCode: number | null;
  readonly clickhouseType: string | null;

  constructor(
    kind: AnalyticsErrorKind,
    message: string,
    options: { retryable?: boolean; clickhouseCode?: number; clickhouseType?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AnalyticsError';
    this.kind = kind;
    this.clickhouseCode = options.clickhouseCode ?? null;
    this.clickhouseType = options.clickhouseType ?? null;
    this.retryable =
      options.retryable ??
      (kind === 'unavailable' ||
        kind === 'timeout' ||
        (kind === 'server' &&
          this.clickhouseCode !== null &&
          TRANSIENT_CLICKHOUSE_CODES.has(this.clickhouseCode)));
  }
}

/**
 * ClickHouse exception codes that describe the server's momentary state rather than the query, so
 * the same statement can succeed when retried (names checked with errorCodeToName()).
 */
export const TRANSIENT_CLICKHOUSE_CODES: ReadonlySet<number> = new Set([
  159, // TIMEOUT_EXCEEDED
  160, // TOO_SLOW
  202, // TOO_MANY_SIMULTANEOUS_QUERIES
  209, // SOCKET_TIMEOUT
  210, // NETWORK_ERROR
  241, // MEMORY_LIMIT_EXCEEDED
  242, // TABLE_IS_READ_ONLY
  252, // TOO_MANY_PARTS
  285, // TOO_FEW_LIVE_REPLICAS
  319, // UNKNOWN_STATUS_OF_INSERT
  425, // SYSTEM_ERROR
  999, // KEEPER_EXCEPTION
]);

const EXCEPTION_RE =
  /Code: (\d+)\.[\s\S]*?DB::Exception: ([\s\S]*?)(?: \(([A-Z][A-Z0-9_]{2,})\))?(?: \(version [^)]*\))?\s*$/;

/** Reads `Code: N. DB::Exception: message (TYPE)`, the text every ClickHouse front end reports. */
export const parseClickHouseException = (
  text: string,
): { code: number; message: string; type: string | null } | null => {
  const m = EXCEPTION_RE.exec(text.trim());
  if (!m) return null;
  return { code: Number(m[1]), message: m[2] ?? text, type: m[3] ?? null };
};

const IDENTIFIER_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Table and database names reach SQL text (they cannot be bound as values), so only plain
 * identifiers are accepted, optionally `database.table`.
 */
export const assertIdentifier = (name: string, what: string, allowQualified = false): string => {
  const parts = allowQualified ? name.split('.') : [name];
  if (parts.length > 2 || !parts.every((p) => IDENTIFIER_RE.test(p) && p.length <= 128)) {
    throw new AnalyticsError('invalid', `${what} ${JSON.stringify(name)} is not a plain identifier`);
  }
  return name;
};

/** A parameter's name travels as `param_<name>`; anything but an identifier is a caller's bug. */
export const assertParamNames = (params: QueryParams): QueryParams => {
  for (const name of Object.keys(params)) {
    if (!IDENTIFIER_RE.test(name)) {
      throw new AnalyticsError(
        'invalid',
        `query parameter name ${JSON.stringify(name)} is not an identifier`,
      );
    }
  }
  return params;
};

/**
 * JSON.stringify refuses bigint; ClickHouse reads a quoted decimal into any integer column, which
 * keeps UInt64/Int128 values exact.
 */
export const jsonReplacer = (_key: string, value: unknown): unknown =>
  typeof value === 'bigint' ? value.toString() : value;

/**
 * One JSON object per line: the JSONEachRow body both adapters send. A replacer makes
 * JSON.stringify call back into JS for every value (several times slower on ingest's wide rows),
 * so a row goes without one unless it holds a bigint, which JSON.stringify refuses with a TypeError.
 */
export const encodeJsonEachRow = (rows: readonly AnalyticsRow[]): string => {
  const lines: string[] = new Array(rows.length + 1);
  rows.forEach((row, i) => {
    try {
      lines[i] = JSON.stringify(row);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      lines[i] = JSON.stringify(row, jsonReplacer);
    }
  });
  lines[rows.length] = '';
  return lines.join('\n');
};

/**
 * The same rows as JSONCompactEachRowWithNames: a line of column names, then one array of values
 * per row. About half the bytes of JSONEachRow on wide rows, and the engine parses it faster (it
 * matches names once, not per row). Null when some row has other keys or another key order than
 * the first, an undefined value, or a nested object or array (whose compact form differs): the
 * caller then sends JSONEachRow.
 */
export const encodeJsonCompactEachRowWithNames = (rows: readonly AnalyticsRow[]): string | null => {
  if (rows.length === 0) return '';
  const names = Object.keys(rows[0]!);
  const lines: string[] = new Array(rows.length + 2);
  lines[0] = JSON.stringify(names);
  const values: unknown[] = new Array(names.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const keys = Object.keys(row);
    if (keys.length !== names.length) return null;
    for (let k = 0; k < keys.length; k++) {
      if (keys[k] !== names[k]) return null;
      const v = row[keys[k]!];
      if (v === undefined || (typeof v === 'object' && v !== null && !(v instanceof Date))) return null;
      values[k] = v;
    }
    try {
      lines[i + 1] = JSON.stringify(values);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      lines[i + 1] = JSON.stringify(values, jsonReplacer);
    }
  }
  lines[rows.length + 1] = '';
  return lines.join('\n');
};

/** String.prototype.isWellFormed and toWellFormed (ES2024; every supported Node has them). */
type WellFormedText = string & { isWellFormed(): boolean; toWellFormed(): string };

const wellFormedValue = (v: unknown): unknown => {
  if (typeof v === 'string') {
    const text = v as WellFormedText;
    return text.isWellFormed() ? v : text.toWellFormed();
  }
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const w = wellFormedValue(v[i]);
      if (w === v[i]) continue;
      out ??= [...v];
      out[i] = w;
    }
    return out ?? v;
  }
  if (v !== null && typeof v === 'object' && !(v instanceof Date)) return wellFormedRow(v as AnalyticsRow);
  return v;
};

const wellFormedRow = (row: AnalyticsRow): AnalyticsRow => {
  let out: AnalyticsRow | null = null;
  for (const key in row) {
    const v = row[key];
    const w = wellFormedValue(v);
    if (w !== v) {
      out ??= { ...row };
      out[key] = w;
    }
    const k = key as WellFormedText;
    if (!k.isWellFormed()) {
      out ??= { ...row };
      delete out[key];
      out[k.toWellFormed()] = w;
    }
  }
  return out ?? row;
};

/**
 * Rows whose every string is well-formed UTF-16: a lone surrogate (which any JSON body can carry,
 * as `"\ud800"`) becomes U+FFFD. ClickHouse refuses such a string, and with it the whole insert, so
 * one request's bytes would keep every other request of the batch out of analytics (SPEC 6: no
 * record poisons another). Rows that are already well-formed are returned as they are.
 */
export const wellFormedRows = (rows: readonly AnalyticsRow[]): readonly AnalyticsRow[] => {
  let out: AnalyticsRow[] | null = null;
  for (let i = 0; i < rows.length; i++) {
    const w = wellFormedRow(rows[i]!);
    if (w === rows[i]) continue;
    out ??= [...rows];
    out[i] = w;
  }
  return out ?? rows;
};

/** Parses a JSONEachRow body (one object per line; JSON escapes newlines inside values). */
export const decodeJsonEachRow = <T>(text: string): T[] => {
  const body = text.trimEnd();
  if (body === '') return [];
  return JSON.parse(`[${body.replaceAll('\n', ',')}]`) as T[];
};

/**
 * Settings every insert carries: ISO-8601 timestamps with a zone (Date.toJSON) parse exactly, and
 * the insert is synchronous. Callers already batch, and newer engines default to asynchronous
 * inserts, which would hold each batch until the server's flush timer fires.
 */
export const INSERT_SETTINGS = { date_time_input_format: 'best_effort', async_insert: 0 } as const;

/**
 * Settings every query runs with, whatever the server's defaults (they changed across ClickHouse
 * releases): 64-bit integers and decimals come back as strings, so no value passes through a
 * lossy JS number (STYLE.md rule 9).
 */
export const QUERY_SETTINGS = {
  output_format_json_quote_64bit_integers: '1',
  output_format_json_quote_decimals: '1',
} as const;
