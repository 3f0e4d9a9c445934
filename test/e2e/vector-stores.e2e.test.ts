import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../fakes/openai-upstream.js';
import {
  connect,
  eventually,
  type GatewayEnv,
  startGatewayEnv,
  upsertFakeEndpoint,
} from '../helpers/gateway-env.js';
import { completedEnvelope } from '../helpers/request-envelopes.js';
import { type ServeProcess, startServe } from '../helpers/svc-process.js';

// SPEC 4.1 /v1/vector_stores through a running `svc serve` with the real OpenAI SDK and the
// service's own engine (src/vectors over the embedded analytics store): stores' lifecycle; files
// uploaded, attached and indexed in the background (createAndPoll), their chunks embedded through
// the gateway's own request path (recorded and priced as the attaching key's embeddings requests);
// search with attributes, filters and a score threshold; detach; a file that cannot be indexed;
// isolation between projects and organizations; file batches and parsed content; and 503 from a
// gateway process with no analytics store.

type ApiError = InstanceType<typeof OpenAI.APIError>;
interface Key {
  org_id: string;
  project_id: string;
  api_key_id: string;
  api_key: string;
}

let fake: FakeOpenAI;
let gw: GatewayEnv;
let a: Key; // the main project
let b: Key; // another project of the same organization
let c: Key; // a project of another organization
let bare: ServeProcess; // a gateway-only process with no analytics store
let bareDir: string;

const clientOf = (key: Key, url = gw.serve.httpUrl) =>
  new OpenAI({ apiKey: key.api_key, baseURL: `${url}/v1`, maxRetries: 0 });
const failure = async (call: () => Promise<unknown>): Promise<ApiError> => {
  try {
    await call();
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('the call succeeded');
};
const bootstrap = async (workspace: string, org: string, project: string): Promise<Key> =>
  (await gw.svc([
    'bootstrap',
    '--workspace',
    workspace,
    '--org',
    org,
    '--project',
    project,
  ])) as unknown as Key;
const live = (key: Key, url = gw.serve.httpUrl) =>
  eventually(
    async () =>
      (await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key.api_key}` } })).status ===
      200,
    15_000,
    'the API key in the gateway',
  );
const embeddingRequests = (): RecordedRequest[] => fake.requests.filter((r) => r.path === '/v1/embeddings');
const inputsOf = (r: RecordedRequest) => (r.body as { input: string[] }).input;
const upload = async (client: OpenAI, name: string, bytes: string | Buffer) =>
  client.files.create({ file: await toFile(Buffer.from(bytes), name), purpose: 'assistants' });

const LIGHTHOUSE =
  'Lighthouses guide ships along rocky coasts at night. The keeper trims the lamp wick every evening.\n';
const SOURDOUGH =
  '# Sourdough\n\nBread rises when wild yeast ferments the dough overnight. Bake the loaf at 250 degrees.\n';

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  a = gw.boot as Key;
  b = await bootstrap('Gw', 'Gw Org', 'Vectors B');
  c = await bootstrap('Vectors Other Ws', 'Vectors Other Org', 'Vectors C');
  for (const model of ['text-embedding-3-small', 'text-embedding-3-large'])
    await upsertFakeEndpoint(gw, { adapter: 'openai', model, origin: fake.url, capabilities: 'embeddings' });
  await upsertFakeEndpoint(gw, {
    adapter: 'openai',
    model: 'gpt-4o',
    origin: fake.url,
    capabilities: 'chat,streaming,responses',
  });
  await connect(gw, { provider: 'openai', secret: 'sk-x' });
  await eventually(
    async () => {
      const r = await fetch(`${gw.serve.httpUrl}/v1/models`, {
        headers: { authorization: `Bearer ${a.api_key}` },
      });
      return ((await r.json()) as { data: unknown[] }).data.length >= 3;
    },
    15_000,
    'registry snapshot',
  );
  for (const key of [b, c]) await live(key);
  // A second process on the same database serving the gateway role only, with no analytics store.
  bareDir = await mkdtemp(join(tmpdir(), 'svc-vs-bare-'));
  await chmod(bareDir, 0o755);
  bare = await startServe({ ...gw.env, SVC_DATA_DIR: bareDir, SVC_LOG_LEVEL: 'error' }, [
    '--roles',
    'gateway',
  ]);
  await live(a, bare.httpUrl);
}, 180_000);
afterAll(async () => {
  await bare?.stop();
  await gw?.stop();
  await fake?.close();
  if (bareDir) await rm(bareDir, { recursive: true, force: true });
});

describe('stores', () => {
  it('create, retrieve, list with its cursor, modify, delete', async () => {
    const client = clientOf(a);
    const before = Math.floor(Date.now() / 1_000);
    const { data: store, response } = await client.vectorStores
      .create({
        name: 'handbook',
        description: 'the team handbook',
        metadata: { team: 'docs' },
        expires_after: { anchor: 'last_active_at', days: 7 },
      })
      .withResponse();
    expect(response.headers.get('x-svc-request-id')).toMatch(/^req_/);
    expect(store).toEqual({
      id: expect.stringMatching(/^vs_[0-9a-z]{26}$/),
      object: 'vector_store',
      created_at: expect.any(Number),
      name: 'handbook',
      description: 'the team handbook',
      usage_bytes: 0,
      file_counts: { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 },
      status: 'completed',
      expires_after: { anchor: 'last_active_at', days: 7 },
      expires_at: store.last_active_at! + 7 * 86_400,
      last_active_at: store.created_at,
      metadata: { team: 'docs' },
      embedding_model: 'text-embedding-3-small',
    });
    expect(store.created_at).toBeGreaterThanOrEqual(before);
    expect(await client.vectorStores.retrieve(store.id)).toEqual(store);

    const more = [];
    for (let i = 0; i < 3; i++) more.push(await client.vectorStores.create({ name: `page ${i}` }));
    const ids: string[] = [];
    for await (const s of client.vectorStores.list({ limit: 2, order: 'asc' })) ids.push(s.id);
    const mine = [store.id, ...more.map((s) => s.id)];
    expect(ids.filter((id) => mine.includes(id))).toEqual(mine);
    const firstPage = await client.vectorStores.list({ limit: 2 });
    expect(firstPage.data).toHaveLength(2);
    expect(firstPage.has_more).toBe(true);
    expect(firstPage.data[0]!.id).toBe(more.at(-1)!.id);
    const backwards = await client.vectorStores.list({ limit: 1, order: 'asc', before: more[1]!.id });
    expect(backwards.data.map((s) => s.id)).toEqual([more[0]!.id]);

    const updated = await client.vectorStores.update(store.id, {
      name: 'handbook v2',
      metadata: { team: 'docs', year: '2025' },
      expires_after: null,
    });
    expect(updated).toMatchObject({
      name: 'handbook v2',
      metadata: { team: 'docs', year: '2025' },
      expires_after: null,
      expires_at: null,
    });
    expect(await client.vectorStores.delete(store.id)).toEqual({
      id: store.id,
      object: 'vector_store.deleted',
      deleted: true,
    });
    expect((await failure(() => client.vectorStores.retrieve(store.id))).status).toBe(404);
    expect((await failure(() => client.vectorStores.delete(store.id))).status).toBe(404);
  });

  it('refuses bad input with a 400 naming the parameter', async () => {
    const client = clientOf(a);
    const cases: [() => Promise<unknown>, string][] = [
      [
        () => client.vectorStores.create({ expires_after: { anchor: 'last_active_at', days: 400 } }),
        'expires_after.days',
      ],
      [() => client.vectorStores.create({ metadata: { k: 'v'.repeat(513) } }), 'metadata.k'],
      [() => client.vectorStores.create({ name: 'x', colour: 'blue' } as never), 'colour'],
      [() => client.vectorStores.list({ limit: 101 }), 'limit'],
      [() => client.vectorStores.list({ after: 'nope' }), 'after'],
    ];
    for (const [call, param] of cases) {
      const err = await failure(call);
      expect(err.status).toBe(400);
      expect((err.error as { param: string }).param).toBe(param);
    }
  });
});

describe('files, indexing and search', () => {
  let storeId: string;
  let lighthouse: string;
  let sourdough: string;

  it('text and Markdown files attached with createAndPoll: completed, embedded through the gateway, recorded and priced', async () => {
    const client = clientOf(a);
    fake.reset();
    const store = await client.vectorStores.create({ name: 'library' });
    storeId = store.id;
    lighthouse = (await upload(client, 'lighthouse.txt', LIGHTHOUSE)).id;
    sourdough = (await upload(client, 'sourdough.md', SOURDOUGH)).id;

    const first = await client.vectorStores.files.createAndPoll(store.id, {
      file_id: lighthouse,
      attributes: { kind: 'notes', year: 2024 },
    });
    expect(first).toEqual({
      id: lighthouse,
      object: 'vector_store.file',
      usage_bytes: expect.any(Number),
      created_at: expect.any(Number),
      vector_store_id: store.id,
      status: 'completed',
      last_error: null,
      chunking_strategy: {
        type: 'static',
        static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 },
      },
      attributes: { kind: 'notes', year: 2024 },
    });
    const second = await client.vectorStores.files.createAndPoll(store.id, {
      file_id: sourdough,
      attributes: { kind: 'recipe' },
      chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 50 } },
    });
    expect(second).toMatchObject({ status: 'completed', last_error: null });
    // Each file is one chunk here: usage is the bytes of its text.
    expect(first.usage_bytes).toBe(Buffer.byteLength(LIGHTHOUSE));
    expect(second.usage_bytes).toBe(Buffer.byteLength(SOURDOUGH));

    const retrieved = await client.vectorStores.retrieve(store.id);
    expect(retrieved).toMatchObject({
      status: 'completed',
      usage_bytes: first.usage_bytes + second.usage_bytes,
      file_counts: { in_progress: 0, completed: 2, failed: 0, cancelled: 0, total: 2 },
    });
    const listed = await client.vectorStores.files.list(store.id, { order: 'asc' });
    expect(listed.data.map((f) => f.id)).toEqual([lighthouse, sourdough]);
    expect((await client.vectorStores.files.list(store.id, { filter: 'failed' })).data).toEqual([]);
    expect(await client.vectorStores.files.retrieve(sourdough, { vector_store_id: store.id })).toEqual(
      second,
    );

    // The fake upstream saw the chunks' texts under the store's model, one request per file here.
    const sent = embeddingRequests();
    expect(sent.map((r) => (r.body as { model: string }).model)).toEqual([
      'text-embedding-3-small-upstream',
      'text-embedding-3-small-upstream',
    ]);
    expect(inputsOf(sent[0]!)).toEqual([LIGHTHOUSE]);
    expect(inputsOf(sent[1]!)).toEqual([SOURDOUGH]);
    // Each is a request of the key that attached the file, recorded and priced like a client's.
    for (const r of sent) {
      const envelope = await completedEnvelope(gw, r.headers['x-svc-request-id'] as string);
      expect(envelope).toMatchObject({
        route: '/v1/embeddings',
        api_key_id: a.api_key_id,
        project_id: a.project_id,
        model_served: 'text-embedding-3-small',
        status: 'success',
        billing: { status: 'priced' },
      });
      expect(Number(envelope.total_cost_usd)).toBeGreaterThan(0);
    }
  });

  it('search: the relevant chunk first with its file’s attributes; a filter excludes a file; score_threshold trims', async () => {
    const client = clientOf(a);
    fake.reset();
    const { data: found, response } = await client.vectorStores
      .search(storeId, { query: 'how does wild yeast make bread rise' })
      .withResponse();
    expect(response.status).toBe(200);
    expect(found.data[0]).toEqual({
      file_id: sourdough,
      filename: 'sourdough.md',
      score: expect.any(Number),
      attributes: { kind: 'recipe' },
      content: [{ type: 'text', text: expect.stringContaining('wild yeast ferments the dough') }],
    });
    // The query went through the request path with the store's model, as the caller's request.
    const [query] = embeddingRequests();
    expect(query?.body).toMatchObject({
      model: 'text-embedding-3-small-upstream',
      input: ['how does wild yeast make bread rise'],
    });
    expect((await completedEnvelope(gw, query!.headers['x-svc-request-id'] as string)).api_key_id).toBe(
      a.api_key_id,
    );

    const raw = await fetch(`${gw.serve.httpUrl}/v1/vector_stores/${storeId}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: ['wild yeast', 'lamp wick'], max_num_results: 2 }),
    });
    // Several queries: a chunk scores its best match to any of them.
    const page = (await raw.json()) as { data: { file_id: string }[] };
    expect(page).toEqual({
      object: 'vector_store.search_results.page',
      search_query: ['wild yeast', 'lamp wick'],
      data: expect.any(Array),
      has_more: false,
      next_page: null,
    });
    expect(page.data.map((d) => d.file_id).sort()).toEqual([lighthouse, sourdough].sort());

    // Words of both files: without the filter both match.
    const filtered = await client.vectorStores.search(storeId, {
      query: 'yeast bread lamp keeper',
      filters: { type: 'ne', key: 'kind', value: 'recipe' },
    });
    expect(filtered.data.length).toBeGreaterThan(0);
    expect(filtered.data.every((d) => d.file_id === lighthouse)).toBe(true);
    const numeric = await client.vectorStores.search(storeId, {
      query: 'lamp',
      filters: {
        type: 'and',
        filters: [
          { type: 'gte', key: 'year', value: 2024 },
          { type: 'eq', key: 'kind', value: 'notes' },
        ],
      },
    });
    expect(numeric.data.map((d) => d.file_id)).toEqual([lighthouse]);

    const both = await client.vectorStores.search(storeId, { query: 'yeast bread lamp keeper trims' });
    expect(both.data.map((d) => d.file_id).sort()).toEqual([lighthouse, sourdough].sort());
    const [best, next] = both.data;
    const trimmed = await client.vectorStores.search(storeId, {
      query: 'yeast bread lamp keeper trims',
      ranking_options: { score_threshold: (best!.score + next!.score) / 2 },
    });
    expect(trimmed.data.map((d) => d.file_id)).toEqual([best!.file_id]);
    expect(
      (await client.vectorStores.search(storeId, { query: 'bread', max_num_results: 1 })).data,
    ).toHaveLength(1);

    const rewrite = await failure(() =>
      client.vectorStores.search(storeId, { query: 'x', rewrite_query: true }),
    );
    expect(rewrite.status).toBe(400);
    expect((rewrite.error as { param: string }).param).toBe('rewrite_query');
    const badFilter = await failure(() =>
      client.vectorStores.search(storeId, {
        query: 'x',
        filters: { type: 'near', key: 'k', value: 1 } as never,
      }),
    );
    expect(badFilter.status).toBe(400);
    expect((badFilter.error as { param: string }).param).toBe('filters.type');
  });

  it('attributes can change; a detached file is out of search and the file itself stays', async () => {
    const client = clientOf(a);
    const updated = await client.vectorStores.files.update(lighthouse, {
      vector_store_id: storeId,
      attributes: { kind: 'recipe' },
    });
    expect(updated.attributes).toEqual({ kind: 'recipe' });
    const both = await client.vectorStores.search(storeId, {
      query: 'lamp',
      filters: { type: 'eq', key: 'kind', value: 'recipe' },
    });
    expect(both.data.map((d) => d.file_id)).toContain(lighthouse);

    expect(await client.vectorStores.files.delete(sourdough, { vector_store_id: storeId })).toEqual({
      id: sourdough,
      object: 'vector_store.file.deleted',
      deleted: true,
    });
    const after = await client.vectorStores.search(storeId, { query: 'yeast bread lamp keeper' });
    expect(after.data.length).toBeGreaterThan(0);
    expect(after.data.some((d) => d.file_id === sourdough)).toBe(false);
    expect((await client.files.retrieve(sourdough)).id).toBe(sourdough);
    expect(
      (await failure(() => client.vectorStores.files.retrieve(sourdough, { vector_store_id: storeId })))
        .status,
    ).toBe(404);
    expect((await client.vectorStores.retrieve(storeId)).file_counts.total).toBe(1);
  });

  it('hosted file_search on /v1/responses retrieves from the caller’s store; another project’s store is a 404', async () => {
    const client = clientOf(a);
    fake.reset();
    const tools = [{ type: 'file_search' as const, vector_store_ids: [storeId] }];
    const reply = await client.responses.create({
      model: 'gpt-4o',
      input: 'who trims the lamp wick?',
      tools,
      include: ['file_search_call.results'],
    });
    expect(reply.output[0]).toMatchObject({
      type: 'file_search_call',
      queries: ['who trims the lamp wick?'],
    });
    expect(JSON.stringify(reply.output[0])).toContain(lighthouse);
    const [query, upstream] = fake.requests;
    expect(query?.body).toMatchObject({ input: ['who trims the lamp wick?'] });
    expect(upstream?.path).toBe('/v1/responses');
    const body = upstream?.body as { tools?: unknown; input: unknown };
    expect(body.tools).toBeUndefined();
    expect(JSON.stringify(body.input)).toContain('The keeper trims the lamp wick every evening.');

    const denied = await failure(() =>
      clientOf(b).responses.create({ model: 'gpt-4o', input: 'who trims the lamp wick?', tools }),
    );
    expect(denied.status).toBe(404);

    // Streamed: the item's events follow response.created, the upstream's are renumbered after them.
    const stream = await client.responses.create({
      model: 'gpt-4o',
      input: 'who trims the lamp wick?',
      tools,
      stream: true,
    });
    const events: { type: string; sequence_number: number; output_index?: number }[] = [];
    let completed: { output: { type: string }[] } | undefined;
    for await (const e of stream) {
      events.push(e as (typeof events)[number]);
      if (e.type === 'response.completed') completed = e.response as unknown as typeof completed;
    }
    expect(events.slice(0, 6).map((e) => e.type)).toEqual([
      'response.created',
      'response.output_item.added',
      'response.file_search_call.in_progress',
      'response.file_search_call.searching',
      'response.file_search_call.completed',
      'response.output_item.done',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'response.output_item.added').map((e) => e.output_index)).toEqual([
      0, 1,
    ]);
    expect(completed?.output.map((o) => o.type)).toEqual(['file_search_call', 'message']);
  });

  it('a file deleted in /v1/files is out of search and file_search at once', async () => {
    const client = clientOf(a);
    const secret = (await upload(client, 'secret.txt', 'The vault combination is seven seven four one.')).id;
    await client.vectorStores.files.createAndPoll(storeId, { file_id: secret });
    const found = await client.vectorStores.search(storeId, { query: 'vault combination' });
    expect(found.data.map((d) => d.file_id)).toContain(secret);
    await client.files.delete(secret);
    const after = await client.vectorStores.search(storeId, { query: 'vault combination' });
    expect(after.data.map((d) => d.file_id)).not.toContain(secret);
    fake.reset();
    await client.responses.create({
      model: 'gpt-4o',
      input: 'what is the vault combination?',
      tools: [{ type: 'file_search', vector_store_ids: [storeId] }],
    });
    expect(JSON.stringify(fake.requests.at(-1)?.body)).not.toContain('seven seven four one');
  });

  it('a file that cannot be indexed ends failed with last_error; an unknown embedding model names the cause', async () => {
    const client = clientOf(a);
    const junk = await upload(
      client,
      'random.txt',
      Buffer.concat([Buffer.from([0, 0xff, 0xfe]), randomBytes(512)]),
    );
    const failed = await client.vectorStores.files.createAndPoll(storeId, { file_id: junk.id });
    expect(failed.status).toBe('failed');
    expect(failed.last_error).toEqual({
      code: 'invalid_file',
      message: expect.stringContaining('random.txt'),
    });

    const odd = await client.vectorStores.create({
      name: 'odd',
      embedding_model: 'no-such-embedding-model',
    } as never);
    expect((odd as unknown as { embedding_model: string }).embedding_model).toBe('no-such-embedding-model');
    const text = await upload(client, 'odd.txt', LIGHTHOUSE);
    const unembedded = await client.vectorStores.files.createAndPoll(odd.id, { file_id: text.id });
    expect(unembedded.status).toBe('failed');
    expect(unembedded.last_error?.code).toBe('server_error');
    expect(unembedded.last_error?.message).toMatch(
      /^embedding the chunks with no-such-embedding-model failed \(HTTP 4\d\d /,
    );
  });

  it('a store naming another embedding model embeds with it for its whole life', async () => {
    const client = clientOf(a);
    fake.reset();
    const large = await client.vectorStores.create({ embedding_model: 'text-embedding-3-large' } as never);
    const text = await upload(client, 'large.txt', LIGHTHOUSE);
    expect((await client.vectorStores.files.createAndPoll(large.id, { file_id: text.id })).status).toBe(
      'completed',
    );
    await client.vectorStores.search(large.id, { query: 'keeper' });
    expect(embeddingRequests().map((r) => (r.body as { model: string }).model)).toEqual([
      'text-embedding-3-large-upstream',
      'text-embedding-3-large-upstream',
    ]);
    const change = await failure(() =>
      client.vectorStores.update(large.id, { embedding_model: 'text-embedding-3-small' } as never),
    );
    expect(change.status).toBe(400);
  });
});

describe('isolation', () => {
  it('another project or organization gets the 404 of a store that does not exist, on every route', async () => {
    const mine = clientOf(a);
    const store = await mine.vectorStores.create({ name: 'private' });
    const file = await upload(mine, 'secret.txt', LIGHTHOUSE);
    expect((await mine.vectorStores.files.createAndPoll(store.id, { file_id: file.id })).status).toBe(
      'completed',
    );
    const missing = 'vs_0000000000aaaaaaaaaaaaaaaa';

    for (const key of [b, c]) {
      const theirs = clientOf(key);
      const calls: [string, (id: string) => Promise<unknown>][] = [
        ['retrieve', (id) => theirs.vectorStores.retrieve(id)],
        ['update', (id) => theirs.vectorStores.update(id, { name: 'x' })],
        ['delete', (id) => theirs.vectorStores.delete(id)],
        ['files.list', (id) => theirs.vectorStores.files.list(id)],
        ['files.retrieve', (id) => theirs.vectorStores.files.retrieve(file.id, { vector_store_id: id })],
        [
          'files.update',
          (id) => theirs.vectorStores.files.update(file.id, { vector_store_id: id, attributes: {} }),
        ],
        ['files.delete', (id) => theirs.vectorStores.files.delete(file.id, { vector_store_id: id })],
        ['files.create', (id) => theirs.vectorStores.files.create(id, { file_id: file.id })],
        ['search', (id) => theirs.vectorStores.search(id, { query: 'lighthouse' })],
      ];
      for (const [what, call] of calls) {
        const denied = await failure(() => call(store.id));
        const none = await failure(() => call(missing));
        expect([what, denied.status]).toEqual([what, 404]);
        expect(JSON.stringify(denied.error).replace(store.id, 'ID')).toBe(
          JSON.stringify(none.error).replace(missing, 'ID'),
        );
      }
      expect((await theirs.vectorStores.list()).data.map((s) => s.id)).not.toContain(store.id);
      // Their own store cannot take the first project's file: a 404 on file_id.
      const own = await theirs.vectorStores.create({ name: 'own' });
      const attach = await failure(() => theirs.vectorStores.files.create(own.id, { file_id: file.id }));
      expect(attach.status).toBe(404);
      expect((attach.error as { param: string }).param).toBe('file_id');
    }
    // Nothing the others tried changed the store.
    expect(await mine.vectorStores.retrieve(store.id)).toMatchObject({
      name: 'private',
      file_counts: { completed: 1 },
    });
    expect(
      (await mine.vectorStores.search(store.id, { query: 'keeper trims the lamp' })).data[0]?.file_id,
    ).toBe(file.id);
  });
});

describe('malformed input', () => {
  it('no body, shape or path reaches a 5xx: every refusal is a 4xx in the primary envelope', async () => {
    const client = clientOf(a);
    const store = await client.vectorStores.create({ name: 'fuzz' });
    const file = await upload(client, 'fuzz.txt', LIGHTHOUSE);
    await client.vectorStores.files.createAndPoll(store.id, { file_id: file.id });
    const deep = JSON.parse(`${'['.repeat(200)}${']'.repeat(200)}`);
    const bodies: unknown[] = [
      null,
      [],
      'text',
      42,
      { name: 'a\u0000b' },
      { name: '\ud800' },
      { metadata: { '\u0000': 'x' } },
      { query: deep },
      { query: 'x', filters: deep },
      { query: 'x', filters: { type: 'and', filters: [] } },
      { query: 'x', max_num_results: 1e308 },
      { file_id: 'file-\u0000' },
      { file_ids: ['file-\u0000'] },
      { files: [{ file_id: { $ne: 1 } }] },
      { file_ids: 'file-x' },
      { file_id: { $ne: 1 } },
      { attributes: { k: Number.MAX_VALUE } },
      { expires_after: { anchor: 'last_active_at', days: '7' } },
    ];
    const paths = [
      ['POST', '/vector_stores'],
      ['POST', `/vector_stores/${store.id}`],
      ['POST', `/vector_stores/${store.id}/files`],
      ['POST', `/vector_stores/${store.id}/files/${file.id}`],
      ['POST', `/vector_stores/${store.id}/search`],
      ['POST', `/vector_stores/${store.id}/file_batches`],
      ['POST', `/vector_stores/${store.id}/file_batches/vsfb_%00/cancel`],
    ];
    const statuses = new Set<number>();
    const send = async (method: string, path: string, body?: string, type = 'application/json') => {
      const r = await fetch(`${gw.serve.httpUrl}/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${a.api_key}`,
          ...(body === undefined ? {} : { 'content-type': type }),
        },
        ...(body === undefined ? {} : { body }),
      });
      const json = (await r.json()) as { error?: { type: string; message: string } };
      expect([method, path, body?.slice(0, 80), r.status < 500]).toEqual([
        method,
        path,
        body?.slice(0, 80),
        true,
      ]);
      if (r.status >= 400) expect([path, json.error?.message]).toEqual([path, expect.any(String)]);
      statuses.add(r.status);
    };
    for (const [method, path] of paths) {
      for (const body of bodies) await send(method!, path!, JSON.stringify(body));
      await send(method!, path!, '{"name": ');
      await send(method!, path!, 'name=x', 'application/x-www-form-urlencoded');
    }
    for (const path of [
      '/vector_stores/%00',
      `/vector_stores/${store.id}/files/%00`,
      `/vector_stores/${store.id}/files?after=%00`,
      `/vector_stores/${store.id}/files?filter=%00&limit=-1`,
      `/vector_stores/${store.id}/file_batches/%00`,
      `/vector_stores/${store.id}/file_batches/vsfb_0000000000aaaaaaaaaaaaaaaa/files?after=%00`,
      `/vector_stores/${store.id}/files/${file.id}/content`,
      `/vector_stores/${store.id}/files/%00/content`,
      '/vector_stores?before=vs_%00&order=%00',
      `/vector_stores?limit=${'9'.repeat(400)}`,
    ])
      await send('GET', path);
    expect([...statuses].every((s) => s < 500)).toBe(true);
    // The store is as it was.
    expect((await client.vectorStores.retrieve(store.id)).name).toBe('fuzz');
  });
});

describe('file batches and parsed content (the SDK helpers)', () => {
  it('uploadAndPoll and createAndPoll attach many files; listFiles pages the batch; content is the parsed text', async () => {
    const client = clientOf(a);
    const store = await client.vectorStores.create({ name: 'batched' });
    const uploaded = await client.vectorStores.fileBatches.uploadAndPoll(
      store.id,
      {
        files: [
          await toFile(Buffer.from(LIGHTHOUSE), 'lighthouse.txt'),
          await toFile(Buffer.from(SOURDOUGH), 'sourdough.md'),
        ],
      },
      { pollIntervalMs: 200 },
    );
    expect(uploaded).toMatchObject({
      id: expect.stringMatching(/^vsfb_/),
      object: 'vector_store.files_batch',
      vector_store_id: store.id,
      status: 'completed',
      file_counts: { in_progress: 0, completed: 2, failed: 0, cancelled: 0, total: 2 },
    });
    const listed = [];
    for await (const f of client.vectorStores.fileBatches.listFiles(uploaded.id, {
      vector_store_id: store.id,
      limit: 1,
    }))
      listed.push(f);
    expect(listed.map((f) => f.status)).toEqual(['completed', 'completed']);
    expect(new Set(listed.map((f) => f.id)).size).toBe(2);

    // Per-file attributes through `files`, polled with the header the gateway sends.
    const extra = await upload(client, 'extra.txt', `${LIGHTHOUSE}Fog horns sound in bad weather.\n`);
    const polled = await client.vectorStores.fileBatches.createAndPoll(store.id, {
      files: [{ file_id: extra.id, attributes: { source: 'extra' } }],
    });
    expect(polled).toMatchObject({ status: 'completed', file_counts: { completed: 1, total: 1 } });
    expect(
      (await client.vectorStores.files.retrieve(extra.id, { vector_store_id: store.id })).attributes,
    ).toEqual({
      source: 'extra',
    });
    const found = await client.vectorStores.search(store.id, {
      query: 'fog horn',
      filters: { type: 'eq', key: 'source', value: 'extra' },
    });
    expect(found.data.map((r) => r.file_id)).toEqual([extra.id]);
    expect((await client.vectorStores.retrieve(store.id)).file_counts).toMatchObject({
      completed: 3,
      total: 3,
    });

    const pages = [];
    for await (const part of client.vectorStores.files.content(listed[0]!.id, { vector_store_id: store.id }))
      pages.push(part);
    expect([LIGHTHOUSE, SOURDOUGH].map((t) => t.trim())).toContain(
      pages
        .map((p) => p.text)
        .join('')
        .trim(),
    );
  });

  it('cancel ends a batch cancelled; another project’s batch is a 404 like one that never existed', async () => {
    const client = clientOf(a);
    const store = await client.vectorStores.create({});
    const file = await upload(client, 'cancel.txt', SOURDOUGH);
    const batch = await client.vectorStores.fileBatches.create(store.id, { file_ids: [file.id] });
    const cancelled = await client.vectorStores.fileBatches.cancel(batch.id, { vector_store_id: store.id });
    expect(cancelled.id).toBe(batch.id);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.file_counts.total).toBe(1);

    for (const key of [b, c]) {
      const theirs = await failure(() =>
        clientOf(key).vectorStores.fileBatches.retrieve(batch.id, { vector_store_id: store.id }),
      );
      expect(theirs.status).toBe(404);
      const invented = await failure(() =>
        clientOf(key).vectorStores.fileBatches.retrieve('vsfb_0000000000aaaaaaaaaaaaaaaa', {
          vector_store_id: store.id,
        }),
      );
      expect(theirs.message.replace(/vsfb_\w+/, 'ID')).toBe(invented.message.replace(/vsfb_\w+/, 'ID'));
    }
    const foreignFile = await upload(clientOf(b), 'theirs.txt', LIGHTHOUSE);
    const refused = await failure(() =>
      client.vectorStores.fileBatches.create(store.id, { file_ids: [foreignFile.id] }),
    );
    expect(refused.status).toBe(404);
    const both = await failure(() =>
      client.vectorStores.fileBatches.create(store.id, {
        file_ids: [file.id],
        files: [{ file_id: file.id }],
      }),
    );
    expect(both.status).toBe(400);
  });
});

describe('a gateway with no analytics store', () => {
  it('a gateway process without analytics answers 503 saying what to configure', async () => {
    const err = await failure(() => clientOf(a, bare.httpUrl).vectorStores.list());
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ type: 'service_unavailable', code: 'service_unavailable' });
    expect(err.message).toMatch(/SVC_CLICKHOUSE_URL/);
  });
});
