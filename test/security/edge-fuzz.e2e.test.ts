import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic-upstream.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { hashSeed, mutate, prng } from '../helpers/fuzz.js';
import {
  connect,
  eventually,
  type GatewayEnv,
  startGatewayEnv,
  upsertFakeEndpoint,
} from '../helpers/gateway-env.js';

// A bounded fuzz of every JSON edge. Against one running `svc serve` with the
// fake upstreams, every JSON route of /v1, /alt and /api receives mutated bodies of a valid seed
// (test/helpers/fuzz.ts: dropped and retyped fields, strange numbers, poisoned strings, bodies
// nested thousands of levels deep, truncated JSON) with the credential of its family, 8 at a time.
// Guarantee (SPEC 4.1 rule 10, 7.1, 7.2): none is answered 500, nothing hangs, and the process is
// alive and healthy at the end. What the gateway cannot read is a 400 in the route's envelope.
//
// SVC_FUZZ_BODIES sets the bodies per route. The default (400, about a minute alone on two cores)
// leaves room for the rest of `npm test`; `npm run fuzz:edges` runs the full 2,000 per route (68,000
// bodies, under three minutes alone). A failing body is printed with its route, seed and index,
// which reproduce it alone (SVC_FUZZ_SEED picks the run's seed).

const BODIES = Number(process.env.SVC_FUZZ_BODIES ?? 400);
const SEED = Number(process.env.SVC_FUZZ_SEED ?? 20);
const CONCURRENCY = 8;
const ANSWER_TIMEOUT_MS = 30_000;

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let gw: GatewayEnv;
/** A second tenant for the /api routes, so what they change leaves the gateway's tenant alone. */
let other: { workspace_id: string; org_id: string; project_id: string; api_key_id: string };

type Credential = 'bearer' | 'x-api-key' | 'admin' | 'none';

interface FuzzRoute {
  /** Method and path as the route is registered, plus what its seed aims at. */
  name: string;
  method: 'POST' | 'PUT' | 'PATCH';
  path: () => string;
  credential: Credential;
  seed: () => unknown;
}

const chatSeed = (model: string) => ({
  model,
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'What is the weather?' }] },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"c":"P"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
  ],
  max_tokens: 16,
  stream: false,
  stream_options: { include_usage: true },
  temperature: 0.2,
  stop: ['###'],
  user: 'end-user',
  tools: [
    { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } },
  ],
  tool_choice: 'auto',
  response_format: { type: 'text' },
});

const altSeed = (model: string, counting: boolean) => ({
  model,
  ...(counting ? {} : { max_tokens: 16 }),
  system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Weather?' },
        { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
      ],
    },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { c: 'P' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
  ],
  tools: [{ name: 'weather', description: 'Weather.', input_schema: { type: 'object', properties: {} } }],
  tool_choice: { type: 'auto' },
  metadata: { user_id: 'end-user' },
  stop_sequences: ['###'],
  ...(counting ? {} : { stream: false }),
});

const ROUTES: FuzzRoute[] = [
  {
    name: 'POST /v1/chat/completions (reference)',
    method: 'POST',
    path: () => '/v1/chat/completions',
    credential: 'bearer',
    seed: () => chatSeed('gpt-4o'),
  },
  {
    name: 'POST /v1/chat/completions (messages-style)',
    method: 'POST',
    path: () => '/v1/chat/completions',
    credential: 'bearer',
    seed: () => chatSeed('claude-x'),
  },
  {
    name: 'POST /v1/responses',
    method: 'POST',
    path: () => '/v1/responses',
    credential: 'bearer',
    seed: () => ({
      model: 'gpt-4o',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
      instructions: 'Be brief.',
      max_output_tokens: 16,
      stream: false,
      tools: [{ type: 'function', name: 'weather', parameters: { type: 'object', properties: {} } }],
      user: 'end-user',
    }),
  },
  {
    name: 'POST /v1/embeddings',
    method: 'POST',
    path: () => '/v1/embeddings',
    credential: 'bearer',
    seed: () => ({
      model: 'embed-x',
      input: ['one', 'two'],
      encoding_format: 'float',
      dimensions: 8,
      user: 'u',
    }),
  },
  {
    name: 'POST /alt/v1/messages (messages-style)',
    method: 'POST',
    path: () => '/alt/v1/messages',
    credential: 'x-api-key',
    seed: () => altSeed('claude-x', false),
  },
  {
    name: 'POST /alt/v1/messages (reference)',
    method: 'POST',
    path: () => '/alt/v1/messages',
    credential: 'x-api-key',
    seed: () => altSeed('gpt-4o', false),
  },
  {
    name: 'POST /alt/v1/messages/count_tokens',
    method: 'POST',
    path: () => '/alt/v1/messages/count_tokens',
    credential: 'x-api-key',
    seed: () => altSeed('claude-x', true),
  },
  {
    name: 'POST /api/workspaces',
    method: 'POST',
    path: () => '/api/workspaces',
    credential: 'admin',
    seed: () => ({ name: 'Fuzz' }),
  },
  {
    name: 'POST /api/workspaces/:id/members',
    method: 'POST',
    path: () => `/api/workspaces/${other.workspace_id}/members`,
    credential: 'admin',
    seed: () => ({ email: 'a@example.com', role: 'member' }),
  },
  {
    name: 'POST /api/orgs',
    method: 'POST',
    path: () => '/api/orgs',
    credential: 'admin',
    seed: () => ({ workspace_id: other.workspace_id, name: 'Org' }),
  },
  {
    name: 'PATCH /api/orgs/:id',
    method: 'PATCH',
    path: () => `/api/orgs/${other.org_id}`,
    credential: 'admin',
    seed: () => ({ provider_disallow_list: ['bedrock'] }),
  },
  {
    name: 'PATCH /api/orgs/:id/tracing',
    method: 'PATCH',
    path: () => `/api/orgs/${other.org_id}/tracing`,
    credential: 'admin',
    seed: () => ({ enabled: true }),
  },
  {
    name: 'POST /api/projects',
    method: 'POST',
    path: () => '/api/projects',
    credential: 'admin',
    seed: () => ({ org_id: other.org_id, name: 'P' }),
  },
  {
    name: 'PATCH /api/projects/:id/tracing',
    method: 'PATCH',
    path: () => `/api/projects/${other.project_id}/tracing`,
    credential: 'admin',
    seed: () => ({ enabled: false }),
  },
  {
    name: 'POST /api/api-keys',
    method: 'POST',
    path: () => '/api/api-keys',
    credential: 'admin',
    seed: () => ({ project_id: other.project_id, name: 'k' }),
  },
  {
    name: 'PATCH /api/api-keys/:id/tracing',
    method: 'PATCH',
    path: () => `/api/api-keys/${other.api_key_id}/tracing`,
    credential: 'admin',
    seed: () => ({ enabled: true }),
  },
  {
    name: 'POST /api/workspaces/:id/reporting-dimensions',
    method: 'POST',
    path: () => `/api/workspaces/${other.workspace_id}/reporting-dimensions`,
    credential: 'admin',
    seed: () => ({ key: 'team', description: 'Team' }),
  },
  {
    name: 'PUT /api/api-keys/:id/reporting-dimensions',
    method: 'PUT',
    path: () => `/api/api-keys/${other.api_key_id}/reporting-dimensions`,
    credential: 'admin',
    seed: () => ({ definition_id: 'dim_unknown', value: 'x' }),
  },
  {
    name: 'POST /api/trace-ingest-keys',
    method: 'POST',
    path: () => '/api/trace-ingest-keys',
    credential: 'admin',
    seed: () => ({ project_id: other.project_id, name: 't' }),
  },
  {
    name: 'POST /api/audit-tokens',
    method: 'POST',
    path: () => '/api/audit-tokens',
    credential: 'admin',
    seed: () => ({ workspace_id: other.workspace_id, name: 'auditor' }),
  },
  {
    name: 'POST /api/provider-keys',
    method: 'POST',
    path: () => '/api/provider-keys',
    credential: 'admin',
    seed: () => ({
      org_id: other.org_id,
      project_id: other.project_id,
      provider: 'openai',
      name: 'fuzz',
      secret: 'sk-fuzz',
      metadata: {},
      base_url: null,
    }),
  },
  {
    name: 'POST /api/provider-keys/:id/discover',
    method: 'POST',
    path: () => '/api/provider-keys/pk_unknown/discover',
    credential: 'admin',
    seed: () => ({ apply: false }),
  },
  // The provider names no adapter, so a body that validates changes no platform key in use.
  {
    name: 'PUT /api/platform-keys/:provider',
    method: 'PUT',
    path: () => '/api/platform-keys/fuzz',
    credential: 'admin',
    seed: () => ({ secret: 'sk-x', metadata: {}, base_url: null }),
  },
  {
    name: 'PUT /api/orgs/:id/spend-cap',
    method: 'PUT',
    path: () => `/api/orgs/${other.org_id}/spend-cap`,
    credential: 'admin',
    seed: () => ({ monthly_usd: '100' }),
  },
  {
    name: 'PUT /api/projects/:id/spend-cap',
    method: 'PUT',
    path: () => `/api/projects/${other.project_id}/spend-cap`,
    credential: 'admin',
    seed: () => ({ monthly_usd: '100' }),
  },
  {
    name: 'PUT /api/api-keys/:id/spend-cap',
    method: 'PUT',
    path: () => `/api/api-keys/${other.api_key_id}/spend-cap`,
    credential: 'admin',
    seed: () => ({ monthly_usd: '100' }),
  },
  {
    name: 'POST /api/workspaces/:id/wallet/grants',
    method: 'POST',
    path: () => `/api/workspaces/${other.workspace_id}/wallet/grants`,
    credential: 'admin',
    seed: () => ({ amount_usd: '1.00', reason: 'fuzz', idempotency_key: 'k1' }),
  },
  {
    name: 'POST /api/workspaces/:id/wallet/topups',
    method: 'POST',
    path: () => `/api/workspaces/${other.workspace_id}/wallet/topups`,
    credential: 'admin',
    seed: () => ({ amount_usd: '5.00' }),
  },
  {
    name: 'POST /api/workspaces/:id/wallet/refunds',
    method: 'POST',
    path: () => `/api/workspaces/${other.workspace_id}/wallet/refunds`,
    credential: 'admin',
    seed: () => ({ payment_intent_id: 'pi_1', amount_usd: '1.00', refund_id: 'r-1' }),
  },
  {
    name: 'PUT /api/workspaces/:id/wallet/auto-refill',
    method: 'PUT',
    path: () => `/api/workspaces/${other.workspace_id}/wallet/auto-refill`,
    credential: 'admin',
    seed: () => ({ enabled: true, trigger_usd: '5', amount_usd: '20' }),
  },
  {
    name: 'POST /api/requests/:id/feedback',
    method: 'POST',
    path: () => `/api/requests/req_unknown/feedback?org_id=${other.org_id}`,
    credential: 'admin',
    seed: () => ({ rating: 'up', comment: 'ok' }),
  },
  {
    name: 'POST /api/auth/developer-tokens',
    method: 'POST',
    path: () => '/api/auth/developer-tokens',
    credential: 'admin',
    seed: () => ({ org_id: other.org_id, project_id: null, name: 'cli' }),
  },
  {
    name: 'POST /api/auth/oidc/:provider/start',
    method: 'POST',
    path: () => '/api/auth/oidc/test/start',
    credential: 'none',
    seed: () => ({ return_to: '/console' }),
  },
  {
    name: 'POST /api/auth/oidc/:provider/callback',
    method: 'POST',
    path: () => '/api/auth/oidc/test/callback',
    credential: 'none',
    seed: () => ({ code: 'c', state: 's' }),
  },
  {
    name: 'POST /api/payments/webhooks/:provider',
    method: 'POST',
    path: () => '/api/payments/webhooks/stripe',
    credential: 'none',
    seed: () => ({ id: 'evt_1', type: 'payment_intent.succeeded', data: { object: { id: 'pi_1' } } }),
  },
];

const headersOf = (credential: Credential): Record<string, string> => {
  const json = { 'content-type': 'application/json' };
  switch (credential) {
    case 'bearer':
      return { ...json, authorization: `Bearer ${gw.boot.api_key}` };
    case 'x-api-key':
      return { ...json, 'x-api-key': gw.boot.api_key };
    case 'admin':
      return { ...json, authorization: `Bearer ${gw.admin}` };
    case 'none':
      return json;
  }
};

interface Outcome {
  route: string;
  index: number;
  status: number | 'no answer';
  body: string;
  sent: string;
}

/** One mutated body of one route: reproducible from the route's name, the run's seed and the index. */
const bodyOf = (route: FuzzRoute, index: number): string =>
  mutate(route.seed(), prng(hashSeed(`${route.name}#${index}`, SEED)));

const send = async (route: FuzzRoute, index: number): Promise<Outcome> => {
  const sent = bodyOf(route, index);
  try {
    const res = await fetch(`${gw.serve.httpUrl}${route.path()}`, {
      method: route.method,
      headers: headersOf(route.credential),
      body: sent,
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
    const body = await res.text();
    return { route: route.name, index, status: res.status, body: body.slice(0, 300), sent };
  } catch (err) {
    return { route: route.name, index, status: 'no answer', body: String(err), sent };
  }
};

/** Every (route, index) pair, CONCURRENCY at a time; only failures are kept. */
const fuzz = async (routes: readonly FuzzRoute[]) => {
  const jobs = routes.flatMap((route) => Array.from({ length: BODIES }, (_, index) => ({ route, index })));
  const failures: Outcome[] = [];
  const statuses = new Map<string, number>();
  let next = 0;
  const worker = async () => {
    for (let job = jobs[next++]; job; job = jobs[next++]) {
      const outcome = await send(job.route, job.index);
      const key = `${job.route.name.split(' ')[1]} ${outcome.status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      if (outcome.status === 500 || outcome.status === 'no answer') failures.push(outcome);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { failures, statuses };
};

const report = (failures: readonly Outcome[]): string[] =>
  failures.map(
    (f) =>
      `${f.route} seed=${SEED} index=${f.index} -> ${f.status} ${f.body}\n    sent: ${f.sent.slice(0, 240)}${f.sent.length > 240 ? ` ... (${f.sent.length} chars)` : ''}`,
  );

beforeAll(async () => {
  openai = await startFakeOpenAI();
  anthropic = await startFakeAnthropic();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'fatal', SVC_GATEWAY_RETRIES: '0' });
  for (const [adapter, model, origin, capabilities] of [
    ['openai', 'gpt-4o', openai.url, 'chat,streaming,tools,responses'],
    ['openai', 'embed-x', openai.url, 'embeddings'],
    ['anthropic', 'claude-x', anthropic.url, 'chat,streaming,tools,reasoning'],
  ] as const)
    await upsertFakeEndpoint(gw, { adapter, model, origin, capabilities });
  await connect(gw, { provider: 'openai', secret: 'sk-byok-openai' });
  await connect(gw, { provider: 'anthropic', secret: 'sk-byok-anthropic' });
  other = (await gw.svc([
    'bootstrap',
    '--workspace',
    'Fuzz Api',
    '--org',
    'Fuzz Api Org',
    '--project',
    'Fuzz Api Project',
  ])) as typeof other;
  await eventually(
    async () => {
      const [a, b] = await Promise.all(
        [ROUTES[0]!, ROUTES[1]!].map((r) =>
          fetch(`${gw.serve.httpUrl}${r.path()}`, {
            method: 'POST',
            headers: headersOf('bearer'),
            body: JSON.stringify(r.seed()),
          }),
        ),
      );
      return a!.status === 200 && b!.status === 200;
    },
    30_000,
    'gateway snapshots',
  );
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await openai?.close();
  await anthropic?.close();
});

describe(`edge fuzz: ${BODIES} mutated bodies per JSON route, ${CONCURRENCY} at a time`, () => {
  it('every model-edge seed body is served as it stands (the fuzz starts from valid bodies)', async () => {
    const answers = await Promise.all(
      ROUTES.filter((r) => r.credential === 'bearer' || r.credential === 'x-api-key').map(async (r) => {
        const res = await fetch(`${gw.serve.httpUrl}${r.path()}`, {
          method: r.method,
          headers: headersOf(r.credential),
          body: JSON.stringify(r.seed()),
        });
        return `${r.name} ${res.status} ${(await res.text()).slice(0, 200)}`;
      }),
    );
    expect(answers.filter((a) => !a.includes(' 200 '))).toEqual([]);
  });

  it(
    'no answer is a 500, none hangs, and the process is alive and healthy after',
    async () => {
      const { failures, statuses } = await fuzz(ROUTES);
      const histogram = [...statuses.entries()].sort().map(([k, n]) => `${k}: ${n}`);
      const sent = [...statuses.values()].reduce((a, b) => a + b, 0);
      console.log(`edge fuzz: ${sent} bodies over ${ROUTES.length} routes; statuses ${histogram.join(', ')}`);
      if (failures.length > 0) console.error(report(failures).join('\n'));
      expect(report(failures), `statuses:\n${histogram.join('\n')}`).toEqual([]);
      expect(gw.serve.child.exitCode, 'the svc serve process exited').toBeNull();
      const health = await fetch(`${gw.serve.httpUrl}/healthz`);
      expect(health.status).toBe(200);
      const still = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: headersOf('bearer'),
        body: JSON.stringify(chatSeed('gpt-4o')),
      });
      expect(still.status).toBe(200);
    },
    Math.max(170_000, BODIES * ROUTES.length * 15),
  );
});
