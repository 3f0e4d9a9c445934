import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChdbAnalyticsStore } from '../../src/analytics/chdb/store.js';
import { migrateClickHouse } from '../../src/analytics/migrate.js';
import { registerQueryRoutes } from '../../src/edges/http/query/routes.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { blake3Hex } from '../../src/lib/blake3.js';
import { hashSecret } from '../../src/lib/crypto.js';
import { renderApiError, ServiceError } from '../../src/lib/errors.js';
import { formatUsd } from '../../src/lib/money.js';
import { FsObjectStore } from '../../src/objects/fs-store.js';
import type { ObjectStore } from '../../src/objects/port.js';
import { S3ObjectStore } from '../../src/objects/s3-store.js';
import { developerTokenVerifier } from '../../src/projections/auth/reads.js';
import { traceRows, writeTraceRows } from '../../src/projections/traces/write.js';
import { LiveSessions } from '../../src/query/live.js';
import { artifactUrlKey, signedArtifactUrl } from '../../src/query/trace-artifacts.js';
import { TraceLiveSessions } from '../../src/query/trace-live.js';
import { makeControlPlane } from '../../src/roles/control-plane.js';
import type {
  TraceArtifactRecord,
  TraceEventRecord,
  TraceRecord,
  TraceSpanRecord,
} from '../../src/traces/model.js';
import {
  type GeneratedRequest,
  generateRequest,
  insertGenerated,
  prng,
  type Tenant,
} from '../fixtures/query/query.fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import {
  startS3Server,
  TEST_S3_CREDENTIALS,
  TEST_S3_REGION,
  type TestS3Server,
} from '../helpers/s3-server.js';

// SPEC 2.1-2.3, 2.12, 4.5 trace routes: an agent-shaped trace (AGENT > CHAIN > LLM via the
// gateway, TOOL, RETRIEVER) written twice with a pending copy around its complete span, read back
// through every route; tenant isolation; signed artifact URLs; the live trace stream.

const ADMIN = 'admin-token-for-trace-tests';
const MASTER = randomBytes(32);
const URL_KEY = artifactUrlKey(MASTER);
let db: TestDatabase;
let cp: ReturnType<typeof makeControlPlane>;
let chdb: ChdbAnalyticsStore;
let objects: FsObjectStore;
let dir: string;
let app: FastifyInstance;
const t: Record<string, Tenant> = {};
const tok: Record<string, string> = {};
let llmRequest: GeneratedRequest;

const T1 = '4bf92f3577b34da6a3ce929d0e0e4736';
const T2 = '00f067aa0ba902b700f067aa0ba902b7';
const TB = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
/** The live stream tests' events: a trace of their own, so the tree of T1 stays as written. */
const TL = 'cccccccccccccccccccccccccccccccc';
const S = {
  agent: 'a000000000000001',
  chain: 'a000000000000002',
  llm: 'a000000000000003',
  tool: 'a000000000000004',
  retriever: 'a000000000000005',
};
const TOOL_ARGS = Buffer.from(JSON.stringify({ query: 'weather in Lisbon' }));
const TOOL_KEY = `traces/${T1}/${S.tool}/art_tool_args`;

const at = (ms: number) =>
  `${new Date(Date.UTC(2025, 5, 1, 10, 0, 0) + ms).toISOString().slice(0, 23)}000000Z`;

const span = (
  p: Partial<TraceSpanRecord> & Pick<TraceSpanRecord, 'span_id' | 'span_name'>,
): TraceSpanRecord => ({
  record: 'span',
  trace_id: T1,
  parent_span_id: '',
  org_id: t.a!.org_id,
  project_id: t.a!.project_id,
  session_id: 'ses_agent',
  request_id: '',
  span_kind: 'internal',
  openinference_span_kind: 'CHAIN',
  service_name: 'agent-sdk',
  source: 'sdk',
  started_at: at(0),
  ended_at: at(1000),
  duration_ms: 1000,
  status: 'ok',
  status_message: '',
  attributes_json: JSON.stringify({ 'session.id': 'ses_agent' }),
  payload_state: 'summary_only',
  model_name: '',
  provider: '',
  llm_system: '',
  prompt_tokens: null,
  completion_tokens: null,
  cost_total: '',
  tool_name: '',
  agent_name: '',
  user_id: '',
  classification: '',
  trace_source: '',
  ...p,
});

const event = (
  spanId: string,
  name: string,
  ms: number,
  p: Partial<TraceEventRecord> = {},
): TraceEventRecord => ({
  record: 'event',
  event_id: `ev_${spanId}_${name}`,
  trace_id: T1,
  span_id: spanId,
  org_id: t.a!.org_id,
  project_id: t.a!.project_id,
  session_id: 'ses_agent',
  event_name: name,
  occurred_at: at(ms),
  level: '',
  message: '',
  attributes_json: '{}',
  artifact_ref: '',
  ...p,
});

const artifact = (
  p: Partial<TraceArtifactRecord> & Pick<TraceArtifactRecord, 'artifact_id' | 'span_id' | 'kind'>,
) =>
  ({
    record: 'artifact',
    trace_id: T1,
    org_id: t.a!.org_id,
    project_id: t.a!.project_id,
    object_key: '',
    mime_type: 'application/json',
    compression: 'none',
    byte_count: 0,
    blake3_hash: '',
    payload_state: 'summary_only',
    redaction_metadata_json: '{}',
    ...p,
  }) satisfies TraceArtifactRecord;

const agentTrace = (): TraceRecord[] => [
  span({
    span_id: S.agent,
    span_name: 'agent.run',
    openinference_span_kind: 'AGENT',
    agent_name: 'planner',
    ended_at: at(3000),
    duration_ms: 3000,
  }),
  span({
    span_id: S.chain,
    parent_span_id: S.agent,
    span_name: 'chain.plan',
    started_at: at(10),
    ended_at: at(2900),
    duration_ms: 2890,
  }),
  span({
    span_id: S.llm,
    parent_span_id: S.chain,
    span_name: 'svc.gateway /v1/chat/completions',
    span_kind: 'server',
    openinference_span_kind: 'LLM',
    service_name: 'svc-gateway',
    source: 'gateway',
    request_id: 'req_tr_1',
    started_at: at(20),
    ended_at: at(920),
    duration_ms: 900,
    payload_state: 'full',
    model_name: 'gpt-4o-mini',
    provider: 'openai',
    prompt_tokens: 120,
    completion_tokens: 45,
    cost_total: '0.00123',
    attributes_json: JSON.stringify({ 'llm.model_name': 'gpt-4o-mini', 'svc.request_id': 'req_tr_1' }),
  }),
  span({
    span_id: S.tool,
    parent_span_id: S.chain,
    span_name: 'tool.search',
    openinference_span_kind: 'TOOL',
    tool_name: 'search',
    started_at: at(1000),
    ended_at: at(1200),
    duration_ms: 200,
    payload_state: 'full',
  }),
  span({
    span_id: S.retriever,
    parent_span_id: S.chain,
    span_name: 'retriever.docs',
    openinference_span_kind: 'RETRIEVER',
    started_at: at(1300),
    ended_at: at(1330),
    duration_ms: 30,
    status: 'error',
    status_message: 'index unavailable',
  }),
  event(S.llm, 'trace.span.ended', 920),
  event(S.llm, 'trace.span.started', 20),
  event(S.tool, 'trace.span.started', 1000, { artifact_ref: 'art_tool_args' }),
  event(S.agent, 'trace.span.started', 0),
  artifact({
    artifact_id: 'art_llm_in',
    span_id: S.llm,
    kind: 'input',
    object_key: 'request:req_tr_1:req',
    payload_state: 'full',
  }),
  artifact({
    artifact_id: 'art_llm_out',
    span_id: S.llm,
    kind: 'output',
    object_key: 'request:req_tr_1:res',
    payload_state: 'full',
  }),
  artifact({
    artifact_id: 'art_tool_args',
    span_id: S.tool,
    kind: 'tool_arguments',
    object_key: TOOL_KEY,
    byte_count: TOOL_ARGS.byteLength,
    blake3_hash: blake3Hex(TOOL_ARGS),
    payload_state: 'full',
  }),
  artifact({
    artifact_id: 'art_docs',
    span_id: S.retriever,
    kind: 'retrieved_document',
    redaction_metadata_json: JSON.stringify({ attribute: 'retrieval.documents', reason: 'capture_disabled' }),
  }),
];

const write = (records: TraceRecord[], ingestedAt: Date) =>
  writeTraceRows(chdb, traceRows(records, ingestedAt));

const traceDeps = (timing = { pollMs: 100, heartbeatMs: 1_000 }, now?: () => Date) => ({
  reads: cp.reads,
  verifyDeveloperToken: developerTokenVerifier(db.pool),
  adminToken: ADMIN,
  analytics: chdb,
  objects: objects as ObjectStore,
  pool: db.pool,
  maxExportRows: 5_000,
  maxExportDays: 366,
  live: new LiveSessions(chdb, { ...timing, maxPerSession: 8, maxPerOrg: 64 }),
  ...(now ? { now } : {}),
  traces: {
    artifactUrlKey: URL_KEY,
    live: new TraceLiveSessions(chdb, { ...timing, maxPerSession: 8, maxPerOrg: 64 }),
  },
});

const serverOf = async (options: ReturnType<typeof traceDeps>) => {
  // A cancelled SSE body leaves fetch's socket open a while; close does not wait for it.
  const server = Fastify({ forceCloseConnections: true });
  server.setErrorHandler((err, _req, reply) => {
    if (err instanceof ServiceError) return reply.code(err.status).send(renderApiError(err));
    return reply.code(500).send({ error: 'internal_error', message: String(err) });
  });
  await registerQueryRoutes(server, options);
  return server;
};

const get = (url: string, token: string | null = tok.a!, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'GET',
    url,
    headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
// biome-ignore lint/suspicious/noExplicitAny: answers are inspected field by field
const json = (res: { body: string }) => JSON.parse(res.body) as any;

beforeAll(async () => {
  db = await createTestDatabase();
  cp = makeControlPlane(new PostgresEventStore(db.pool, db.url), db.pool, MASTER);
  const actor = { id: 'test' };
  const wsA = (await cp.createWorkspace(actor, 'Trace A')).workspace_id;
  const wsB = (await cp.createWorkspace(actor, 'Trace B')).workspace_id;
  const tenant = async (ws: string, org: string, project: string) => {
    const o = (await cp.createOrganization(actor, ws, org, { ifMissing: true })).org_id;
    const p = (await cp.createProject(actor, o, project, { ifMissing: true })).project_id;
    const k = await cp.createApiKey(actor, p, `${project} key`);
    return { org_id: o, project_id: p, workspace_id: ws, api_key_id: k.api_key_id };
  };
  t.a = await tenant(wsA, 'Org TA', 'Proj TA');
  t.a2 = await tenant(wsA, 'Org TA', 'Proj TA2');
  t.b = await tenant(wsB, 'Org TB', 'Proj TB');
  await cp.addUser(actor, 'dev@example.com', { workspaceId: wsA, role: 'member' });
  await cp.addUser(actor, 'devb@example.com', { workspaceId: wsB, role: 'member' });
  const devToken = async (name: string, x: Tenant, projectId: string | null) => {
    const email = x.workspace_id === wsA ? 'dev@example.com' : 'devb@example.com';
    const userId = (await cp.reads.userByEmail(email))!.user_id;
    const secret = `svc_dev_${randomBytes(24).toString('base64url')}`;
    await db.pool.query(
      `INSERT INTO rm_developer_tokens (token_id, user_id, org_id, project_id, workspace_id, name, prefix, token_hash, created_at)
       VALUES ($1, $2, $3, $4, $5, $1, $6, $7, now())`,
      [name, userId, x.org_id, projectId, x.workspace_id, secret.slice(0, 12), hashSecret(secret)],
    );
    return secret;
  };
  tok.a = await devToken('dev_trace_a', t.a, null);
  tok.a2 = await devToken('dev_trace_a2', t.a2, t.a2.project_id);
  tok.b = await devToken('dev_trace_b', t.b, null);

  dir = await mkdtemp(join(tmpdir(), 'svc-query-traces-'));
  chdb = await ChdbAnalyticsStore.open({ path: join(dir, 'ch'), database: 'traces_t', createDatabase: true });
  await migrateClickHouse(chdb);
  objects = new FsObjectStore(join(dir, 'objects'));
  await objects.put(t.a.org_id, TOOL_KEY, TOOL_ARGS);

  // The LLM span's request row: full tracing, a stored response body, one tool call.
  const rand = prng(7);
  const body = Buffer.from(JSON.stringify({ choices: [{ message: { tool_calls: [{ name: 'search' }] } }] }));
  const pack = 'packs/2025/06/01/req_tr_1.pack';
  await objects.put(t.a.org_id, pack, body);
  llmRequest = generateRequest({
    tenant: t.a,
    requestId: 'req_tr_1',
    startedAt: new Date(Date.UTC(2025, 5, 1, 10, 0, 0, 20)),
    rand,
    sessionId: 'ses_agent',
    body: {
      res_body_pack: pack,
      res_body_offset: 0,
      res_body_length: body.byteLength,
      res_body_byte_count: body.byteLength,
      res_body_blake3: blake3Hex(body),
    },
  });
  Object.assign(llmRequest.request, {
    full_tracing: true,
    tool_summary: JSON.stringify({ declared: ['search', 'lookup'], calls: [{ name: 'search', count: 1 }] }),
    tool_call_count: 1,
  });
  const plain = generateRequest({
    tenant: t.a,
    requestId: 'req_tr_2',
    startedAt: new Date(Date.UTC(2025, 5, 1, 10, 5)),
    rand,
    sessionId: 'ses_agent',
  });
  const other = generateRequest({
    tenant: t.b,
    requestId: 'req_b_1',
    startedAt: new Date(Date.UTC(2025, 5, 1, 10, 0)),
    rand,
    sessionId: 'ses_b',
  });
  await insertGenerated((table, rows) => chdb.insert(table, rows), [llmRequest, plain, other, llmRequest]);

  // The trace twice (a redelivery), the TOOL span pending before and after its complete copy.
  const records = agentTrace();
  const tool = records.find((r) => r.record === 'span' && r.span_id === S.tool) as TraceSpanRecord;
  const pending = { ...tool, status: 'pending' as const, ended_at: tool.started_at, duration_ms: 0 };
  await write([pending], new Date(Date.UTC(2025, 5, 1, 10, 0, 1)));
  await write(records, new Date(Date.UTC(2025, 5, 1, 10, 0, 4)));
  await write(records, new Date(Date.UTC(2025, 5, 1, 10, 0, 9)));
  await write([pending], new Date(Date.UTC(2025, 5, 1, 10, 0, 12)));
  // A second trace of the session, summaries only; and org B's own trace.
  await write(
    [
      span({
        trace_id: T2,
        span_id: 'b000000000000001',
        span_name: 'agent.followup',
        started_at: at(60_000),
      }),
    ],
    new Date(Date.UTC(2025, 5, 1, 10, 2)),
  );
  await write(
    [
      span({
        trace_id: TB,
        span_id: 'c000000000000001',
        span_name: 'b.run',
        org_id: t.b.org_id,
        project_id: t.b.project_id,
        session_id: 'ses_b',
      }),
      artifact({
        trace_id: TB,
        artifact_id: 'art_b',
        span_id: 'c000000000000001',
        kind: 'output',
        org_id: t.b.org_id,
        project_id: t.b.project_id,
        object_key: `traces/${TB}/c000000000000001/art_b`,
        byte_count: 3,
        blake3_hash: blake3Hex(Buffer.from('bbb')),
        payload_state: 'full',
      }),
    ],
    new Date(Date.UTC(2025, 5, 1, 10, 3)),
  );
  await objects.put(t.b.org_id, `traces/${TB}/c000000000000001/art_b`, 'bbb');

  app = await serverOf(traceDeps());
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await chdb?.close();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const orgA = () => t.a!.org_id;

describe('trace tree', () => {
  it('answers sorted spans, events, artifact refs and the request row, each record once and complete', async () => {
    const res = await get(`/api/traces/${T1}/tree?org_id=${orgA()}`);
    expect(res.statusCode, res.body).toBe(200);
    const tree = json(res);
    expect(tree).toMatchObject({
      trace_id: T1,
      org_id: orgA(),
      span_count: 5,
      started_at: at(0),
      ended_at: at(3000),
      root_span_ids: [S.agent],
      full_trace_available: true,
      truncated: false,
    });
    expect(tree.spans.map((x: { span_id: string }) => x.span_id)).toEqual([
      S.agent,
      S.chain,
      S.llm,
      S.tool,
      S.retriever,
    ]);
    const bySpan = Object.fromEntries(tree.spans.map((x: { span_id: string }) => [x.span_id, x]));
    expect(bySpan[S.tool]).toMatchObject({ status: 'ok', duration_ms: 200, ended_at: at(1200) });
    expect(bySpan[S.retriever]).toMatchObject({ status: 'error', status_message: 'index unavailable' });
    expect(bySpan[S.agent].attributes).toEqual({ 'session.id': 'ses_agent' });
    expect(bySpan[S.agent]).not.toHaveProperty('attributes_json');
    const llm = bySpan[S.llm];
    expect(llm.events.map((e: { event_name: string }) => e.event_name)).toEqual([
      'trace.span.started',
      'trace.span.ended',
    ]);
    expect(llm.artifacts.map((x: { artifact_id: string }) => x.artifact_id)).toEqual([
      'art_llm_in',
      'art_llm_out',
    ]);
    expect(llm.request).toMatchObject({
      request_id: 'req_tr_1',
      model_served: llmRequest.request.model_served,
      provider: llmRequest.request.provider,
      status: 'success',
      http_status: 200,
      prompt_tokens: llmRequest.request.prompt_tokens,
      completion_tokens: llmRequest.request.completion_tokens,
      total_cost_usd: formatUsd(llmRequest.total),
      latency_ms: llmRequest.request.latency_ms,
      ttfb_ms: 50,
      started_at: '2025-06-01T10:00:00.020Z',
      full_tracing: true,
      session_id: 'ses_agent',
    });
    expect(bySpan[S.agent].request).toBeNull();
    expect(bySpan[S.tool].events).toHaveLength(1);
    expect(bySpan[S.tool].artifacts[0]).toMatchObject({
      kind: 'tool_arguments',
      byte_count: TOOL_ARGS.byteLength,
    });
    expect(bySpan[S.retriever].artifacts[0].redaction_metadata).toEqual({
      attribute: 'retrieval.documents',
      reason: 'capture_disabled',
    });
    const events = tree.spans.flatMap((x: { events: unknown[] }) => x.events);
    expect(events).toHaveLength(4);
  });

  it('answers the same tree for the request, the span detail, and 404 for what is not there', async () => {
    const viaRequest = await get(`/api/requests/req_tr_1/trace?org_id=${orgA()}`);
    expect(viaRequest.statusCode, viaRequest.body).toBe(200);
    expect(json(viaRequest)).toEqual(json(await get(`/api/traces/${T1}/tree?org_id=${orgA()}`)));
    const spanRes = await get(`/api/traces/${T1}/spans/${S.llm}?org_id=${orgA()}`);
    expect(spanRes.statusCode).toBe(200);
    const detail = json(spanRes);
    expect(detail).toMatchObject({
      span_id: S.llm,
      request_id: 'req_tr_1',
      request: { request_id: 'req_tr_1' },
    });
    expect(detail.events).toHaveLength(2);
    expect(detail.artifacts).toHaveLength(2);
    for (const url of [
      `/api/traces/ffffffffffffffffffffffffffffffff/tree?org_id=${orgA()}`,
      `/api/requests/req_tr_2/trace?org_id=${orgA()}`,
      `/api/traces/${T1}/spans/ffffffffffffffff?org_id=${orgA()}`,
      `/api/traces/${T1}/artifacts/art_unknown?org_id=${orgA()}`,
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(json(res).error, url).toBe('not_found');
    }
    expect((await get(`/api/traces/${T1}/tree`)).statusCode).toBe(400);
    expect((await get(`/api/traces/${T1}/tree?org_id=${orgA()}`, null)).statusCode).toBe(401);
  });
});

describe('summaries', () => {
  it('lists the session traces with request ids and full-trace availability, paged', async () => {
    const res = await get(`/api/sessions/ses_agent/traces?org_id=${orgA()}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res)).toEqual({
      data: [
        {
          trace_id: T1,
          span_count: 5,
          started_at: at(0),
          ended_at: at(3000),
          root_span_name: 'agent.run',
          request_ids: ['req_tr_1'],
          full_trace_available: true,
        },
        {
          trace_id: T2,
          span_count: 1,
          started_at: at(60_000),
          ended_at: at(1000),
          root_span_name: 'agent.followup',
          request_ids: [],
          full_trace_available: false,
        },
      ],
      total: 2,
      limit: 50,
      offset: 0,
      has_more: false,
    });
    const first = json(await get(`/api/sessions/ses_agent/traces?org_id=${orgA()}&limit=1`));
    expect(first).toMatchObject({ total: 2, has_more: true, data: [{ trace_id: T1 }] });
    const second = json(await get(`/api/sessions/ses_agent/traces?org_id=${orgA()}&limit=1&offset=1`));
    expect(second).toMatchObject({ total: 2, has_more: false, data: [{ trace_id: T2 }] });
    expect(json(await get(`/api/sessions/ses_none/traces?org_id=${orgA()}`))).toMatchObject({
      data: [],
      total: 0,
    });
  });

  it('answers request trace metadata with body URLs only under full tracing', async () => {
    const res = await get(`/api/traces/requests/req_tr_1?org_id=${orgA()}`);
    expect(res.statusCode, res.body).toBe(200);
    const info = json(res);
    expect(info).toMatchObject({
      request_id: 'req_tr_1',
      trace_ids: [T1],
      spans: [{ trace_id: T1, span_id: S.llm, openinference_span_kind: 'LLM', source: 'gateway' }],
      full_tracing: true,
      body_urls: { request: null, response: `/api/body/by-request/req_tr_1?org_id=${orgA()}&side=response` },
      tool_summary: { declared: ['search', 'lookup'], calls: [{ name: 'search', count: 1 }] },
      tool_call_count: 1,
    });
    const body = await get(info.body_urls.response);
    expect(body.statusCode).toBe(200);
    expect(body.body).toContain('tool_calls');
    const plain = json(await get(`/api/traces/requests/req_tr_2?org_id=${orgA()}`));
    expect(plain).toMatchObject({ trace_ids: [], full_tracing: false, body_urls: null });
    expect((await get(`/api/traces/requests/req_unknown?org_id=${orgA()}`)).statusCode).toBe(404);
  });

  it('orders the session requests with their trace and span ids', async () => {
    const res = await get(`/api/traces/sessions/ses_agent?org_id=${orgA()}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res)).toEqual({
      data: [
        {
          request_id: 'req_tr_1',
          started_at: '2025-06-01T10:00:00.020Z',
          model: llmRequest.request.model_served,
          status: 'success',
          trace_id: T1,
          span_id: S.llm,
          full_tracing: true,
        },
        expect.objectContaining({
          request_id: 'req_tr_2',
          trace_id: null,
          span_id: null,
          full_tracing: false,
        }),
      ],
      total: 2,
      limit: 100,
      offset: 0,
      has_more: false,
    });
  });

  it('answers the tool summary, and the TOOL spans and response body under full tracing', async () => {
    const res = await get(`/api/traces/tools/req_tr_1?org_id=${orgA()}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res)).toEqual({
      request_id: 'req_tr_1',
      tool_summary: { declared: ['search', 'lookup'], calls: [{ name: 'search', count: 1 }] },
      tool_call_count: 1,
      full_tracing: true,
      full_tool_trace: {
        trace_id: T1,
        tool_spans: [
          {
            span_id: S.tool,
            parent_span_id: S.chain,
            span_name: 'tool.search',
            tool_name: 'search',
            status: 'ok',
            started_at: at(1000),
            duration_ms: 200,
            payload_state: 'full',
            artifacts: [
              {
                artifact_id: 'art_tool_args',
                kind: 'tool_arguments',
                payload_state: 'full',
                metadata_url: `/api/traces/${T1}/artifacts/art_tool_args?org_id=${orgA()}`,
              },
            ],
          },
        ],
        response_body_url: `/api/body/by-request/req_tr_1?org_id=${orgA()}&side=response`,
      },
    });
    const plain = json(await get(`/api/traces/tools/req_tr_2?org_id=${orgA()}`));
    expect(plain).toMatchObject({ full_tracing: false, full_tool_trace: null, tool_summary: { calls: [] } });
    expect((await get(`/api/traces/tools/req_unknown?org_id=${orgA()}`)).statusCode).toBe(404);
  });
});

describe('artifacts', () => {
  const metadata = async (artifactId: string, token = tok.a!, org = orgA(), trace = T1) => {
    const res = await get(`/api/traces/${trace}/artifacts/${artifactId}?org_id=${org}`, token);
    expect(res.statusCode, res.body).toBe(200);
    return json(res);
  };

  it('signs a URL that serves the verified bytes without a bearer', async () => {
    const meta = await metadata('art_tool_args');
    expect(meta).toMatchObject({
      artifact_id: 'art_tool_args',
      kind: 'tool_arguments',
      object_key: TOOL_KEY,
      mime_type: 'application/json',
      payload_state: 'full',
    });
    expect(meta.url).toMatch(
      /^\/api\/traces\/[0-9a-f]+\/artifacts\/art_tool_args\/content\?org_id=.+&expires=\d+&signature=[0-9a-f]{64}$/,
    );
    expect(Date.parse(meta.url_expires_at) - Date.now()).toBeGreaterThan(290_000);
    const res = await get(meta.url, null);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.rawPayload.equals(TOOL_ARGS)).toBe(true);
  });

  it('points a gateway body artifact at the authenticated body route, and a summary one nowhere', async () => {
    expect((await metadata('art_llm_out')).url).toBe(
      `/api/body/by-request/req_tr_1?org_id=${orgA()}&side=response`,
    );
    expect((await metadata('art_llm_in')).url).toBe(
      `/api/body/by-request/req_tr_1?org_id=${orgA()}&side=request`,
    );
    expect(await metadata('art_docs')).toMatchObject({ url: null, url_expires_at: null, object_key: '' });
  });

  it('refuses a tampered, an expired, or a re-aimed signature, and altered bytes', async () => {
    const meta = await metadata('art_tool_args');
    const u = new URL(meta.url, 'http://x');
    const sig = u.searchParams.get('signature')!;
    const tampered = new URL(u);
    tampered.searchParams.set('signature', `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`);
    const longer = new URL(u);
    longer.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600));
    const otherOrg = new URL(u);
    otherOrg.searchParams.set('org_id', t.b!.org_id);
    const otherArtifact = `/api/traces/${TB}/artifacts/art_b/content${u.search}`;
    for (const url of [
      `${tampered.pathname}${tampered.search}`,
      `${longer.pathname}${longer.search}`,
      `${otherOrg.pathname}${otherOrg.search}`,
      otherArtifact,
      `${u.pathname}?org_id=${orgA()}`,
    ]) {
      const res = await get(url, null);
      expect(res.statusCode, url).toBe(403);
      expect(json(res).message).toMatch(/invalid artifact URL signature/);
    }
    const name = { orgId: orgA(), traceId: T1, artifactId: 'art_tool_args' };
    const expired = signedArtifactUrl(URL_KEY, name, new Date(Date.now() - 301_000));
    const res = await get(expired.url, null);
    expect(res.statusCode).toBe(403);
    expect(json(res).message).toMatch(/expired/);
    // Another org's artifact id, signed with this org: the row is not this org's.
    const foreign = signedArtifactUrl(URL_KEY, { ...name, traceId: TB, artifactId: 'art_b' }, new Date());
    expect((await get(foreign.url, null)).statusCode).toBe(404);
    // A URL signed with another key (another deployment) is refused.
    const alien = signedArtifactUrl(artifactUrlKey(randomBytes(32)), name, new Date());
    expect((await get(alien.url, null)).statusCode).toBe(403);
    // Bytes altered after the row was written: refused, none served.
    const evil = Buffer.from(TOOL_ARGS);
    evil[3] = 0x58;
    await writeFile(join(dir, 'objects', orgA(), TOOL_KEY), evil);
    try {
      const bad = await get(meta.url, null);
      expect(bad.statusCode).toBe(502);
      expect(bad.body).not.toContain('Lisbon');
      expect(json(bad).message).toMatch(/integrity/);
    } finally {
      await objects.put(orgA(), TOOL_KEY, TOOL_ARGS);
    }
  });
});

describe('artifacts on an S3 object store', () => {
  let s3: TestS3Server;
  let s3App: FastifyInstance;
  beforeAll(async () => {
    s3 = await startS3Server();
    const store = new S3ObjectStore({
      endpoint: s3.endpoint,
      bucket: s3.bucket,
      region: TEST_S3_REGION,
      ...TEST_S3_CREDENTIALS,
    });
    await store.put(orgA(), TOOL_KEY, TOOL_ARGS);
    s3App = await serverOf({ ...traceDeps(), objects: store });
    await s3App.ready();
  });
  afterAll(async () => {
    await s3App?.close();
    await s3?.close();
  });
  const metadata = async (artifactId: string) => {
    const res = await s3App.inject({
      method: 'GET',
      url: `/api/traces/${T1}/artifacts/${artifactId}?org_id=${orgA()}`,
      headers: { authorization: `Bearer ${tok.a}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    return json(res);
  };

  it("hands out the store's presigned URL, which reads the bytes with no other credential", async () => {
    const meta = await metadata('art_tool_args');
    expect(meta.url.startsWith(`${s3.endpoint}/${s3.bucket}/${orgA()}/${TOOL_KEY}?`)).toBe(true);
    expect(meta.url).toMatch(/X-Amz-Expires=300&.*X-Amz-Signature=[0-9a-f]{64}/);
    expect(Date.parse(meta.url_expires_at) - Date.now()).toBeGreaterThan(290_000);
    const res = await fetch(meta.url);
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(TOOL_ARGS)).toBe(true);
    expect(blake3Hex(bytes)).toBe(meta.blake3_hash);
    // The object's URL without the signature is refused: the bucket is private.
    const bare = await fetch(meta.url.split('?')[0]);
    expect(bare.status).toBe(403);
    await bare.arrayBuffer();
  });

  it('still points a gateway body artifact at the authenticated body route', async () => {
    expect((await metadata('art_llm_out')).url).toBe(
      `/api/body/by-request/req_tr_1?org_id=${orgA()}&side=response`,
    );
  });
});

describe('tenant isolation', () => {
  const routes = (org: string) => [
    `/api/traces/${T1}/tree?org_id=${org}`,
    `/api/sessions/ses_agent/traces?org_id=${org}`,
    `/api/requests/req_tr_1/trace?org_id=${org}`,
    `/api/traces/${T1}/spans/${S.llm}?org_id=${org}`,
    `/api/traces/${T1}/artifacts/art_tool_args?org_id=${org}`,
    `/api/sessions/ses_agent/traces/live?org_id=${org}`,
    `/api/traces/requests/req_tr_1?org_id=${org}`,
    `/api/traces/sessions/ses_agent?org_id=${org}`,
    `/api/traces/tools/req_tr_1?org_id=${org}`,
  ];

  it("refuses another org's token naming the first org, like every query route", async () => {
    for (const url of routes(orgA())) {
      const res = await get(url, tok.b!);
      expect(res.statusCode, url).toBe(403);
      expect(res.body).not.toContain(T1);
      expect(res.body).not.toContain('req_tr_1');
    }
  });

  it("answers the first org's ids under the second org as unknown: 404 or an empty page", async () => {
    const orgB = t.b!.org_id;
    for (const url of routes(orgB)) {
      if (url.includes('/live')) continue;
      const res = await get(url, tok.b!);
      const body = json(res);
      if (url.includes('/sessions/')) {
        expect(res.statusCode, url).toBe(200);
        expect(body, url).toMatchObject({ data: [], total: 0, has_more: false });
      } else {
        expect(res.statusCode, url).toBe(404);
        expect(body.error, url).toBe('not_found');
      }
      expect(res.body).not.toContain(S.llm);
    }
    // Its own trace it reads.
    expect(json(await get(`/api/traces/${TB}/tree?org_id=${orgB}`, tok.b!)).span_count).toBe(1);
    const own = await get(`/api/traces/${TB}/artifacts/art_b?org_id=${orgB}`, tok.b!);
    expect((await get(json(own).url, null)).body).toBe('bbb');
  });

  it('holds a project-bound token to its project', async () => {
    const org = t.a2!.org_id;
    expect(org).toBe(orgA());
    expect((await get(`/api/traces/${T1}/tree?org_id=${org}`, tok.a2!)).statusCode).toBe(404);
    expect(json(await get(`/api/sessions/ses_agent/traces?org_id=${org}`, tok.a2!)).total).toBe(0);
    expect((await get(`/api/traces/tools/req_tr_1?org_id=${org}`, tok.a2!)).statusCode).toBe(404);
  });
});

describe('live trace stream', () => {
  interface Frame {
    id: string;
    event: string;
    data: Record<string, unknown>;
  }

  /** Reads SSE frames until `until` holds or 5 s pass; returns the frames and whether a heartbeat came. */
  const reader = (res: Response) => {
    const r = res.body!.getReader();
    let text = '';
    const frames: Frame[] = [];
    let heartbeat = false;
    // A read outlived by its deadline is kept for the next call, so no chunk is dropped.
    let pending: ReturnType<typeof r.read> | null = null;
    const read = async (until: (frames: Frame[]) => boolean, ms = 5_000) => {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline && !until(frames)) {
        pending ??= r.read();
        const next = await Promise.race([
          pending,
          new Promise<null>((resolve) => setTimeout(() => resolve(null), deadline - Date.now())),
        ]);
        if (next === null) break;
        pending = null;
        if (next.done) break;
        text += new TextDecoder().decode(next.value);
        let cut = text.indexOf('\n\n');
        while (cut >= 0) {
          const block = text.slice(0, cut);
          text = text.slice(cut + 2);
          if (block.includes(': heartbeat')) heartbeat = true;
          const f = Object.fromEntries(
            block
              .split('\n')
              .filter((l) => !l.startsWith(':') && l.includes(': '))
              .map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
          );
          if (f.id) frames.push({ id: f.id, event: String(f.event), data: JSON.parse(String(f.data)) });
          cut = text.indexOf('\n\n');
        }
      }
      return { frames, heartbeat };
    };
    return { read, cancel: () => r.cancel().catch(() => {}) };
  };

  const liveEvent = (id: string, occurredMs: number, session = 'ses_live', tenant = t.a!) =>
    event(S.agent, 'trace.span.started', 0, {
      event_id: id,
      trace_id: TL,
      session_id: session,
      org_id: tenant.org_id,
      project_id: tenant.project_id,
      event_name: id.startsWith('ev_end') ? 'trace.span.ended' : 'trace.span.started',
      occurred_at: new Date(occurredMs).toISOString().replace('Z', '000000Z'),
    });
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('delivers trace events and request.completed in order, once each, and resumes after Last-Event-ID', async () => {
    const server = await serverOf(traceDeps({ pollMs: 50, heartbeatMs: 150 }));
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    const abort = new AbortController();
    const open = (org: string, token: string, last?: string) =>
      fetch(`${base}/api/sessions/ses_live/traces/live?org_id=${org}`, {
        headers: { authorization: `Bearer ${token}`, ...(last ? { 'last-event-id': last } : {}) },
        signal: abort.signal,
      });
    try {
      const res = await open(orgA(), tok.a!);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const spy = await open(t.b!.org_id, tok.b!);
      const now = Date.now();
      await write([liveEvent('ev_live_1', now)], new Date());
      await pause(20);
      await write([liveEvent('ev_live_2', now + 1)], new Date());
      await pause(20);
      const completed = generateRequest({
        tenant: t.a!,
        requestId: 'req_live_t1',
        startedAt: new Date(now),
        rand: prng(3),
        sessionId: 'ses_live',
        ingestedAt: new Date(),
      });
      await insertGenerated((table, rows) => chdb.insert(table, rows), [completed]);
      await pause(20);
      // Redelivered, another session, another org: none of them shows.
      await write([liveEvent('ev_live_1', now)], new Date());
      await write([liveEvent('ev_other_session', now, 'ses_elsewhere')], new Date());
      await write([liveEvent('ev_org_b', now, 'ses_live', t.b!)], new Date());
      await pause(20);
      await write([liveEvent('ev_end_live_3', now + 3)], new Date());

      const stream = reader(res);
      const first = await stream.read((f) => f.some((x) => x.id === 'ev_end_live_3'));
      await pause(300);
      const settled = await stream.read(() => false, 300);
      expect(settled.frames.map((f) => f.id)).toEqual([
        'ev_live_1',
        'ev_live_2',
        'req_live_t1',
        'ev_end_live_3',
      ]);
      expect(first.frames.map((f) => f.event)).toEqual([
        'trace.span.started',
        'trace.span.started',
        'request.completed',
        'trace.span.ended',
      ]);
      expect(first.frames[0]!.data).toMatchObject({
        event_id: 'ev_live_1',
        trace_id: TL,
        session_id: 'ses_live',
        attributes: {},
      });
      expect(first.frames[2]!.data).toMatchObject({
        request_id: 'req_live_t1',
        total_cost_usd: formatUsd(completed.total),
      });
      expect(settled.heartbeat).toBe(true);
      await stream.cancel();

      // Org B on the same session id sees only its own event.
      const spyStream = reader(spy);
      const spyFrames = await spyStream.read((f) => f.some((x) => x.id === 'ev_org_b'), 2_000);
      expect(spyFrames.frames.map((f) => f.id)).toEqual(['ev_org_b']);
      await spyStream.cancel();

      // Reconnect after ev_live_2: the rest, then live records; nothing at or before it again.
      const resumed = await open(orgA(), tok.a!, 'ev_live_2');
      const again = reader(resumed);
      await write([liveEvent('ev_live_4', now + 4)], new Date());
      const after = await again.read((f) => f.some((x) => x.id === 'ev_live_4'));
      await pause(300);
      expect((await again.read(() => false, 300)).frames.map((f) => f.id)).toEqual([
        'req_live_t1',
        'ev_end_live_3',
        'ev_live_4',
      ]);
      expect(after.frames[0]!.event).toBe('request.completed');
      await again.cancel();
      // Another query process (no journal) resumes from the store.
      const other = await serverOf(traceDeps({ pollMs: 50, heartbeatMs: 150 }));
      const otherBase = await other.listen({ port: 0, host: '127.0.0.1' });
      try {
        const elsewhere = reader(
          await fetch(`${otherBase}/api/sessions/ses_live/traces/live?org_id=${orgA()}`, {
            headers: { authorization: `Bearer ${tok.a}`, 'last-event-id': 'ev_end_live_3' },
            signal: abort.signal,
          }),
        );
        await elsewhere.read((f) => f.length > 0);
        await pause(300);
        expect((await elsewhere.read(() => false, 300)).frames.map((f) => f.id)).toEqual(['ev_live_4']);
        await elsewhere.cancel();
      } finally {
        await other.close();
      }
      // An id the session does not have (another org's) resumes nothing.
      const unknown = reader(await open(orgA(), tok.a!, 'ev_org_b'));
      expect((await unknown.read(() => false, 400)).frames).toEqual([]);
      await unknown.cancel();
    } finally {
      abort.abort();
      await server.close();
    }
  });

  it('delivers a burst larger than a poll page, written with one ingest time, each record once', async () => {
    const server = await serverOf(traceDeps({ pollMs: 50, heartbeatMs: 1_000 }));
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    const abort = new AbortController();
    try {
      const res = await fetch(`${base}/api/sessions/ses_burst/traces/live?org_id=${orgA()}`, {
        headers: { authorization: `Bearer ${tok.a}` },
        signal: abort.signal,
      });
      const now = Date.now();
      const burst = Array.from({ length: 2_500 }, (_, i) =>
        liveEvent(`ev_burst_${String(i).padStart(4, '0')}`, now + i, 'ses_burst'),
      );
      await write(burst, new Date());
      const stream = reader(res);
      const { frames } = await stream.read((f) => f.length >= 2_500, 10_000);
      await pause(200);
      await stream.read(() => false, 200);
      expect(frames).toHaveLength(2_500);
      expect(frames.map((f) => f.id)).toEqual(burst.map((e) => e.event_id));
      await stream.cancel();
    } finally {
      abort.abort();
      await server.close();
    }
  });

  it('caps streams per session like the request live route', async () => {
    const options = traceDeps({ pollMs: 50, heartbeatMs: 1_000 });
    options.traces.live = new TraceLiveSessions(chdb, {
      pollMs: 50,
      heartbeatMs: 1_000,
      maxPerSession: 1,
      maxPerOrg: 4,
    });
    const server = await serverOf(options);
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    const abort = new AbortController();
    try {
      const url = `${base}/api/sessions/ses_cap/traces/live?org_id=${orgA()}`;
      const headers = { authorization: `Bearer ${tok.a}` };
      const first = await fetch(url, { headers, signal: abort.signal });
      expect(first.status).toBe(200);
      const second = await fetch(url, { headers, signal: abort.signal });
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toBe('1');
    } finally {
      abort.abort();
      await server.close();
    }
  });
});

describe('svc traces (the CLI against the query API)', () => {
  const svc = async (args: string[]) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['bin/svc.js', ...args], {
        env: { ...process.env, SVC_FROM_SOURCE: '1' },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  it('prints the tree, its JSON, the session list, and a refusal as one line', async () => {
    const server = await serverOf(traceDeps());
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    try {
      const flags = ['--org', orgA(), '--url', base, '--token', tok.a!];
      const [tree, asJson, session, missing] = await Promise.all([
        svc(['traces', 'tree', T1, ...flags]),
        svc(['traces', 'tree', T1, ...flags, '--json']),
        svc(['traces', 'session', 'ses_agent', ...flags]),
        svc(['traces', 'tree', 'ffffffffffffffffffffffffffffffff', ...flags]),
      ]);
      expect(tree.code, tree.stderr).toBe(0);
      const lines = tree.stdout.trimEnd().split('\n');
      expect(lines[0]).toBe(`trace ${T1}  5 spans  3.000 s  ${at(0)}  (full payloads captured)`);
      expect(lines.slice(1)).toEqual([
        'agent.run  AGENT  ok  3.000 s',
        '└─ chain.plan  CHAIN  ok  2.890 s',
        `   ├─ svc.gateway /v1/chat/completions  LLM  ok  900 ms  ${llmRequest.request.model_served} (${llmRequest.request.provider})  tokens ${llmRequest.request.prompt_tokens} in / ${llmRequest.request.completion_tokens} out  ${formatUsd(llmRequest.total)} USD  HTTP 200`,
        '   ├─ tool.search  TOOL  ok  200 ms  tool search',
        '   └─ retriever.docs  RETRIEVER  error  30 ms  "index unavailable"',
      ]);
      expect(asJson.code).toBe(0);
      expect(JSON.parse(asJson.stdout)).toMatchObject({
        trace_id: T1,
        span_count: 5,
        root_span_ids: [S.agent],
      });
      expect(session.code, session.stderr).toBe(0);
      expect(session.stdout).toContain(`${T1}  ${at(0)}  5           agent.run       req_tr_1     yes`);
      expect(session.stdout).toContain('traces 1-2 of 2');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toBe('svc: query API answered 404: trace not found\n');
    } finally {
      await server.close();
    }
  });
});
