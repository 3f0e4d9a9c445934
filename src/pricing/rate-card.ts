import { formatUsd, tryParseUsd, type Usd } from '../lib/money.js';
import {
  METERS,
  type Meter,
  MODALITIES,
  type Modality,
  type RateCardInput,
  type RateProvenance,
  type RateRowInput,
} from './types.js';

/**
 * Rate cards compiled once per registry snapshot so that pricing a request parses nothing: prices
 * are scaled bigints with their canonical text beside them, bands are pre-sorted, and provenance
 * objects are built once and shared (frozen) by every line priced from the row.
 */

export interface CompiledRate {
  readonly row: Readonly<RateRowInput>;
  readonly price: Usd;
  readonly priceText: string;
  readonly provenance: RateProvenance;
}

/** Bands of one (meter, modality, qualifier), ascending by min_context. */
type Bands = readonly CompiledRate[];
/** Qualifier: cache_ttl on cache_write_token, tool_type on tool_call, '' otherwise. */
type TierRates = Readonly<Record<Meter, Partial<Record<Modality, ReadonlyMap<string, Bands>>>>>;

export interface CompiledRateCard {
  readonly card_id: string;
  readonly model: string;
  readonly revision: number;
  readonly effective_from: string;
  readonly effective_to: string | null;
  readonly fromMs: number;
  readonly toMs: number;
  readonly tiers: ReadonlyMap<string, TierRates>;
}

export class RateCardError extends Error {
  constructor(
    message: string,
    readonly cardId: string,
    readonly rowId: string | null,
    readonly field: string | null,
  ) {
    super(message);
    this.name = 'RateCardError';
  }
}

export const isTokenMeter = (meter: Meter): boolean =>
  meter === 'input_token' ||
  meter === 'output_token' ||
  meter === 'cache_read_token' ||
  meter === 'cache_write_token';

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * The first broken rule of one row, named by field, or null. The importer calls this to quote
 * file, line and column; `compileRateCard` calls it to refuse a card that skipped the importer.
 */
export const checkRateRow = (row: RateRowInput): { field: keyof RateRowInput; message: string } | null => {
  if (typeof row.tier !== 'string' || row.tier.length === 0)
    return { field: 'tier', message: 'tier is blank' };
  if (!(METERS as readonly string[]).includes(row.meter)) {
    return { field: 'meter', message: `unknown meter "${String(row.meter)}"` };
  }
  if (!(MODALITIES as readonly string[]).includes(row.modality)) {
    return { field: 'modality', message: `unknown modality "${String(row.modality)}"` };
  }
  if (!isCount(row.min_context)) {
    return { field: 'min_context', message: 'min_context must be a non-negative integer' };
  }
  if (row.max_context !== null && (!isCount(row.max_context) || row.max_context < row.min_context)) {
    return { field: 'max_context', message: 'max_context must be an integer not below min_context' };
  }
  if (row.cache_ttl !== null && (row.meter !== 'cache_write_token' || row.cache_ttl === '')) {
    return { field: 'cache_ttl', message: 'cache_ttl qualifies only cache_write_token rows' };
  }
  if ((row.meter === 'tool_call') !== (row.tool_type !== null && row.tool_type !== '')) {
    return { field: 'tool_type', message: 'tool_type is required on tool_call rows and only there' };
  }
  const price = tryParseUsd(row.unit_price);
  if (!price.ok) return { field: 'unit_price', message: price.error };
  if (price.value < 0n) return { field: 'unit_price', message: 'price must not be negative' };
  return null;
};

const parseInstant = (text: string, card: string, field: string): number => {
  const ms = Date.parse(text);
  if (!Number.isFinite(ms))
    throw new RateCardError(`${field} "${text}" is not an instant`, card, null, field);
  return ms;
};

const emptyTier = (): Record<Meter, Partial<Record<Modality, Map<string, CompiledRate[]>>>> => ({
  input_token: {},
  cache_read_token: {},
  cache_write_token: {},
  output_token: {},
  request: {},
  image: {},
  tool_call: {},
});

export const compileRateCard = (card: RateCardInput): CompiledRateCard => {
  const fromMs = parseInstant(card.effective_from, card.card_id, 'effective_from');
  const toMs =
    card.effective_to === null
      ? Number.POSITIVE_INFINITY
      : parseInstant(card.effective_to, card.card_id, 'effective_to');
  if (toMs <= fromMs) {
    throw new RateCardError('effective_to must be after effective_from', card.card_id, null, 'effective_to');
  }
  const tiers = new Map<string, ReturnType<typeof emptyTier>>();
  for (const row of card.rows) {
    const broken = checkRateRow(row);
    if (broken !== null) {
      throw new RateCardError(`row ${row.row_id}: ${broken.message}`, card.card_id, row.row_id, broken.field);
    }
    const price = tryParseUsd(row.unit_price);
    if (!price.ok) throw new RateCardError(price.error, card.card_id, row.row_id, 'unit_price');
    const provenance: RateProvenance = Object.freeze({
      source: 'rate_card',
      rate_card_id: card.card_id,
      rate_row_id: row.row_id,
      revision: card.revision,
      effective_from: card.effective_from,
      effective_to: card.effective_to,
    });
    const compiled: CompiledRate = Object.freeze({
      row: Object.freeze({ ...row }),
      price: price.value,
      priceText: formatUsd(price.value),
      provenance,
    });
    let tier = tiers.get(row.tier);
    if (tier === undefined) {
      tier = emptyTier();
      tiers.set(row.tier, tier);
    }
    // Per-request, per-image and per-call prices do not vary by modality: one slot each.
    const modality: Modality = isTokenMeter(row.meter) ? row.modality : 'text';
    const byQualifier = tier[row.meter][modality] ?? new Map<string, CompiledRate[]>();
    tier[row.meter][modality] = byQualifier;
    const qualifier = row.cache_ttl ?? row.tool_type ?? '';
    const bands = byQualifier.get(qualifier) ?? [];
    bands.push(compiled);
    byQualifier.set(qualifier, bands);
  }
  for (const tier of tiers.values()) {
    for (const byModality of Object.values(tier)) {
      for (const byQualifier of Object.values(byModality)) {
        for (const bands of byQualifier.values()) checkBands(card.card_id, bands);
      }
    }
  }
  return Object.freeze({
    card_id: card.card_id,
    model: card.model,
    revision: card.revision,
    effective_from: card.effective_from,
    effective_to: card.effective_to,
    fromMs,
    toMs,
    tiers,
  });
};

/** Bands may share an edge (the edge prices in the lower band) but must not overlap further. */
const checkBands = (cardId: string, bands: CompiledRate[]): void => {
  bands.sort((a, b) => a.row.min_context - b.row.min_context);
  for (let i = 1; i < bands.length; i++) {
    const lower = (bands[i - 1] as CompiledRate).row;
    const upper = (bands[i] as CompiledRate).row;
    if (lower.max_context === null || lower.max_context > upper.min_context) {
      throw new RateCardError(
        `rows ${lower.row_id} and ${upper.row_id} overlap on ${upper.meter}/${upper.modality}`,
        cardId,
        upper.row_id,
        'min_context',
      );
    }
  }
};

/**
 * The rate for a meter at a prompt size. The band is the first whose max_context (inclusive) is at
 * least the prompt; a prompt beyond every edge uses the last band, which is unbounded (SPEC 2.8).
 */
export const findRate = (
  card: CompiledRateCard,
  tier: string,
  meter: Meter,
  modality: Modality,
  promptSize: number,
  qualifier = '',
): CompiledRate | undefined => {
  const bands = card.tiers.get(tier)?.[meter][modality]?.get(qualifier);
  if (bands === undefined) return undefined;
  const last = bands.length - 1;
  for (let i = 0; i < last; i++) {
    const band = bands[i] as CompiledRate;
    if (promptSize <= (band.row.max_context as number)) return band;
  }
  return bands[last];
};

/** The card in force at `atMs` (effective_from inclusive, effective_to exclusive). */
export const selectRateCard = (
  cards: readonly CompiledRateCard[],
  atMs: number,
): CompiledRateCard | undefined => {
  let chosen: CompiledRateCard | undefined;
  for (const card of cards) {
    if (card.fromMs > atMs || atMs >= card.toMs) continue;
    if (chosen === undefined || card.revision > chosen.revision) chosen = card;
  }
  return chosen;
};
