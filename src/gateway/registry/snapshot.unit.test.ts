import { describe, expect, it } from 'vitest';
import type { RateCardInput } from '../../pricing/index.js';
import { buildRegistrySnapshot, type EndpointRecord } from './snapshot.js';

// Only enabled, priced, non-retired, non-quarantined endpoints are routable.

const endpoint = (lane: string, model: string, over: Partial<EndpointRecord> = {}): EndpointRecord => ({
  lane,
  adapter: 'openai',
  model,
  provider_model_id: `${model}-upstream`,
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
  managed_by: 'import',
  pricing_pinned: false,
  ...over,
});

const card = (
  model: string,
  revision: number,
  from: string,
  to: string | null,
  price: string,
): RateCardInput => ({
  card_id: `${model}#${revision}`,
  model,
  revision,
  effective_from: from,
  effective_to: to,
  rows: [
    {
      row_id: 'in',
      tier: 'standard',
      meter: 'input_token',
      modality: 'text',
      min_context: 0,
      max_context: null,
      cache_ttl: null,
      tool_type: null,
      unit_price: price,
    },
  ],
});

const JAN = Date.parse('2025-01-15T00:00:00Z');
const JUL = Date.parse('2025-07-15T00:00:00Z');

const snapshot = buildRegistrySnapshot({
  revision: 7,
  endpoints: [
    endpoint('openai', 'm'),
    endpoint('azure', 'm'),
    endpoint('openai', 'disabled', { enabled: false }),
    endpoint('openai', 'retired', { retired: true }),
    endpoint('openai', 'quarantined', { quarantined: true }),
    endpoint('openai', 'unpriced'),
    endpoint('openai', 'later'),
    endpoint('openai', 'org/model'),
  ],
  cards: new Map([
    [
      'openai/m',
      [
        card('m', 1, '2025-01-01T00:00:00Z', null, '0.000001'),
        card('m', 2, '2025-01-01T00:00:00Z', null, '0.0000009'),
      ],
    ],
    ['azure/m', [card('m', 1, '2025-01-01T00:00:00Z', null, '0.000002')]],
    ['openai/disabled', [card('disabled', 1, '2025-01-01T00:00:00Z', null, '1')]],
    ['openai/retired', [card('retired', 1, '2025-01-01T00:00:00Z', null, '1')]],
    ['openai/quarantined', [card('quarantined', 1, '2025-01-01T00:00:00Z', null, '1')]],
    ['openai/later', [card('later', 1, '2025-06-01T00:00:00Z', null, '1')]],
    ['openai/org/model', [card('org/model', 1, '2025-01-01T00:00:00Z', null, '1')]],
  ]),
});

describe('registry snapshot', () => {
  it('lists routable endpoints only', () => {
    expect(snapshot.routable(JAN).map((e) => `${e.lane}/${e.model}`)).toEqual([
      'azure/m',
      'openai/m',
      'openai/org/model',
    ]);
    expect(snapshot.routable(JUL).map((e) => `${e.lane}/${e.model}`)).toContain('openai/later');
    expect(snapshot.endpoints).toHaveLength(8);
  });

  it('resolves a canonical id to every lane serving it, and lane/model to one endpoint', () => {
    expect(snapshot.candidates('m', JAN).map((e) => e.lane)).toEqual(['azure', 'openai']);
    expect(snapshot.candidates('openai/m', JAN).map((e) => e.provider_model_id)).toEqual(['m-upstream']);
    expect(snapshot.candidates('openai/retired', JAN)).toEqual([]);
    expect(snapshot.candidates('nobody/m', JAN)).toEqual([]);
    expect(snapshot.candidates('nothing', JAN)).toEqual([]);
    // A canonical id containing '/' wins over reading it as lane/model.
    expect(snapshot.candidates('org/model', JAN).map((e) => e.lane)).toEqual(['openai']);
  });

  it('prices from the highest revision in force', () => {
    const m = snapshot.byLaneModel('openai', 'm', JAN)!;
    expect(snapshot.cardAt(m, JAN)?.card_id).toBe('m#2');
    expect(snapshot.cardAt(snapshot.find('openai', 'later')!, JAN)).toBeUndefined();
  });

  it('exposes capabilities and ceilings, and finds unroutable endpoints by name', () => {
    const m = snapshot.byModel('m', JAN)[0]!;
    expect(m.capabilities.tools).toBe(true);
    expect([m.context_length, m.max_output_tokens]).toEqual([1000, 100]);
    expect(snapshot.find('openai', 'quarantined')?.quarantined).toBe(true);
    expect(snapshot.isRoutable(snapshot.find('openai', 'unpriced')!, JAN)).toBe(false);
  });

  it('keeps serving when a stored card does not compile, naming it', () => {
    const broken = buildRegistrySnapshot({
      revision: 1,
      endpoints: [endpoint('openai', 'x')],
      cards: new Map([['openai/x', [card('x', 1, '2025-01-01T00:00:00Z', '2024-01-01T00:00:00Z', '1')]]]),
    });
    expect(broken.problems).toEqual(['x#1: effective_to must be after effective_from']);
    expect(broken.routable(JAN)).toEqual([]);
  });
});
