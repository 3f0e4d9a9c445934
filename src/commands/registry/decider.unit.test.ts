import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../lib/errors.js';
import type { EndpointFacts } from '../../providers/endpoint.js';
import { fold } from '../decider.js';
import { readArtifact } from './artifact.js';
import { formatRefusal } from './csv.js';
import { registryDecider } from './decider.js';
import type { Artifact, RegistryCommand, RegistryEvent, SharedModelFact } from './events.js';

// Idempotent re-import writes zero events; retirement, approval flags and the
// shared-capability refusal each have their own test. Given events, when a command, then events.

const fixture = (name: string) =>
  readFileSync(new URL(`../../../test/fixtures/registry/${name}`, import.meta.url), 'utf8');

const artifact = (name: string): Artifact => {
  const r = readArtifact({
    catalogFile: `${name}.catalog.csv`,
    catalogText: fixture(`${name}.catalog.csv`),
    ratesFile: `${name}.rates.csv`,
    ratesText: fixture(`${name}.rates.csv`),
  });
  if (!r.ok) throw new Error(formatRefusal(r.refusal));
  return r.value;
};

const V1 = artifact('openai');
const V2 = artifact('openai-v2');

const importing = (
  a: Artifact,
  over: { skip?: boolean; others?: SharedModelFact[] } = {},
): RegistryCommand => ({
  type: 'ImportArtifact',
  data: {
    lane: 'openai',
    adapter: 'openai',
    artifact: a,
    skip_unpriced: over.skip ?? false,
    other_lanes: over.others ?? [],
  },
});

const OPERATOR_ENDPOINT: EndpointFacts = {
  ...V1.endpoints.find((e) => e.model === 'gpt-4o-mini')!,
  model: 'house-model',
  provider_model_id: 'house-model-v1',
};

const upserting = (endpoint: EndpointFacts, input = '0.000001', output = '0.000002'): RegistryCommand => ({
  type: 'UpsertEndpoint',
  data: {
    lane: 'openai',
    adapter: 'openai',
    endpoint,
    input_price_per_token: input,
    output_price_per_token: output,
    effective_from: '2026-01-01T00:00:00.000Z',
    other_lanes: [],
  },
});

/** Folds the given history, decides the command, and returns only the new events. */
const given = (...history: RegistryCommand[]) => {
  const events: RegistryEvent[] = [];
  for (const cmd of history) events.push(...registryDecider.decide(cmd, fold(registryDecider, events)));
  return {
    when: (cmd: RegistryCommand) => registryDecider.decide(cmd, fold(registryDecider, events)),
  };
};

const types = (events: RegistryEvent[]) => events.map((e) => e.type);
const summary = (events: RegistryEvent[]) => events.find((e) => e.type === 'ArtifactImported')?.data;

const refusal = (fn: () => unknown): ServiceError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a ServiceError');
};

describe('ImportArtifact', () => {
  it('given an empty lane, activates every endpoint and card, none flagged', () => {
    const events = given().when(importing(V1));
    expect(types(events).filter((t) => t === 'EndpointUpserted')).toHaveLength(5);
    const cards = events.flatMap((e) => (e.type === 'RateCardActivated' ? [e.data] : []));
    expect(cards.map((c) => [c.model, c.revision, c.needs_approval, c.card_id])).toEqual([
      ['gpt-4o', 1, false, 'openai/gpt-4o#1'],
      ['gpt-4o-mini', 1, false, 'openai/gpt-4o-mini#1'],
      ['o3', 1, false, 'openai/o3#1'],
      ['text-embedding-3-small', 1, false, 'openai/text-embedding-3-small#1'],
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'ArtifactImported',
      data: { digest: V1.digest, endpoints_added: 5, cards_activated: 4, cards_flagged: 0, dropped: [] },
    });
    const upserted = events.find((e) => e.type === 'EndpointUpserted')!;
    expect(upserted.data).toMatchObject({ managed_by: 'import', pricing_pinned: false });
  });

  it('given the artifact was applied, re-applying it appends zero events', () => {
    expect(given(importing(V1)).when(importing(V1))).toEqual([]);
    expect(given(importing(V1), importing(V2)).when(importing(V2))).toEqual([]);
  });

  it('given v1, a re-import without o3 retires its endpoint', () => {
    const events = given(importing(V1)).when(importing(V2));
    expect(events.filter((e) => e.type === 'EndpointRetired')).toEqual([
      { type: 'EndpointRetired', data: { lane: 'openai', model: 'o3', reason: 'absent_from_import' } },
    ]);
    expect(summary(events)).toMatchObject({
      endpoints_retired: 1,
      endpoints_unchanged: 4,
      endpoints_added: 0,
    });
  });

  it('given a retired model, a later import with it adds it back and reuses its unchanged card', () => {
    const events = given(importing(V1), importing(V2)).when(importing(V1));
    expect(summary(events)).toMatchObject({ endpoints_added: 1, endpoints_retired: 0 });
    expect(events.filter((e) => e.type === 'RateCardActivated').map((e) => e.data.model)).toEqual(['gpt-4o']);
  });

  it('given v1, corrected prices activate a new revision on the same interval, flagged for approval', () => {
    const events = given(importing(V1)).when(importing(V2));
    const cards = events.flatMap((e) => (e.type === 'RateCardActivated' ? [e.data] : []));
    expect(cards).toHaveLength(1);
    const original = V1.cards.find((c) => c.model === 'gpt-4o')!;
    expect(cards[0]).toMatchObject({
      model: 'gpt-4o',
      revision: 2,
      card_id: 'openai/gpt-4o#2',
      effective_from: original.effective_from,
      effective_to: original.effective_to,
      needs_approval: true,
    });
    expect(cards[0]!.rows.find((r) => r.meter === 'output_token')?.unit_price).toBe('0.0000095');
    expect(summary(events)).toMatchObject({ cards_activated: 1, cards_flagged: 1 });
  });

  it('given operator-managed endpoints, the import neither retires nor overwrites them', () => {
    const mini = V1.endpoints.find((e) => e.model === 'gpt-4o-mini')!;
    const history = given(
      importing(V1),
      upserting(OPERATOR_ENDPOINT),
      upserting(mini, '0.0000002', '0.0000007'),
    );
    const events = history.when(importing(V2));
    expect(
      events.some((e) => 'model' in e.data && ['house-model', 'gpt-4o-mini'].includes(e.data.model)),
    ).toBe(false);
    expect(summary(events)).toMatchObject({ skipped_operator: ['gpt-4o-mini'], endpoints_retired: 1 });
  });

  it('refuses to change reasoning or modalities of a model another lane serves', () => {
    const gpt4o = V1.endpoints.find((e) => e.model === 'gpt-4o')!;
    const azure = (over: Partial<SharedModelFact>): SharedModelFact => ({
      lane: 'azure',
      model: 'gpt-4o',
      reasoning: gpt4o.capabilities.reasoning,
      input_modalities: gpt4o.input_modalities,
      output_modalities: gpt4o.output_modalities,
      ...over,
    });
    const textOnly = refusal(() =>
      given().when(importing(V1, { others: [azure({ input_modalities: ['text'] })] })),
    );
    expect(textOnly.code).toBe('shared_model_capability_change');
    expect(textOnly.param).toBe('input_modalities');
    expect(textOnly.message).toContain(
      'model gpt-4o: input_modalities text|image differs from text on lane azure',
    );
    const reasoning = refusal(() => given().when(importing(V1, { others: [azure({ reasoning: true })] })));
    expect(reasoning.code).toBe('shared_model_capability_change');
    expect(reasoning.param).toBe('reasoning');
    // The same facts elsewhere, or this lane's own facts, are no obstacle.
    expect(
      given().when(importing(V1, { others: [azure({}), azure({ lane: 'openai', reasoning: true })] })),
    ).not.toEqual([]);
  });

  it('with skip-unpriced, imports only models priced on input and output tokens and names the dropped', () => {
    const events = given().when(importing(V1, { skip: true }));
    expect(summary(events)).toMatchObject({
      dropped: ['gpt-3.5-turbo', 'text-embedding-3-small'],
      endpoints_added: 3,
    });
    const models = events.flatMap((e) => (e.type === 'EndpointUpserted' ? [e.data.model] : []));
    expect(models).toEqual(['gpt-4o', 'gpt-4o-mini', 'o3']);
  });

  it('refuses a lane served by another adapter', () => {
    const err = refusal(() =>
      given(importing(V1)).when({
        ...importing(V1),
        data: { ...importing(V1).data, adapter: 'azure' },
      } as RegistryCommand),
    );
    expect(err.message).toBe('lane openai is served by the openai adapter, not azure');
  });
});

describe('ApproveRateCards', () => {
  const approving: RegistryCommand = { type: 'ApproveRateCards', data: { lane: 'openai', model: 'gpt-4o' } };

  it('given a flagged card, clears its flag once', () => {
    expect(given(importing(V1), importing(V2)).when(approving)).toEqual([
      { type: 'RateCardApproved', data: { lane: 'openai', model: 'gpt-4o', card_id: 'openai/gpt-4o#2' } },
    ]);
    expect(given(importing(V1), importing(V2), approving).when(approving)).toEqual([]);
  });

  it('refuses a model the lane does not have', () => {
    const err = refusal(() =>
      given(importing(V1)).when({ ...approving, data: { lane: 'openai', model: 'nope' } }),
    );
    expect(err.code).toBe('not_found');
  });
});

describe('UpsertEndpoint', () => {
  it('writes an operator-managed endpoint with a pinned per-token card; repeating it is a no-op', () => {
    const events = given().when(upserting(OPERATOR_ENDPOINT, '0.0000010', '0.000002'));
    expect(events[0]).toMatchObject({
      type: 'EndpointUpserted',
      data: { model: 'house-model', managed_by: 'operator', pricing_pinned: true },
    });
    expect(events[1]).toMatchObject({
      type: 'RateCardActivated',
      data: { revision: 1, needs_approval: false, source: 'operator', effective_to: null },
    });
    if (events[1]?.type !== 'RateCardActivated') throw new Error('card');
    expect(events[1].data.rows.map((r) => [r.meter, r.unit_price, r.max_context])).toEqual([
      ['input_token', '0.000001', null],
      ['output_token', '0.000002', null],
    ]);
    expect(given(upserting(OPERATOR_ENDPOINT)).when(upserting(OPERATOR_ENDPOINT))).toEqual([]);
  });

  it('a new price activates the next revision without an approval flag', () => {
    const events = given(upserting(OPERATOR_ENDPOINT)).when(upserting(OPERATOR_ENDPOINT, '0.000003'));
    expect(events).toEqual([
      expect.objectContaining({
        type: 'RateCardActivated',
        data: expect.objectContaining({ revision: 2, needs_approval: false }),
      }),
    ]);
  });

  it('refuses a price that is not an exact decimal', () => {
    expect(refusal(() => given().when(upserting(OPERATOR_ENDPOINT, '1e-6'))).param).toBe(
      'input_price_per_token',
    );
  });
});
