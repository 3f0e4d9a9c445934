import { describe, expect, it } from 'vitest';
import type { RateCardInput } from '../pricing/index.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import { buildRegistrySnapshot, type EndpointRecord } from './registry/snapshot.js';
import { keepCheapestAuto, parseSelector, parseSelectorPart, selectCandidates } from './selector.js';

// SPEC 4.1 rule 1 and SPEC 5: the model selector, with `lane:connection/model` naming a tenant
// connection other than primary.

describe('parseSelectorPart', () => {
  const rows: [string, ReturnType<typeof parseSelectorPart>][] = [
    ['svc/auto', { kind: 'auto' }],
    ['gpt-4o', { kind: 'model', text: 'gpt-4o' }],
    ['openai/gpt-4o', { kind: 'model', text: 'openai/gpt-4o' }],
    // Model ids may hold ':' (managed-runtime ids, fine-tunes): only a ':' before the first '/' counts.
    [
      'anthropic.claude-3-haiku-20240307-v1:0',
      { kind: 'model', text: 'anthropic.claude-3-haiku-20240307-v1:0' },
    ],
    ['ft:gpt-4o:acme::abc', { kind: 'model', text: 'ft:gpt-4o:acme::abc' }],
    ['bedrock/anthropic.claude-v2:1', { kind: 'model', text: 'bedrock/anthropic.claude-v2:1' }],
    [
      'openai:team-b/gpt-4o',
      {
        kind: 'connection',
        text: 'openai:team-b/gpt-4o',
        lane: 'openai',
        connection: 'team-b',
        model: 'gpt-4o',
      },
    ],
    [
      'bedrock-west:Team B/anthropic.claude-v2:1',
      {
        kind: 'connection',
        text: 'bedrock-west:Team B/anthropic.claude-v2:1',
        lane: 'bedrock-west',
        connection: 'Team B',
        model: 'anthropic.claude-v2:1',
      },
    ],
    // A canonical id holding '/' keeps everything after the first one.
    [
      'openai:primary/org/model',
      {
        kind: 'connection',
        text: 'openai:primary/org/model',
        lane: 'openai',
        connection: 'primary',
        model: 'org/model',
      },
    ],
    [
      'openai:/gpt-4o',
      { kind: 'connection', text: 'openai:/gpt-4o', lane: 'openai', connection: '', model: 'gpt-4o' },
    ],
    // No lane before the ':' is still not a connection reading when the '/' comes first.
    ['/x:y', { kind: 'model', text: '/x:y' }],
  ];
  for (const [text, expected] of rows) {
    it(`${text}`, () => expect(parseSelectorPart(text)).toEqual(expected));
  }

  it('a fallback list is split on commas, trimmed, blanks dropped', () => {
    expect(parseSelector(' gpt-4o , openai:team-b/gpt-4o,, svc/auto ').map((p) => p.kind)).toEqual([
      'model',
      'connection',
      'auto',
    ]);
    expect(parseSelector(' , ')).toEqual([]);
  });
});

const endpoint = (lane: string, model: string): EndpointRecord => ({
  lane,
  adapter: 'openai',
  model,
  provider_model_id: `${model}@${lane}`,
  base_url: null,
  display_name: model,
  family: '',
  release_date: null,
  description: '',
  capabilities: {
    chat: true,
    embeddings: false,
    responses: false,
    images: false,
    moderations: false,
    tools: true,
    streaming: true,
    reasoning: false,
  },
  input_modalities: ['text'],
  output_modalities: ['text'],
  context_length: 1000,
  max_output_tokens: 100,
  enabled: true,
  retired: false,
  quarantined: false,
  managed_by: 'operator',
  pricing_pinned: true,
});

const priced = (lane: string, model: string): [string, RateCardInput[]] => [
  `${lane}/${model}`,
  [
    {
      card_id: `${lane}/${model}#1`,
      model,
      revision: 1,
      effective_from: '2025-01-01T00:00:00Z',
      effective_to: null,
      rows: (['input_token', 'output_token'] as const).map((meter) => ({
        row_id: meter,
        tier: 'standard',
        meter,
        modality: 'text',
        min_context: 0,
        max_context: null,
        cache_ttl: null,
        tool_type: null,
        unit_price: '0.000001',
      })),
    },
  ],
];

const AT = Date.parse('2025-06-01T00:00:00Z');
const snapshot = buildRegistrySnapshot({
  revision: 1,
  endpoints: [endpoint('openai', 'gpt-4o'), endpoint('openai-eu', 'gpt-4o'), endpoint('openai', 'a:b/c')],
  cards: new Map([priced('openai', 'gpt-4o'), priced('openai-eu', 'gpt-4o'), priced('openai', 'a:b/c')]),
});

/** The project has `team-b` on lane openai only. */
const hasConnection = (e: RegistryEndpoint, name: string) => e.lane === 'openai' && name === 'team-b';

const select = (selector: string) =>
  selectCandidates(snapshot, selector, {
    capability: 'chat',
    disallow: new Set(),
    operation: 'chat completions',
    hasConnection,
    atMs: AT,
  });

const picked = (selector: string) => {
  const r = select(selector);
  if (!r.ok) throw new Error(r.error.message);
  return r.candidates.map((e) => [e.lane, e.connection ?? null]);
};

const refusal = (selector: string) => {
  const r = select(selector);
  if (r.ok) throw new Error(`${selector} was accepted`);
  return { code: r.error.code, status: r.error.status, param: r.error.param, message: r.error.message };
};

describe('selectCandidates with named connections', () => {
  it('a plain model or lane/model names no connection: the default resolution', () => {
    expect(picked('gpt-4o')).toEqual([
      ['openai', null],
      ['openai-eu', null],
    ]);
    expect(picked('openai-eu/gpt-4o')).toEqual([['openai-eu', null]]);
  });

  it('lane:connection/model pins the lane and carries the connection', () => {
    expect(picked('openai:team-b/gpt-4o')).toEqual([['openai', 'team-b']]);
  });

  it('the same lane through a named connection and then primary are two fallback entries', () => {
    expect(picked('openai:team-b/gpt-4o, openai/gpt-4o, openai:team-b/gpt-4o')).toEqual([
      ['openai', 'team-b'],
      ['openai', null],
    ]);
  });

  it('a connection the project lacks for that lane is a 404 naming it', () => {
    expect(refusal('openai-eu:team-b/gpt-4o')).toMatchObject({
      code: 'unknown_connection',
      status: 404,
      param: 'model',
      message: expect.stringContaining('team-b'),
    });
    expect(refusal('gpt-4o,openai:nobody/gpt-4o')).toMatchObject({ code: 'unknown_connection' });
  });

  it('an empty connection name is a 400 showing the syntax', () => {
    expect(refusal('openai:/gpt-4o')).toMatchObject({
      code: 'invalid_request_error',
      status: 400,
      message: expect.stringContaining('lane:connection/model'),
    });
  });

  it('a lane that does not serve the model is an unknown model, as with lane/model', () => {
    expect(refusal('nowhere:team-b/gpt-4o')).toMatchObject({ code: 'unknown_model', status: 404 });
  });

  it('a canonical id that reads like lane:connection/model is the model', () => {
    expect(picked('a:b/c')).toEqual([['openai', null]]);
  });
});

describe('svc/auto (SPEC 4.1 rule 1) under policy', () => {
  const auto = (selector: string) => {
    const r = select(selector);
    if (!r.ok) throw new Error(r.error.message);
    return r;
  };
  const lanes = (xs: readonly RegistryEndpoint[]) => xs.map((e) => `${e.lane}/${e.model}`);

  it('brings every capable priced endpoint, cheapest first, and keeps the first one left', () => {
    const r = auto('svc/auto');
    expect(r.candidates).toHaveLength(3);
    expect(r.auto?.size).toBe(3);
    expect(keepCheapestAuto(r.candidates, r.auto)).toEqual([r.candidates[0]]);
    // A policy that removed the cheapest leaves the next one, not a denial.
    expect(keepCheapestAuto(r.candidates.slice(1), r.auto)).toEqual([r.candidates[1]]);
  });

  it('an endpoint also named explicitly stays beside the one svc/auto keeps', () => {
    const r = auto('svc/auto, openai-eu/gpt-4o');
    const kept = lanes(keepCheapestAuto(r.candidates, r.auto));
    expect(kept).toContain('openai-eu/gpt-4o');
    expect(kept).toHaveLength(2);
    const first = auto('openai-eu/gpt-4o, svc/auto');
    expect(lanes(keepCheapestAuto(first.candidates, first.auto))[0]).toBe('openai-eu/gpt-4o');
  });

  it('a selector without svc/auto is left as it is', () => {
    const r = auto('gpt-4o');
    expect(r.auto).toBeUndefined();
    expect(keepCheapestAuto(r.candidates, r.auto)).toBe(r.candidates);
  });
});
