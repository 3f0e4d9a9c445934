import { assertIdentifier } from './port.js';
import { columnsOf, type Scanned, scan } from './sql-scan.js';

/**
 * Cluster DDL (SVC_CLICKHOUSE_DDL=cluster), derived from the single-node migrations so that
 * migrations/clickhouse stays the one source of truth. Each table `<name>` becomes `<name>_local`,
 * the Replicated variant of its engine on every node, and `<name>`, a Distributed table over them:
 * every statement of the service reads and writes `<name>` unchanged. A statement with no cluster
 * form known here is refused with the reason, never passed on half right.
 */

export interface ClusterTarget {
  /** SVC_CLICKHOUSE_CLUSTER, a cluster of the servers' remote_servers. */
  cluster: string;
  /** The database of every table, the same on every node. */
  database: string;
  /**
   * False only for an engine without Keeper (the embedded one, in tests). Replication and the
   * distributed DDL queue of ON CLUSTER both need Keeper, so the `_local` tables keep their
   * single-node engines and no statement says ON CLUSTER; the Distributed tables are unchanged.
   */
  keeper: boolean;
}

/** Letters, digits, `_ . -`, and `{}` for a macro: safe inside a quoted literal. */
const CLUSTER_RE = /^[A-Za-z0-9_.{}-]+$/;
export const isClusterName = (value: string): boolean => CLUSTER_RE.test(value);

export const clusterTarget = (
  database: string,
  cluster: string | undefined,
  keeper = true,
): ClusterTarget => {
  if (cluster === undefined || cluster === '')
    throw new Error('SVC_CLICKHOUSE_DDL=cluster needs SVC_CLICKHOUSE_CLUSTER, the name of the cluster');
  if (!CLUSTER_RE.test(cluster))
    throw new Error(`SVC_CLICKHOUSE_CLUSTER ${JSON.stringify(cluster)} is not a cluster name`);
  return { cluster, database: assertIdentifier(database, 'database'), keeper };
};

/**
 * The Distributed sharding key of each table. FINAL collapses rows on each shard only, so the rows
 * one sorting key names (copies of one request, span or file row) must land on one shard: each key
 * hashes sorting-key columns only, which the transformation checks. Among those columns the choice
 * keeps together what queries relate, so an IN or JOIN between two of the tables can be answered
 * shard by shard, without putting a whole tenant on one shard:
 * - a request with its usage and cost lines, by request_id (ids spread evenly; org_id alone would
 *   put the largest tenant's traffic on one shard);
 * - a trace's spans, events and artifacts, by (org_id, project_id, trace_id);
 * - a vector store's chunks and file rows, by (org_id, project_id, vector_store_id): a search is
 *   one store's chunks joined to its files;
 * - requests_per_minute is filled by its view on each shard's requests_local, so one minute's row
 *   has a partial sum on every shard (its readers sum anyway: SummingMergeTree merges late);
 * - svc_schema_migrations, by name.
 */
export const SHARDING_KEYS: Readonly<Record<string, string>> = {
  requests: 'cityHash64(request_id)',
  request_usage_lines: 'cityHash64(request_id)',
  request_cost_lines: 'cityHash64(request_id)',
  requests_per_minute: 'cityHash64(org_id)',
  trace_spans: 'cityHash64(org_id, project_id, trace_id)',
  trace_events: 'cityHash64(org_id, project_id, trace_id)',
  trace_artifacts: 'cityHash64(org_id, project_id, trace_id)',
  vector_chunks: 'cityHash64(org_id, project_id, vector_store_id)',
  vector_store_files: 'cityHash64(org_id, project_id, vector_store_id)',
  svc_schema_migrations: 'cityHash64(name)',
};

/** MergeTree engines with a Replicated variant taking the same parameters after its path and replica. */
const REPLICABLE = new Set([
  'MergeTree',
  'ReplacingMergeTree',
  'SummingMergeTree',
  'AggregatingMergeTree',
  'CollapsingMergeTree',
  'VersionedCollapsingMergeTree',
]);

const IDENT = '([A-Za-z_]\\w*)';
const CREATE_TABLE = new RegExp(`^CREATE\\s+TABLE\\s+(IF\\s+NOT\\s+EXISTS\\s+)?${IDENT}\\s*\\(`, 'i');
const ENGINE = /^\s*ENGINE\s*=\s*([A-Za-z_]\w*)(\s*\()?/i;
const CLAUSE_AFTER_ORDER_BY = /\b(?:PARTITION\s+BY|PRIMARY\s+KEY|SAMPLE\s+BY|TTL|SETTINGS|COMMENT)\b/i;
const MATERIALIZED_VIEW = new RegExp(
  `^CREATE\\s+MATERIALIZED\\s+VIEW\\s+(IF\\s+NOT\\s+EXISTS\\s+)?${IDENT}\\s+TO\\s+${IDENT}\\s+AS\\s+`,
  'i',
);
const ALTER_TABLE = new RegExp(`^ALTER\\s+TABLE\\s+${IDENT}\\s+`, 'i');
const DELETE_FROM = new RegExp(`^DELETE\\s+FROM\\s+${IDENT}\\s+(?=WHERE\\b|IN\\s+PARTITION\\b)`, 'i');
const OPTIMIZE = new RegExp(`^OPTIMIZE\\s+TABLE\\s+${IDENT}(?![\\w.])`, 'i');
const TRUNCATE = new RegExp(`^TRUNCATE\\s+(?:TABLE\\s+)?(IF\\s+EXISTS\\s+)?${IDENT}$`, 'i');
const INSERT = new RegExp(`^INSERT\\s+INTO\\s+${IDENT}\\b`, 'i');

/** ALTER commands by where they apply: the Distributed table mirrors the columns of its `_local`. */
const COLUMN_COMMAND = /^(?:ADD|DROP|MODIFY|RENAME|COMMENT)\s+COLUMN\b/i;
const STORAGE_COMMAND =
  /^(?:(?:ADD|DROP|MATERIALIZE|CLEAR)\s+(?:INDEX|PROJECTION)|(?:MATERIALIZE|CLEAR)\s+COLUMN|(?:MODIFY|REMOVE|MATERIALIZE)\s+TTL|(?:MODIFY|RESET)\s+SETTING|MODIFY\s+ORDER\s+BY)\b/i;
const DATA_COMMAND = /^(?:DELETE|UPDATE)\b/i;

const onCluster = (t: ClusterTarget): string => (t.keeper ? ` ON CLUSTER '${t.cluster}'` : '');
const local = (t: ClusterTarget, name: string): string => `${t.database}.${name}_local`;

/** The columns of the sorting key after `from` (in the top-level text), or null without ORDER BY. */
const sortingKeyOf = (s: Scanned, from: number): Set<string> | null => {
  const orderBy = /\bORDER\s+BY\b/i.exec(s.top.slice(from));
  if (!orderBy) return null;
  const start = from + orderBy.index + orderBy[0].length;
  const length = s.top.slice(start).search(CLAUSE_AFTER_ORDER_BY);
  return columnsOf(s.masked.slice(start, length < 0 ? undefined : start + length));
};

const createTable = (
  s: Scanned,
  m: RegExpExecArray,
  t: ClusterTarget,
  keys: Readonly<Record<string, string>>,
): string[] => {
  const ifNotExists = m[1] ?? '';
  const name = m[2]!;
  const open = m[0].length;
  const close = s.top.indexOf(')', open);
  const engine = ENGINE.exec(s.top.slice(close + 1));
  if (!engine) throw new Error(`CREATE TABLE ${name} must name its ENGINE right after its columns`);
  const engineName = engine[1]!;
  if (!REPLICABLE.has(engineName))
    throw new Error(`table ${name}: engine ${engineName} has no Replicated form`);
  let tail = close + 1 + engine[0].length;
  let args = '';
  if (engine[2] !== undefined) {
    const argsClose = s.top.indexOf(')', tail);
    args = s.text.slice(tail, argsClose).trim();
    tail = argsClose + 1;
  }
  const sharding = keys[name];
  if (sharding === undefined) throw new Error(`table ${name} has no sharding key in cluster-ddl.ts`);
  const sortingKey = sortingKeyOf(s, tail);
  const outside = [...columnsOf(sharding)].filter((c) => !sortingKey?.has(c));
  if (outside.length > 0)
    throw new Error(
      `table ${name}: its sharding key ${sharding} reads ${outside.join(', ')}, outside its ORDER BY, ` +
        'so rows FINAL must collapse could land on different shards',
    );
  const path = `'/clickhouse/tables/{shard}/{database}/${name}_local', '{replica}'`;
  const localEngine = t.keeper
    ? `Replicated${engineName}(${args === '' ? path : `${path}, ${args}`})`
    : s.text.slice(close + 1, tail).replace(/^\s*ENGINE\s*=\s*/i, '');
  return [
    `CREATE TABLE ${ifNotExists}${local(t, name)}${onCluster(t)} (${s.text.slice(open, close)}) ` +
      `ENGINE = ${localEngine}${s.text.slice(tail)}`,
    `CREATE TABLE ${ifNotExists}${t.database}.${name}${onCluster(t)} AS ${local(t, name)}\n` +
      `ENGINE = Distributed('${t.cluster}', '${t.database}', '${name}_local', ${sharding})`,
  ];
};

/**
 * The view goes on each node's `_local` source, writing into the `_local` target: a Distributed
 * insert runs the view of the shard it writes to, and a replica that fetches the part does not run
 * it again. Only the one table its SELECT reads is renamed, so it may read nothing else.
 */
const materializedView = (s: Scanned, m: RegExpExecArray, t: ClusterTarget): string[] => {
  const ifNotExists = m[1] ?? '';
  const name = m[2]!;
  const select = s.masked.slice(m[0].length);
  const from = new RegExp(`\\bFROM\\s+${IDENT}(?![\\w.(])`, 'i').exec(select);
  if (!from || select.match(/\bFROM\b/gi)?.length !== 1 || /\bJOIN\b/i.test(select))
    throw new Error(`materialized view ${name} must read one table by its plain name: one FROM, no JOIN`);
  const source = from[1]!;
  const at = m[0].length + from.index + from[0].length - source.length;
  const body = `${s.text.slice(m[0].length, at)}${local(t, source)}${s.text.slice(at + source.length)}`;
  return [
    `CREATE MATERIALIZED VIEW ${ifNotExists}${t.database}.${name}${onCluster(t)} ` +
      `TO ${local(t, m[3]!)} AS ${body}`,
  ];
};

type CommandKind = 'column' | 'storage' | 'data';

/**
 * The commands of an ALTER TABLE, split at top-level commas. An UPDATE's assignments are separated
 * by commas too, so a DELETE or UPDATE runs to the end of the statement.
 */
const alterCommands = (s: Scanned, from: number): { text: string; kind: CommandKind }[] => {
  const commands: { text: string; kind: CommandKind }[] = [];
  for (let start = from; start < s.text.length; ) {
    const masked = s.masked.slice(start).trimStart();
    const data = DATA_COMMAND.test(masked);
    const comma = data ? -1 : s.top.indexOf(',', start);
    const end = comma < 0 ? s.text.length : comma;
    const text = s.text.slice(start, end).trim();
    const kind = data
      ? 'data'
      : COLUMN_COMMAND.test(masked)
        ? 'column'
        : STORAGE_COMMAND.test(masked)
          ? 'storage'
          : null;
    if (
      kind === null ||
      (data && /,\s*(?:ADD|DROP|MODIFY|RENAME|COMMENT)\s+COLUMN\b/i.test(s.top.slice(start)))
    )
      throw new Error(`ALTER command ${JSON.stringify(text)} has no cluster form here`);
    commands.push({ text, kind });
    start = end + 1;
  }
  return commands;
};

/**
 * A statement that changes rows in place. A Distributed table refuses mutations, so it goes to the
 * `_local` tables of every node; an ALTER changing columns goes to the Distributed table as well,
 * after them, so a column exists below it before it is read through it. Null for any other kind
 * of statement; `dataOnly` refuses an ALTER that changes more than rows.
 */
const mutation = (s: Scanned, t: ClusterTarget, dataOnly: boolean): string[] | null => {
  let m = DELETE_FROM.exec(s.masked);
  if (m) return [`DELETE FROM ${local(t, m[1]!)}${onCluster(t)} ${s.text.slice(m[0].length)}`];
  m = OPTIMIZE.exec(s.masked);
  if (m) return [`OPTIMIZE TABLE ${local(t, m[1]!)}${onCluster(t)}${s.text.slice(m[0].length)}`];
  m = TRUNCATE.exec(s.masked);
  if (m) return [`TRUNCATE TABLE ${m[1] ?? ''}${local(t, m[2]!)}${onCluster(t)}`];
  m = ALTER_TABLE.exec(s.masked);
  if (!m) return null;
  const name = m[1]!;
  const commands = alterCommands(s, m[0].length);
  if (dataOnly && commands.some((c) => c.kind !== 'data'))
    throw new Error(`ALTER TABLE ${name} changes the schema, which belongs in migrations/clickhouse`);
  const columns = commands.filter((c) => c.kind === 'column').map((c) => c.text);
  const statements = [
    `ALTER TABLE ${local(t, name)}${onCluster(t)} ${commands.map((c) => c.text).join(', ')}`,
  ];
  if (columns.length > 0)
    statements.push(`ALTER TABLE ${t.database}.${name}${onCluster(t)} ${columns.join(', ')}`);
  return statements;
};

const scanned = (statement: string): Scanned => {
  const s = scan(statement);
  if (/\bON\s+CLUSTER\b/i.test(s.masked))
    throw new Error(
      'it says ON CLUSTER already: statements are written for one server and made cluster DDL here',
    );
  return s;
};

/**
 * The cluster form of one migration statement: CREATE TABLE (a MergeTree engine), CREATE
 * MATERIALIZED VIEW ... TO, ALTER TABLE, INSERT (through the Distributed table, unchanged),
 * DELETE FROM, OPTIMIZE and TRUNCATE. Anything else throws its reason.
 */
export const toClusterStatements = (
  statement: string,
  target: ClusterTarget,
  shardingKeys: Readonly<Record<string, string>> = SHARDING_KEYS,
): string[] => {
  const s = scanned(statement);
  let m = CREATE_TABLE.exec(s.top);
  if (m) return createTable(s, m, target, shardingKeys);
  if (/^CREATE\s+TABLE\b/i.test(s.masked))
    throw new Error('a CREATE TABLE needs a table name without its database, then its columns');
  m = MATERIALIZED_VIEW.exec(s.masked);
  if (m) return materializedView(s, m, target);
  if (/^CREATE\s+MATERIALIZED\b/i.test(s.masked))
    throw new Error('a materialized view needs the form CREATE MATERIALIZED VIEW name TO table AS SELECT');
  if (INSERT.test(s.masked)) return [s.text];
  const mutated = mutation(s, target, false);
  if (mutated) return mutated;
  throw new Error(
    `no cluster form is known for ${JSON.stringify(s.masked.split(/\s+/, 3).join(' '))}: CREATE TABLE ` +
      '(a MergeTree engine), CREATE MATERIALIZED VIEW ... TO, ALTER TABLE, INSERT INTO, DELETE FROM, ' +
      'OPTIMIZE TABLE and TRUNCATE are, each naming its tables without a database',
  );
};

const SCHEMA_CHANGE = /^(?:CREATE|DROP|RENAME|EXCHANGE|ATTACH|DETACH|ALTER|UNDROP)\b/i;

/**
 * A statement the service runs against a cluster: a mutation (lightweight DELETE, ALTER ... DELETE
 * or UPDATE, OPTIMIZE, TRUNCATE) goes to the `_local` tables of every node; any other schema change
 * outside migrations throws, since it would reach one node only; the rest is unchanged.
 */
export const toClusterCommand = (statement: string, target: ClusterTarget): string => {
  const s = scanned(statement);
  // Rows only: one statement, to the `_local` tables.
  const mutated = mutation(s, target, true);
  if (mutated) return mutated[0]!;
  if (SCHEMA_CHANGE.test(s.masked))
    throw new Error('a schema change outside migrations/clickhouse would reach one node of the cluster');
  // A change of rows in a form the patterns above do not read (a qualified name, a WITH before a
  // DELETE, TRUNCATE with SETTINGS) would reach the Distributed table or one node: refused.
  if (ROW_CHANGE.test(s.masked) || /^WITH\b[\s\S]*\b(?:DELETE|UPDATE)\b/i.test(s.top))
    throw new Error(`a change of rows cluster DDL does not read: ${statement.slice(0, 80)}`);
  return statement;
};

const ROW_CHANGE = /^\s*(?:DELETE|TRUNCATE|OPTIMIZE|UPDATE)\b/i;

/** The database on every node, created before any table of it. */
export const databaseOnCluster = (t: ClusterTarget): string =>
  `CREATE DATABASE IF NOT EXISTS ${t.database}${onCluster(t)}`;
