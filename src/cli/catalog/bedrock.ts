import { CATALOG_COLUMNS } from '../../commands/registry/catalog.js';
import { RATES_COLUMNS, UNBOUNDED } from '../../commands/registry/rates.js';
import { csvDataLine } from '../../lib/csv.js';
import { NO_BASE_URL } from '../../providers/endpoint.js';
import type { Listing, ModelSummary } from './bedrock-listing.js';
import { lookupPrices, type PriceEntry } from './bedrock-prices.js';

/**
 * The managed-runtime catalog collector (SPEC 4.7 "Catalog generation tools"): from the models a
 * credential sees in one region, a catalog and rates CSV pair the registry importer takes as is.
 * Pure: the listing and the price entries come in, rows and every reason come out.
 */

export interface CatalogRow {
  model: string;
  provider_model_id: string;
  display_name: string;
  family: string;
  description: string;
  streaming: boolean;
  enabled: boolean;
  context_length: number | null;
  max_output_tokens: number | null;
}

export interface PricedModel {
  model: string;
  input: string;
  output: string;
  effective_from: string;
}

export interface Collection {
  region: string;
  rows: CatalogRow[];
  /** Rows written with enabled=false, and why. */
  disabled: { model: string; model_id: string; reason: string }[];
  /** Listed models that got no row, and why. */
  skipped: { model_id: string; reason: string }[];
  priced: PricedModel[];
  /** Models left out of rates.csv (import them with --skip-unpriced, or price them by hand). */
  unpriced: { model: string; reason: string }[];
  profiles_listed: boolean;
  notes: string[];
}

export interface ModelFacts {
  context_length?: number;
  max_output_tokens?: number;
}

export interface CollectOptions {
  region: string;
  prices: readonly PriceEntry[] | null;
  contextLength: number | null;
  /** Per canonical model id or runtime model id. */
  modelFacts: Record<string, ModelFacts>;
  effectiveFrom: string | null;
  today: string;
}

/**
 * The canonical id: the vendor prefix and the version and revision suffix dropped
 * (`anthropic.claude-3-5-sonnet-20240620-v1:0` is `claude-3-5-sonnet-20240620`, the id the
 * messages-style provider uses); a context-window variant keeps its size (`…-v1:0:28k` is `…-28k`).
 */
export const canonicalModelId = (modelId: string): string => {
  const bare = modelId.replace(/^[a-z0-9-]+\./i, '');
  const m = /^(.*?)(?:-v\d+)?(?::\d+)?(?::(\d+k))?$/i.exec(bare);
  const base = m?.[1] || bare;
  return m?.[2] ? `${base}-${m[2]}` : base;
};

/** Where a routable model is invoked, or why it is not routable. */
const routeOf = (m: ModelSummary, listing: Listing): { id: string } | { reason: string } => {
  if (m.status !== 'ACTIVE') return { reason: `lifecycle status is ${m.status}, not ACTIVE` };
  if (m.inferenceTypesSupported.includes('ON_DEMAND')) return { id: m.modelId };
  const types = m.inferenceTypesSupported.join(', ') || 'none';
  if (listing.profiles === null)
    return {
      reason: `no on-demand invocation (inference types: ${types}) and inference profiles could not be listed`,
    };
  const routing = listing.profiles.filter((p) => p.status === 'ACTIVE' && p.modelIds.has(m.modelId));
  if (routing.length === 1) return { id: routing[0]!.id };
  if (routing.length === 0)
    return {
      reason: `no on-demand invocation (inference types: ${types}) and no inference profile routes to it`,
    };
  return {
    reason: `${routing.length} inference profiles route to it (${routing.map((p) => p.id).join(', ')}); pick one by hand`,
  };
};

export const deriveCollection = (listing: Listing, options: CollectOptions): Collection => {
  const c: Collection = {
    region: options.region,
    rows: [],
    disabled: [],
    skipped: [],
    priced: [],
    unpriced: [],
    profiles_listed: listing.profiles !== null,
    notes: listing.profilesError ? [`inference profiles not listed: ${listing.profilesError}`] : [],
  };
  const text = listing.models.filter((m) => {
    if (m.outputModalities.includes('TEXT')) return true;
    c.skipped.push({
      model_id: m.modelId,
      reason: `no text output (${m.outputModalities.join(', ') || 'none'})`,
    });
    return false;
  });
  const byCanonical = new Map<string, ModelSummary[]>();
  for (const m of text) {
    const id = canonicalModelId(m.modelId);
    byCanonical.set(id, [...(byCanonical.get(id) ?? []), m]);
  }
  for (const [model, group] of [...byCanonical].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (group.length > 1) {
      const ids = group.map((m) => m.modelId).join(', ');
      for (const m of group)
        c.skipped.push({ model_id: m.modelId, reason: `${ids} reduce to the one canonical id ${model}` });
      continue;
    }
    const m = group[0]!;
    const route = routeOf(m, listing);
    const facts = options.modelFacts[model] ?? options.modelFacts[m.modelId] ?? {};
    const routed = 'id' in route;
    c.rows.push({
      model,
      provider_model_id: routed ? route.id : m.modelId,
      display_name: m.modelName,
      family: m.providerName,
      description:
        routed && route.id !== m.modelId ? `${m.modelId} via inference profile ${route.id}` : m.modelId,
      streaming: m.responseStreamingSupported,
      enabled: routed,
      context_length: facts.context_length ?? options.contextLength,
      max_output_tokens: facts.max_output_tokens ?? null,
    });
    if (!routed) c.disabled.push({ model, model_id: m.modelId, reason: route.reason });
    priceModel(c, model, m, options);
  }
  const blank = c.rows.filter((r) => r.context_length === null).map((r) => r.model);
  if (blank.length > 0)
    c.notes.push(
      `context_length is not in the listing; blank for ${blank.join(', ')}: give --context-length or --model-facts`,
    );
  return c;
};

const priceModel = (c: Collection, model: string, m: ModelSummary, options: CollectOptions): void => {
  if (options.prices === null) {
    c.unpriced.push({ model, reason: 'no --prices file' });
    return;
  }
  const { prices, notes } = lookupPrices(options.prices, m, options.region);
  const input = prices.get('input_token');
  const output = prices.get('output_token');
  if (!input || !output) {
    const missing = [input ? null : 'input_token', output ? null : 'output_token']
      .filter(Boolean)
      .join(' and ');
    c.unpriced.push({ model, reason: [`no exact standard on-demand ${missing} price`, ...notes].join('; ') });
    return;
  }
  for (const note of notes) c.notes.push(`${model}: ${note}`);
  const dates = [input.effectiveDate, output.effectiveDate].filter((d): d is string => d !== null).sort();
  c.priced.push({
    model,
    input: input.perMillion,
    output: output.perMillion,
    effective_from: options.effectiveFrom ?? dates.at(-1) ?? options.today,
  });
};

export const collectionCsv = (c: Collection): { catalog: string; rates: string } => {
  let catalog = csvDataLine([...CATALOG_COLUMNS]);
  for (const r of c.rows) {
    const byColumn: Record<(typeof CATALOG_COLUMNS)[number], string | number | boolean | null> = {
      model: r.model,
      provider_model_id: r.provider_model_id,
      base_url: NO_BASE_URL,
      display_name: r.display_name,
      family: r.family,
      release_date: null,
      description: r.description,
      chat: true,
      embeddings: false,
      responses: false,
      images: false,
      moderations: false,
      // An assumption (SPEC 4.7): a model without tool use answers ValidationException, a 400.
      tools: true,
      streaming: r.streaming,
      reasoning: false,
      input_modalities: 'text',
      output_modalities: 'text',
      context_length: r.context_length,
      max_output_tokens: r.max_output_tokens,
      enabled: r.enabled,
    };
    catalog += csvDataLine(CATALOG_COLUMNS.map((k) => byColumn[k]));
  }
  let rates = csvDataLine([...RATES_COLUMNS]);
  for (const p of c.priced) {
    for (const [meter, price] of [
      ['input_token', p.input],
      ['output_token', p.output],
    ] as const)
      rates += csvDataLine([
        p.model,
        'standard',
        meter,
        'text',
        0,
        UNBOUNDED,
        null,
        null,
        price,
        p.effective_from,
        null,
      ]);
  }
  return { catalog, rates };
};
