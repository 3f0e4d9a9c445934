import {
  type ClickHouseClient,
  ClickHouseError,
  ClickHouseLogLevel,
  type ClickHouseSettings,
  createClient,
} from '@clickhouse/client';
import { isClusterName } from '../cluster-ddl.js';
import {
  AnalyticsError,
  type AnalyticsHealth,
  type AnalyticsRow,
  type AnalyticsStore,
  assertIdentifier,
  assertParamNames,
  INSERT_SETTINGS,
  jsonReplacer,
  QUERY_SETTINGS,
  type QueryParams,
  wellFormedRows,
} from '../port.js';

export interface HttpStoreOptions {
  /** SVC_CLICKHOUSE_URL; credentials may be given in it. */
  url: string;
  /** Must exist already unless `createDatabase` is set. Overrides a database named in the URL. */
  database?: string;
  createDatabase?: boolean;
  /** Per request; the client's own default (300 s) applies when absent. */
  requestTimeoutMs?: number;
  maxOpenConnections?: number;
  /** Settings every statement carries (a cluster's: cli/storage.ts). */
  settings?: ClickHouseSettings;
  /** Creates the database `ON CLUSTER` this cluster, so every node has it before its tables. */
  createDatabaseOnCluster?: string;
}

/** Errors a TCP connection reports when the server is down, restarting or behind a failing proxy. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export const toAnalyticsError = (err: unknown, what: string): AnalyticsError => {
  if (err instanceof AnalyticsError) return err;
  if (err instanceof ClickHouseError) {
    const code = Number(err.code);
    return new AnalyticsError('server', err.message.trim(), {
      ...(Number.isInteger(code) ? { clickhouseCode: code } : {}),
      clickhouseType: err.type,
      cause: err,
    });
  }
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT')) {
    return new AnalyticsError('timeout', `${what}: ${e.message}`, { cause: e });
  }
  if (/timeout/i.test(e.message)) return new AnalyticsError('timeout', `${what}: ${e.message}`, { cause: e });
  // Anything else is the transport or a proxy in front of the server, not the statement itself.
  const known = typeof code === 'string' && NETWORK_CODES.has(code);
  return new AnalyticsError(
    'unavailable',
    `${what}: ${e.message}${known ? '' : ` (${String(code ?? e.name)})`}`,
    {
      cause: e,
    },
  );
};

const clientFor = (options: HttpStoreOptions, database: string | undefined): ClickHouseClient =>
  createClient({
    url: options.url,
    ...(database === undefined ? {} : { database }),
    ...(options.requestTimeoutMs === undefined ? {} : { request_timeout: options.requestTimeoutMs }),
    max_open_connections: options.maxOpenConnections ?? 10,
    clickhouse_settings: {
      ...options.settings,
      output_format_json_quote_64bit_integers: Number(
        QUERY_SETTINGS.output_format_json_quote_64bit_integers,
      ) as 0 | 1,
      output_format_json_quote_decimals: Number(QUERY_SETTINGS.output_format_json_quote_decimals) as 0 | 1,
    },
    json: { parse: JSON.parse, stringify: (value: unknown) => JSON.stringify(value, jsonReplacer) },
    // Failures surface as AnalyticsError to the caller, who decides what to log.
    log: { level: ClickHouseLogLevel.OFF },
  });

/** The scale-out analytics adapter: a ClickHouse server over HTTP (SVC_CLICKHOUSE_URL). */
export class HttpAnalyticsStore implements AnalyticsStore {
  readonly adapter = 'clickhouse' as const;
  private closed = false;

  private constructor(
    private readonly client: ClickHouseClient,
    readonly database: string,
  ) {}

  static async open(options: HttpStoreOptions): Promise<HttpAnalyticsStore> {
    const named = options.database ?? (new URL(options.url).pathname.replace(/^\//, '') || 'default');
    const database = assertIdentifier(named, 'database');
    if (options.createDatabase) {
      // A request naming a database that does not exist yet is refused, so create it from `default`.
      const bootstrap = clientFor(options, 'default');
      try {
        const cluster = options.createDatabaseOnCluster;
        if (cluster !== undefined && !isClusterName(cluster))
          throw new AnalyticsError('invalid', `cluster ${JSON.stringify(cluster)} is not a cluster name`);
        const onCluster = cluster === undefined ? '' : ` ON CLUSTER '${cluster}'`;
        await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS \`${database}\`${onCluster}` });
      } catch (err) {
        throw toAnalyticsError(err, 'create database');
      } finally {
        await bootstrap.close();
      }
    }
    return new HttpAnalyticsStore(clientFor(options, database), database);
  }

  async insert(table: string, rows: readonly AnalyticsRow[]): Promise<void> {
    this.assertOpen();
    assertIdentifier(table, 'table', true);
    if (rows.length === 0) return;
    try {
      await this.client.insert({
        table,
        values: wellFormedRows(rows) as AnalyticsRow[],
        format: 'JSONEachRow',
        clickhouse_settings: INSERT_SETTINGS,
      });
    } catch (err) {
      throw toAnalyticsError(err, `insert into ${table}`);
    }
  }

  async query<T = AnalyticsRow>(sql: string, params: QueryParams = {}): Promise<T[]> {
    this.assertOpen();
    assertParamNames(params);
    try {
      const result = await this.client.query({ query: sql, query_params: params, format: 'JSONEachRow' });
      return await result.json<T>();
    } catch (err) {
      throw toAnalyticsError(err, 'query');
    }
  }

  async command(sql: string, params: QueryParams = {}): Promise<void> {
    this.assertOpen();
    assertParamNames(params);
    try {
      await this.client.command({ query: sql, query_params: params });
    } catch (err) {
      throw toAnalyticsError(err, 'command');
    }
  }

  async health(): Promise<AnalyticsHealth> {
    const started = performance.now();
    try {
      this.assertOpen();
      const [row] = await this.query<{ version: string }>('SELECT version() AS version');
      return {
        ok: true,
        adapter: 'clickhouse',
        latencyMs: performance.now() - started,
        ...(row ? { version: row.version } : {}),
      };
    } catch (err) {
      return { ok: false, adapter: 'clickhouse', error: err instanceof Error ? err.message : String(err) };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new AnalyticsError('closed', 'the analytics store is closed');
  }
}
