/**
 * Query API latency over 1M request rows on chdb (SPEC 4.5): p50 and p99 of the
 * requests list, usage and the cost_detail finance export, asked through the real HTTP routes
 * (fastify inject on registerQueryRoutes, as the query role mounts them) with the platform
 * administrator's token, over tenants created through the control plane on a throwaway Postgres
 * database. Also the QueryService MonthlyUsageSnapshot the gateway's spend-cap cache refreshes.
 *
 * The rows are generated inside the engine with INSERT ... SELECT FROM numbers() in chunks (several
 * parts, as ingest's flushes leave them), with cost and usage lines that add up (every 20th request
 * misses its output line, so the unitemized band is exercised) and 1% of the requests redelivered
 * (a second copy with a later ingested_at, which FINAL must collapse). Half the traffic belongs to
 * one large organization, which the timed queries read.
 *
 *   npm run bench:query      BENCH_QUERY_ROWS (default 1000000), BENCH_QUERY_RUNS (default 40)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { ChdbAnalyticsStore, chdbPath } from '../../src/analytics/chdb/store.js';
import { migrateClickHouse } from '../../src/analytics/migrate.js';
import { registerQueryRoutes } from '../../src/edges/http/query/routes.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { renderApiError, ServiceError } from '../../src/lib/errors.js';
import { developerTokenVerifier } from '../../src/projections/auth/reads.js';
import { LiveSessions } from '../../src/query/live.js';
import { monthlyUsageSnapshot } from '../../src/query/snapshot.js';
import { makeControlPlane } from '../../src/roles/control-plane.js';
import { benchDatabase } from '../lib/database.js';
import { printTable, timed } from '../lib/report.js';

const ROWS = Number(process.env.BENCH_QUERY_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 40);
const CHUNK = 100_000;
const ORGS = 20;
const PROJECTS_PER_ORG = 3;
const KEYS_PER_PROJECT = 3;
const DAY_MS = 86_400_000;
const SPAN_DAYS = 90;
const ADMIN = 'bench-query-admin-token-0123456789';

const ms = (s: number) => `${(s * 1000).toFixed(1)} ms`;
/** Nearest-rank percentile of sorted seconds. */
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

// One request's figures, derived from `number` alone so the three tables agree row for row.
const PROMPT = '(50 + cityHash64(number, 1) % 4000)';
const COMPLETION = '(10 + cityHash64(number, 2) % 1500)';
// Exact amounts in atto-USD (2.5e-6 and 1e-5 USD a token), written as decimals below one dollar.
const atto = (tokens: string, perToken: string) => `(${tokens} * ${perToken})`;
const usd = (attoExpr: string) => `toDecimal128(concat('0.', leftPad(toString(${attoExpr}), 18, '0')), 18)`;
const INPUT_USD = usd(atto(PROMPT, '2500000000000'));
const OUTPUT_USD = usd(atto(COMPLETION, '10000000000000'));
const HAS_OUTPUT_LINE = '(number % 20 != 0)';
const KEY = `(if(number % 2 = 0, 1 + cityHash64(number, 3) % {big_keys:UInt64}, 1 + cityHash64(number, 3) % length({key_ids:Array(String)})))`;
const TENANT = `{key_ids:Array(String)}[${KEY}] AS api_key_id, {key_projects:Array(String)}[${KEY}] AS project_id,
  {key_orgs:Array(String)}[${KEY}] AS org_id, {workspace_id:String} AS workspace_id`;
const STARTED = `fromUnixTimestamp64Milli(toInt64({start_ms:Int64} + intDiv(number * {span_ms:Int64}, {rows:Int64})), 'UTC')`;
const MODEL = `['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4', 'nova-pro'][1 + cityHash64(number, 4) % 4]`;
const PROVIDER = `['openai', 'openai', 'anthropic', 'bedrock'][1 + cityHash64(number, 4) % 4]`;

const requestsInsert = (redelivered: boolean) => `
  INSERT INTO requests (request_id, org_id, project_id, workspace_id, api_key_id, route, model_requested,
    model_served, provider, endpoint_id, provider_model_id, stream, status, http_status, error_type, error_code,
    started_at, finished_at, latency_ms, ttfb_ms, prompt_tokens, completion_tokens, total_tokens,
    cache_read_tokens, cache_write_tokens, audio_input_marker, audio_output_marker, total_cost_usd,
    billing_status, rate_card_id, funding, session_id, full_tracing, trace_source, tool_summary,
    attempts, attempt_count, usage_line_count, cost_line_count, schema_version, batch_id, ingested_at)
  SELECT concat('req_bench_', toString(number)), org_id, project_id, workspace_id, api_key_id,
    'chat.completions', ${MODEL}, ${MODEL}, ${PROVIDER}, concat('ep_', ${PROVIDER}), ${MODEL},
    number % 3 = 0, if(number % 50 = 0, 'error', 'success'), if(number % 50 = 0, 429, 200),
    if(number % 50 = 0, 'rate_limit_error', NULL), if(number % 50 = 0, 'http_429', NULL),
    ${STARTED} AS s, s + toIntervalMillisecond(300 + cityHash64(number, 5) % 4000),
    300 + cityHash64(number, 5) % 4000, 120, ${PROMPT}, ${COMPLETION}, ${PROMPT} + ${COMPLETION}, 0, 0,
    'not_reported', 'not_reported', ${INPUT_USD} + ${OUTPUT_USD},
    'priced', 'rc_bench', 'wallet', concat('ses_', toString(number % 20000)), false, 'none', '{}', '[]', 1,
    2, if(${HAS_OUTPUT_LINE}, 2, 1), 1, 'bench', s + toIntervalSecond(${redelivered ? 86_400 : 5})
  FROM (SELECT number, ${TENANT} FROM numbers({first:UInt64}, {count:UInt64}))
  ${redelivered ? 'WHERE number % 100 = 0' : ''}`;

const LINES = (table: 'request_cost_lines' | 'request_usage_lines') => {
  const cost = table === 'request_cost_lines';
  return `
  INSERT INTO ${table} (request_id, line_index, org_id, project_id, workspace_id, api_key_id, started_at,
    model_served, provider, endpoint_id, meter, modality, tier, quantity,
    ${cost ? 'funding, unit_price, amount, estimated, provenance_source, rate_card_id, rate_row_id, rate_card_revision,' : ''}
    batch_id, ingested_at)
  SELECT concat('req_bench_', toString(number)), line_index, org_id, project_id, workspace_id, api_key_id,
    ${STARTED} AS s, ${MODEL}, ${PROVIDER}, concat('ep_', ${PROVIDER}),
    ['input_token', 'output_token'][line_index + 1], 'text', 'standard',
    if(line_index = 0, ${PROMPT}, ${COMPLETION}),
    ${
      cost
        ? `'wallet', if(line_index = 0, toDecimal128('0.0000025', 18), toDecimal128('0.00001', 18)),
    if(line_index = 0, ${INPUT_USD}, ${OUTPUT_USD}), false, 'rate_card', 'rc_bench', 'row_1', 1,`
        : ''
    }
    'bench', s + toIntervalSecond(5)
  FROM (SELECT number, ${TENANT} FROM numbers({first:UInt64}, {count:UInt64}))
  ARRAY JOIN if(${HAS_OUTPUT_LINE}, [0, 1], [0]) AS line_index`;
};

const db = await benchDatabase('query');
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-query-'));
const store = await ChdbAnalyticsStore.open({ path: chdbPath(dir), database: 'bench', createDatabase: true });
try {
  await migrateClickHouse(store);
  const cp = makeControlPlane(new PostgresEventStore(db.pool, db.url), db.pool, Buffer.alloc(32, 7));
  const actor = { id: 'bench' };
  process.stdout.write('tenants through the control plane... ');
  const ws = (await cp.createWorkspace(actor, 'Bench')).workspace_id;
  const keys: { id: string; project: string; org: string }[] = [];
  const orgIds: string[] = [];
  for (let o = 0; o < ORGS; o++) {
    const org = (await cp.createOrganization(actor, ws, `Org ${o}`)).org_id;
    orgIds.push(org);
    for (let p = 0; p < PROJECTS_PER_ORG; p++) {
      const project = (await cp.createProject(actor, org, `Project ${p}`)).project_id;
      for (let k = 0; k < KEYS_PER_PROJECT; k++)
        keys.push({ id: (await cp.createApiKey(actor, project, `key ${k}`)).api_key_id, project, org });
    }
  }
  console.log(`${ORGS} orgs, ${keys.length} keys`);

  const end = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const start = end - SPAN_DAYS * DAY_MS;
  const tenancy = {
    key_ids: keys.map((k) => k.id),
    key_projects: keys.map((k) => k.project),
    key_orgs: keys.map((k) => k.org),
    big_keys: PROJECTS_PER_ORG * KEYS_PER_PROJECT,
    workspace_id: ws,
    start_ms: start,
    span_ms: SPAN_DAYS * DAY_MS,
    rows: ROWS,
  };
  process.stdout.write(`generating ${ROWS.toLocaleString('en-US')} requests over ${SPAN_DAYS} days... `);
  const generated = await timed(async () => {
    for (let first = 0; first < ROWS; first += CHUNK) {
      const p = { ...tenancy, first, count: Math.min(CHUNK, ROWS - first) };
      await store.command(requestsInsert(false), p);
      await store.command(LINES('request_cost_lines'), p);
      await store.command(LINES('request_usage_lines'), p);
    }
    await store.command(requestsInsert(true), { ...tenancy, first: 0, count: ROWS });
  });
  const [counted] = await store.query<{ n: string; distinct: string }>(
    'SELECT count() AS n, uniqExact(request_id) AS distinct FROM requests',
  );
  if (Number(counted?.distinct) !== ROWS)
    throw new Error(`generated ${counted?.distinct} requests, not ${ROWS}`);
  console.log(`${counted?.n} rows (${ROWS} requests + redeliveries) in ${ms(generated.seconds)}`);
  // Time the steady state: the engine merges the fresh parts in the background meanwhile.
  const settled = Date.now() + 120_000;
  while (Date.now() < settled) {
    const [m] = await store.query<{ n: string }>('SELECT count() AS n FROM system.merges');
    if (Number(m?.n) === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }

  const app = Fastify();
  app.setErrorHandler((err, _req, reply) =>
    err instanceof ServiceError
      ? reply.code(err.status).send(renderApiError(err))
      : reply.code(500).send({ error: 'internal_error', message: String(err) }),
  );
  registerQueryRoutes(app, {
    reads: cp.reads,
    verifyDeveloperToken: developerTokenVerifier(db.pool),
    adminToken: ADMIN,
    analytics: store,
    objects: null,
    pool: db.pool,
    maxExportRows: 100_000,
    maxExportDays: 366,
    live: new LiveSessions(store, { pollMs: 1_000, heartbeatMs: 15_000, maxPerSession: 8, maxPerOrg: 64 }),
  });
  await app.ready();

  const big = orgIds[0]!;
  const day = (d: number) => new Date(end - d * DAY_MS).toISOString().slice(0, 10);
  const [bigRows] = await store.query<{ n: string }>(
    'SELECT count() AS n FROM requests FINAL WHERE org_id = {org:String}',
    { org: big },
  );
  const cases: { name: string; url?: string; run?: () => Promise<unknown> }[] = [
    { name: 'requests list, page 1 of 50, no window', url: `/api/requests?org_id=${big}&limit=50` },
    {
      name: 'requests list, page 1 of 50, last 7 days',
      url: `/api/requests?org_id=${big}&limit=50&from=${day(7)}`,
    },
    { name: 'usage, last 30 days by day', url: `/api/usage?org_id=${big}&from=${day(30)}&to=${day(0)}` },
    {
      name: 'cost_detail export (CSV), last 30 days',
      url: `/api/exports/panel?org_id=${big}&from=${day(30)}&to=${day(0)}&format=csv`,
    },
    {
      name: 'MonthlyUsageSnapshot, all orgs (spend-cap refresh)',
      run: () => monthlyUsageSnapshot(store, '', new Date(), orgIds),
    },
  ];
  const results: { name: string; p50: number; p99: number; bytes: number }[] = [];
  for (const c of cases) {
    let bytes = 0;
    const once = async () => {
      if (c.run) return c.run();
      const res = await app.inject({
        method: 'GET',
        url: c.url!,
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      if (res.statusCode !== 200)
        throw new Error(`${c.url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
      bytes = res.rawPayload.byteLength;
      return res;
    };
    for (let i = 0; i < 3; i++) await once(); // warm the engine's caches as a dashboard would
    const seconds: number[] = [];
    for (let i = 0; i < RUNS; i++) seconds.push((await timed(once)).seconds);
    seconds.sort((a, b) => a - b);
    results.push({ name: c.name, p50: percentile(seconds, 50), p99: percentile(seconds, 99), bytes });
    console.log(`  ${c.name}: p50 ${ms(percentile(seconds, 50))}, p99 ${ms(percentile(seconds, 99))}`);
  }
  await app.close();

  const { version } = await store.health();
  printTable(
    `bench/query (chdb, ClickHouse ${version ?? '?'}; ${ROWS.toLocaleString('en-US')} requests, the org read holds ${Number(bigRows?.n).toLocaleString('en-US')}; ${RUNS} runs each)`,
    results.flatMap((r) => [
      { metric: `${r.name}: p50`, measured: ms(r.p50) },
      {
        metric: `${r.name}: p99`,
        measured: `${ms(r.p99)}${r.bytes ? ` (${(r.bytes / 1024).toFixed(0)} KiB answer)` : ''}`,
      },
    ]),
  );
} finally {
  await store.close();
  await rm(dir, { recursive: true, force: true });
  await db.drop();
}
