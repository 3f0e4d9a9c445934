import fc from 'fast-check';
import { formatUsd, parseUsd, perMillionToPerToken } from '../../lib/money.js';
import { rateRow } from './pricing.fixtures.js';
import { type CompiledRateCard, compileRateCard } from './rate-card.js';
import type { Meter, Modality, PricingUsage, RateRowInput } from './types.js';

/** fast-check generators for random rate cards and usages (property tests only). */

/** A per-million price with up to 6 decimals, stored per token as the importer would. */
const perTokenPrice = fc
  .tuple(fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 999_999 }))
  .map(([whole, micro]) =>
    formatUsd(perMillionToPerToken(parseUsd(`${whole}.${String(micro).padStart(6, '0')}`))),
  );

const perUnitPrice = fc
  .tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 9999 }))
  .map(([whole, frac]) => `${whole}.${String(frac).padStart(4, '0')}`);

/** One to three bands; sorted distinct edges, the edge shared or the next band one above it. */
const bands = fc
  .tuple(fc.uniqueArray(fc.integer({ min: 1, max: 300_000 }), { maxLength: 2 }), fc.boolean())
  .map(([edges, shared]) => {
    const sorted = [...edges].sort((a, b) => a - b);
    const out: { min: number; max: number | null }[] = [];
    let min = 0;
    for (const edge of sorted) {
      out.push({ min, max: edge });
      min = shared ? edge : edge + 1;
    }
    out.push({ min, max: null });
    return out;
  });

type Slot = readonly [Meter, Modality, { ttl?: string; tool?: string }];
const SLOTS: readonly Slot[] = [
  ['input_token', 'text', {}],
  ['input_token', 'audio', {}],
  ['input_token', 'image', {}],
  ['output_token', 'text', {}],
  ['output_token', 'audio', {}],
  ['output_token', 'image', {}],
  ['cache_read_token', 'text', {}],
  ['cache_write_token', 'text', { ttl: '5m' }],
  ['cache_write_token', 'text', { ttl: '1h' }],
  ['request', 'text', {}],
  ['image', 'image', {}],
  ['tool_call', 'text', { tool: 'web_search' }],
];
const TOKEN_SLOT_WEIGHT = [0.9, 0.4, 0.2, 0.9, 0.4, 0.2, 0.7, 0.5, 0.3, 0.15, 0.15, 0.3];

const slotRows = (slot: Slot, index: number) =>
  fc
    .record({
      present: fc.double({ min: 0, max: 1, noNaN: true }),
      bands,
      prices: fc.array(slot[0].endsWith('_token') ? perTokenPrice : perUnitPrice, {
        minLength: 3,
        maxLength: 3,
      }),
    })
    .map(({ present, bands: chosen, prices }): RateRowInput[] => {
      if (present > (TOKEN_SLOT_WEIGHT[index] as number)) return [];
      const [meter, modality, qualifier] = slot;
      const banded = meter.endsWith('_token') ? chosen : [{ min: 0, max: null }];
      return banded.map((band, i) =>
        rateRow(
          `${meter}-${modality}-${qualifier.ttl ?? qualifier.tool ?? ''}-${i}`,
          meter,
          modality,
          prices[i] as string,
          {
            ...band,
            ...qualifier,
          },
        ),
      );
    });

export const arbitraryCard: fc.Arbitrary<CompiledRateCard> = fc.tuple(...SLOTS.map(slotRows)).map((rowSets) =>
  compileRateCard({
    card_id: 'random',
    model: 'random',
    revision: 1,
    effective_from: '2025-01-01T00:00:00Z',
    effective_to: null,
    rows: rowSets.flat(),
  }),
);

/** A raw provider counter: mostly plausible integers, sometimes null, absent or garbage. */
const rawCounter = (upTo: number) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: upTo + 5 }) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<unknown>(12.5, -1, 2 ** 32, '7', Number.NaN, true, 1e21),
    },
  );

export const arbitraryUsage: fc.Arbitrary<PricingUsage> = fc
  .record({
    operation: fc.constantFrom('chat', 'responses', 'embeddings', 'image_generation', 'moderations' as const),
    prompt: fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 0, max: 400_000 })),
    completion: fc.integer({ min: 0, max: 50_000 }),
    readShare: fc.double({ min: 0, max: 1, noNaN: true }),
    writeShares: fc.tuple(
      fc.double({ min: 0, max: 0.5, noNaN: true }),
      fc.double({ min: 0, max: 0.5, noNaN: true }),
    ),
    imageShare: fc.double({ min: 0, max: 1.1, noNaN: true }),
    requested: fc.record({ input: fc.boolean(), output: fc.boolean() }),
    images: fc.integer({ min: 0, max: 4 }),
    requests: fc.integer({ min: 1, max: 3 }),
    toolCalls: fc.integer({ min: 0, max: 2 }),
    reasoning: fc.integer({ min: 0, max: 1000 }),
    tier: fc.constantFrom('standard', 'standard', 'standard', 'flex'),
  })
  .chain((u) => {
    const cacheRead = Math.floor(u.prompt * u.readShare * 0.6);
    const write5m = Math.floor(u.prompt * u.writeShares[0] * 0.4);
    const write1h = Math.floor(u.prompt * u.writeShares[1] * 0.4);
    return fc.record({ audioIn: rawCounter(u.prompt), audioOut: rawCounter(u.completion) }).map(
      ({ audioIn, audioOut }): PricingUsage => ({
        operation: u.operation,
        tier: u.tier,
        prompt_tokens: u.prompt,
        completion_tokens: u.completion,
        cache_read_tokens: cacheRead,
        cache_write_tokens: { '5m': write5m, '1h': write1h },
        reasoning_tokens: Math.min(u.reasoning, u.completion),
        audio_input_tokens: audioIn,
        audio_output_tokens: audioOut,
        audio_requested: u.requested,
        input_image_tokens: Math.floor(u.prompt * u.imageShare),
        output_image_tokens: u.operation === 'image_generation' ? u.completion : 0,
        request_count: u.requests,
        image_count: u.images,
        tool_calls: u.toolCalls === 0 ? {} : { web_search: u.toolCalls },
      }),
    );
  });
