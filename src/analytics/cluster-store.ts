import { type ClusterTarget, toClusterCommand } from './cluster-ddl.js';
import { AnalyticsError, type AnalyticsRow, type AnalyticsStore, type QueryParams } from './port.js';

/**
 * The analytics store of a cluster (SVC_CLICKHOUSE_DDL=cluster). Reads and inserts go to the
 * Distributed tables as written; a statement changing rows in place (the vector stores' purge is
 * a lightweight DELETE) goes to the `_local` tables of every node instead, since a Distributed
 * table refuses mutations.
 */
export const clusterStore = (store: AnalyticsStore, target: ClusterTarget): AnalyticsStore => ({
  adapter: store.adapter,
  database: store.database,
  insert: (table: string, rows: readonly AnalyticsRow[]) => store.insert(table, rows),
  query: <T = AnalyticsRow>(sql: string, params?: QueryParams) => store.query<T>(sql, params),
  command: async (sql: string, params?: QueryParams) => {
    let statement: string;
    try {
      statement = toClusterCommand(sql, target);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new AnalyticsError('invalid', `not run on cluster ${target.cluster}: ${reason}`, { cause: err });
    }
    await store.command(statement, params);
  },
  health: () => store.health(),
  close: () => store.close(),
});
