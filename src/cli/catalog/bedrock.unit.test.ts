import { describe, expect, it } from 'vitest';
import { readArtifact } from '../../commands/registry/artifact.js';
import { canonicalModelId, collectionCsv, deriveCollection } from './bedrock.js';
import type { Listing, ModelSummary } from './bedrock-listing.js';
import { lookupPrices, readPriceList } from './bedrock-prices.js';

const model = (modelId: string, over: Partial<ModelSummary> = {}): ModelSummary => ({
  modelId,
  modelName: modelId,
  providerName: 'Vendor',
  outputModalities: ['TEXT'],
  responseStreamingSupported: true,
  inferenceTypesSupported: ['ON_DEMAND'],
  status: 'ACTIVE',
  ...over,
});

const priceEntry = (name: string, type: string, unit: string, usd: Record<string, string>[], extra = {}) => ({
  product: { attributes: { regionCode: 'us-east-1', model: name, inferenceType: type, ...extra } },
  terms: {
    OnDemand: {
      T: {
        effectiveDate: '2024-06-01T00:00:00Z',
        priceDimensions: Object.fromEntries(usd.map((u, i) => [`D${i}`, { unit, pricePerUnit: u }])),
      },
    },
  },
});

describe('canonical ids', () => {
  it.each([
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 'claude-3-5-sonnet-20240620'],
    ['anthropic.claude-3-sonnet-20240229-v1:0:28k', 'claude-3-sonnet-20240229-28k'],
    ['anthropic.claude-v2', 'claude'],
    ['anthropic.claude-v2:1', 'claude'],
    ['amazon.nova-pro-v1:0', 'nova-pro'],
    ['mistral.mixtral-8x7b-instruct-v0:1', 'mixtral-8x7b-instruct'],
    ['openai.gpt-oss-120b-1:0', 'gpt-oss-120b-1'],
  ])('%s -> %s', (id, canonical) => {
    expect(canonicalModelId(id)).toBe(canonical);
  });
});

describe('prices', () => {
  const m = { modelId: 'vendor.m-v1:0', modelName: 'Model M' };

  it('a price per 1K tokens scales exactly into the per-million column; per 1M stays', () => {
    const entries = readPriceList(
      JSON.stringify({
        PriceList: [
          JSON.stringify(priceEntry('Model M', 'Input tokens', '1K tokens', [{ USD: '0.0000300000' }])),
          priceEntry('Model M', 'Output tokens', '1M tokens', [{ USD: '0.15' }]),
        ],
      }),
    );
    const { prices, notes } = lookupPrices(entries, m, 'us-east-1');
    expect(prices.get('input_token')).toEqual({ perMillion: '0.03', effectiveDate: '2024-06-01' });
    expect(prices.get('output_token')?.perMillion).toBe('0.15');
    expect(notes).toEqual([]);
  });

  it('near names, near meters, multi-amount meters, other features and regions are not used', () => {
    const entries = readPriceList(
      JSON.stringify([
        priceEntry('model m', 'Input tokens', '1K tokens', [{ USD: '1' }]),
        priceEntry('Model M', 'input tokens', '1K tokens', [{ USD: '1' }]),
        priceEntry('Model M', 'Output tokens', '1K tokens', [{ USD: '1' }, { USD: '2' }]),
        priceEntry('Model M', 'Input tokens', '1K tokens', [{ USD: '9' }], { feature: 'Batch Inference' }),
        priceEntry('Model M', 'Input tokens', '1K tokens', [{ USD: '9' }], { regionCode: 'eu-west-1' }),
        priceEntry('Model M', 'Input tokens', '1K tokens', [{ USD: '1', CNY: '7' }]),
      ]),
    );
    const { prices, notes } = lookupPrices(entries, m, 'us-east-1');
    expect(prices.size).toBe(0);
    expect(notes).toEqual([
      'near name "model m" (Input tokens) not used',
      'near meter name "input tokens" not used',
      'input_token: 2 amounts, not one USD amount; left blank',
      'output_token: 2 price dimensions; left blank',
    ]);
  });
});

describe('deriveCollection', () => {
  const listing: Listing = {
    models: [
      model('vendor.a-v1:0'),
      model('vendor.b-v1:0', { inferenceTypesSupported: ['INFERENCE_PROFILE'] }),
    ],
    profiles: [{ id: 'us.vendor.b-v1:0', status: 'ACTIVE', modelIds: new Set(['vendor.b-v1:0']) }],
    profilesError: null,
  };

  it('writes a pair the registry importer accepts as is', () => {
    const prices = readPriceList(
      JSON.stringify([
        priceEntry('vendor.a-v1:0', 'Input tokens', '1K tokens', [{ USD: '0.001' }]),
        priceEntry('vendor.a-v1:0', 'Output tokens', '1K tokens', [{ USD: '0.002' }]),
      ]),
    );
    const c = deriveCollection(listing, {
      region: 'us-east-1',
      prices,
      contextLength: 8192,
      modelFacts: { b: { context_length: 100_000, max_output_tokens: 4096 } },
      effectiveFrom: null,
      today: '2025-01-01',
    });
    expect(c.rows.map((r) => [r.model, r.provider_model_id, r.enabled, r.context_length])).toEqual([
      ['a', 'vendor.a-v1:0', true, 8192],
      ['b', 'us.vendor.b-v1:0', true, 100_000],
    ]);
    expect(c.unpriced).toEqual([
      { model: 'b', reason: 'no exact standard on-demand input_token and output_token price' },
    ]);
    const csv = collectionCsv(c);
    const artifact = readArtifact({
      catalogFile: 'catalog.csv',
      catalogText: csv.catalog,
      ratesFile: 'rates.csv',
      ratesText: csv.rates,
    });
    if (!artifact.ok) throw new Error(JSON.stringify(artifact.refusal));
    expect(artifact.value.cards).toHaveLength(1);
    expect(artifact.value.cards[0]).toMatchObject({ model: 'a', effective_from: '2024-06-01T00:00:00.000Z' });
  });
});
