import { join } from 'node:path';
import { formatQueryParams } from '../params.js';
import {
  AnalyticsError,
  type AnalyticsHealth,
  type AnalyticsRow,
  type AnalyticsStore,
  assertIdentifier,
  decodeJsonEachRow,
  encodeJsonCompactEachRowWithNames,
  encodeJsonEachRow,
  INSERT_SETTINGS,
  type QueryParams,
  wellFormedRows,
} from '../port.js';
import type { Engine } from './channel.js';
import { ChdbEngine, type ChdbEngineOptions } from './engine.js';

export interface ChdbStoreOptions extends ChdbEngineOptions {
  /** The engine's directory; `chdbPath(dataDir)` for the service. */
  path: string;
  /** Must exist already unless `createDatabase` is set. */
  database?: string;
  createDatabase?: boolean;
}

/** Where the embedded engine keeps its data under SVC_DATA_DIR. */
export const chdbPath = (dataDir: string): string => join(dataDir, 'clickhouse');

const decoder = new TextDecoder();

const INSERT_SETTINGS_SQL = Object.entries(INSERT_SETTINGS)
  .map(([k, v]) => (typeof v === 'number' ? `${k}=${v}` : `${k}='${v}'`))
  .join(', ');

/** The embedded analytics adapter: chdb in a worker thread, persistent under `path`. */
export class ChdbAnalyticsStore implements AnalyticsStore {
  readonly adapter = 'chdb' as const;
  private closed = false;

  private constructor(
    /** The engine statements run on; a data process answers its parent's statements with it. */
    readonly engine: Engine,
    readonly database: string,
  ) {}

  /**
   * A store over an engine this process does not own (channel.ts): the database was created and
   * migrated by the owner.
   */
  static over(engine: Engine, database: string): ChdbAnalyticsStore {
    return new ChdbAnalyticsStore(engine, assertIdentifier(database, 'database'));
  }

  static async open(options: ChdbStoreOptions): Promise<ChdbAnalyticsStore> {
    const database = assertIdentifier(options.database ?? 'default', 'database');
    const engine = await ChdbEngine.acquire(options.path, options);
    try {
      if (options.createDatabase) {
        await engine.query({
          sql: `CREATE DATABASE IF NOT EXISTS \`${database}\``,
          params: {},
          format: 'JSONEachRow',
        });
      }
      return new ChdbAnalyticsStore(engine, database);
    } catch (err) {
      await engine.release();
      throw err;
    }
  }

  async insert(table: string, rows: readonly AnalyticsRow[]): Promise<void> {
    this.assertOpen();
    assertIdentifier(table, 'table', true);
    if (rows.length === 0) return;
    // Rows of one shape (ingest's) go in the compact format; a string is cloned to the worker as
    // it is, and the worker encodes it to UTF-8.
    const stored = wellFormedRows(rows);
    const compact = encodeJsonCompactEachRowWithNames(stored);
    const format = compact === null ? 'JSONEachRow' : 'JSONCompactEachRowWithNames';
    await this.engine.insert({
      statement: `INSERT INTO ${table} SETTINGS ${INSERT_SETTINGS_SQL} FORMAT ${format}`,
      data: compact ?? encodeJsonEachRow(stored),
      database: this.database,
    });
  }

  async query<T = AnalyticsRow>(sql: string, params: QueryParams = {}): Promise<T[]> {
    this.assertOpen();
    const result = await this.engine.query({
      sql,
      params: formatQueryParams(params),
      format: 'JSONEachRow',
      database: this.database,
    });
    return decodeJsonEachRow<T>(decoder.decode(result.body));
  }

  async command(sql: string, params: QueryParams = {}): Promise<void> {
    this.assertOpen();
    await this.engine.query({
      sql,
      params: formatQueryParams(params),
      format: 'JSONEachRow',
      database: this.database,
    });
  }

  async health(): Promise<AnalyticsHealth> {
    const started = performance.now();
    try {
      this.assertOpen();
      await this.engine.query({ sql: 'SELECT 1', params: {}, format: 'JSONEachRow' });
      return {
        ok: true,
        adapter: 'chdb',
        latencyMs: performance.now() - started,
        version: this.engine.version,
      };
    } catch (err) {
      return { ok: false, adapter: 'chdb', error: err instanceof Error ? err.message : String(err) };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.engine.release();
  }

  private assertOpen(): void {
    if (this.closed) throw new AnalyticsError('closed', 'the analytics store is closed');
  }
}
