import { formatUsd, mulUsd, tryParseUsd } from '../../lib/money.js';

/**
 * Prices for the catalog collector (SPEC 4.7 "Catalog generation tools"). The pricing API is a
 * separate service, so the operator passes its answer as a file: GetProducts output (`PriceList`,
 * entries as JSON text or objects) or a bare array of entries, each
 * `{product: {attributes}, terms: {OnDemand: {<term>: {effectiveDate, priceDimensions}}}}`.
 *
 * Only exact matches count: the entry's `regionCode` is the collected region (when stated), its
 * `model` equals the listing's model name (or `modelId` the model id), its `inferenceType` is
 * exactly `Input tokens` or `Output tokens`, its `feature` (when stated) is `On-demand Inference`,
 * and the term has one price dimension with one USD amount per `1K tokens` or `1M tokens`.
 * Near names and multi-amount meters are left blank and reported, never guessed.
 */

export type TokenMeter = 'input_token' | 'output_token';

export interface MeterPrice {
  /** USD per million tokens, exact. */
  perMillion: string;
  effectiveDate: string | null;
}

export interface PriceLookup {
  prices: Map<TokenMeter, MeterPrice>;
  notes: string[];
}

const METERS: Record<string, TokenMeter> = { 'Input tokens': 'input_token', 'Output tokens': 'output_token' };
const STANDARD_FEATURE = 'On-demand Inference';
const PER_MILLION: Record<string, bigint> = { '1K tokens': 1000n, '1M tokens': 1n };

export interface PriceEntry {
  attributes: Record<string, string>;
  terms: Record<string, unknown>[];
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Comparison key for "near" names: case, spaces and punctuation ignored. */
const loose = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');

export class PriceFileError extends Error {}

/** Parses the price file text; entries that are not objects are refused with their position. */
export const readPriceList = (text: string): PriceEntry[] => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new PriceFileError('the price file is not JSON');
  }
  const list = Array.isArray(parsed) ? parsed : isObject(parsed) ? parsed.PriceList : undefined;
  if (!Array.isArray(list))
    throw new PriceFileError('the price file must be an array or have a PriceList array');
  return list.map((item, i) => {
    let entry: unknown = item;
    if (typeof item === 'string') {
      try {
        entry = JSON.parse(item);
      } catch {
        throw new PriceFileError(`PriceList[${i}] is a string that is not JSON`);
      }
    }
    if (!isObject(entry) || !isObject(entry.product))
      throw new PriceFileError(`PriceList[${i}] has no product object`);
    const attributes = isObject(entry.product.attributes) ? entry.product.attributes : {};
    const onDemand = isObject(entry.terms) && isObject(entry.terms.OnDemand) ? entry.terms.OnDemand : {};
    return {
      attributes: Object.fromEntries(
        Object.entries(attributes).filter((kv): kv is [string, string] => typeof kv[1] === 'string'),
      ),
      terms: Object.values(onDemand).filter(isObject),
    };
  });
};

/** One term's single amount, scaled to per million tokens; a reason when it is not one amount. */
const amountOf = (terms: Record<string, unknown>[]): MeterPrice | string => {
  if (terms.length !== 1) return `${terms.length} on-demand terms`;
  const term = terms[0]!;
  const dimensions = isObject(term.priceDimensions)
    ? Object.values(term.priceDimensions).filter(isObject)
    : [];
  if (dimensions.length !== 1) return `${dimensions.length} price dimensions`;
  const dim = dimensions[0]!;
  const amounts = isObject(dim.pricePerUnit) ? Object.entries(dim.pricePerUnit) : [];
  if (amounts.length !== 1 || amounts[0]![0] !== 'USD')
    return `${amounts.length} amounts, not one USD amount`;
  const scale = typeof dim.unit === 'string' ? PER_MILLION[dim.unit] : undefined;
  if (scale === undefined) return `unit ${String(dim.unit)} is not 1K tokens or 1M tokens`;
  const usd = tryParseUsd(amounts[0]![1]);
  if (!usd.ok || usd.value < 0n) return `price ${String(amounts[0]![1])} is not a decimal amount`;
  const date = typeof term.effectiveDate === 'string' ? term.effectiveDate.slice(0, 10) : null;
  return {
    perMillion: formatUsd(mulUsd(usd.value, scale)),
    effectiveDate: date !== null && /^\d{4}-\d{2}-\d{2}$/.test(date) ? date : null,
  };
};

/** The exact standard on-demand token prices of one listed model, and why any is missing. */
export const lookupPrices = (
  entries: readonly PriceEntry[],
  model: { modelId: string; modelName: string },
  region: string,
): PriceLookup => {
  const prices = new Map<TokenMeter, MeterPrice>();
  const notes: string[] = [];
  const found = new Map<TokenMeter, PriceEntry[]>();
  for (const e of entries) {
    const a = e.attributes;
    if (a.regionCode !== undefined && a.regionCode !== region) continue;
    const exactModel = a.model === model.modelName || a.modelId === model.modelId;
    const nearModel =
      !exactModel &&
      [a.model, a.modelId].some(
        (n) => n !== undefined && (loose(n) === loose(model.modelName) || loose(n) === loose(model.modelId)),
      );
    if (nearModel) {
      notes.push(`near name "${a.model ?? a.modelId}" (${a.inferenceType ?? 'no meter'}) not used`);
      continue;
    }
    if (!exactModel) continue;
    if (a.feature !== undefined && a.feature !== STANDARD_FEATURE) continue;
    const meter = a.inferenceType === undefined ? undefined : METERS[a.inferenceType];
    if (meter === undefined) {
      const type = a.inferenceType ?? '';
      if (loose(type) === 'inputtokens' || loose(type) === 'outputtokens')
        notes.push(`near meter name "${type}" not used`);
      continue;
    }
    found.set(meter, [...(found.get(meter) ?? []), e]);
  }
  for (const meter of ['input_token', 'output_token'] as const) {
    const matches = found.get(meter) ?? [];
    if (matches.length === 0) continue;
    if (matches.length > 1) {
      notes.push(`${meter}: ${matches.length} entries match; left blank`);
      continue;
    }
    const amount = amountOf(matches[0]!.terms);
    if (typeof amount === 'string') notes.push(`${meter}: ${amount}; left blank`);
    else prices.set(meter, amount);
  }
  return { prices, notes };
};
