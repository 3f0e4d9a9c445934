import { formatUsd, type Usd, ZERO_USD } from '../lib/money.js';
import { type CompiledRate, type CompiledRateCard, findRate } from './rate-card.js';
import {
  isImageOperation,
  isZeroRated,
  type Meter,
  MODALITIES,
  type Modality,
  type Operation,
  STANDARD_TIER,
} from './types.js';

/**
 * Escrow hold for a request before dispatch (SPEC 8 "escrow hold"). The split between text and
 * audio is unknown until the provider answers, so each token meter reserves at the highest rate
 * any modality has on it: the hold can only be too high, never too low, for the tokens estimated.
 * Cache classes are not reserved separately; they are priced when the usage is known.
 */

export interface EscrowShape {
  operation: Operation;
  tier?: string;
  /** The prompt size estimate; it also chooses the context band. */
  prompt_tokens: number;
  max_output_tokens: number;
  /** Images requested (`n`), for per-image prices. */
  image_count?: number;
  request_count?: number;
}

export interface EscrowLine {
  meter: Meter;
  modality: Modality;
  quantity: number;
  unit_price: string;
  amount: string;
}

export type EscrowEstimate =
  | { status: 'reserved'; amount: Usd; amount_text: string; lines: EscrowLine[] }
  | { status: 'unpriced'; reason: 'no_rate_card' | 'missing_price' | 'invalid_usage'; detail: string };

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

const highestRate = (
  card: CompiledRateCard,
  tier: string,
  meter: Meter,
  promptSize: number,
): CompiledRate | undefined => {
  let highest: CompiledRate | undefined;
  for (const modality of MODALITIES) {
    const rate = findRate(card, tier, meter, modality, promptSize);
    if (rate !== undefined && (highest === undefined || rate.price > highest.price)) highest = rate;
  }
  return highest;
};

export const escrowEstimate = (card: CompiledRateCard | undefined, shape: EscrowShape): EscrowEstimate => {
  if (isZeroRated(shape.operation)) {
    return { status: 'reserved', amount: ZERO_USD, amount_text: '0', lines: [] };
  }
  if (card === undefined) {
    return {
      status: 'unpriced',
      reason: 'no_rate_card',
      detail: 'no rate card is in force at the request time',
    };
  }
  for (const field of ['prompt_tokens', 'max_output_tokens', 'image_count', 'request_count'] as const) {
    const value = shape[field];
    if (value !== undefined && !isCount(value)) {
      return {
        status: 'unpriced',
        reason: 'invalid_usage',
        detail: `${field} is not a non-negative integer`,
      };
    }
  }
  const tier = shape.tier ?? STANDARD_TIER;
  const prompt = shape.prompt_tokens;
  const lines: EscrowLine[] = [];
  let total = 0n;
  const reserve = (rate: CompiledRate, quantity: number): void => {
    if (quantity === 0) return;
    const amount = rate.price * BigInt(quantity);
    total += amount;
    const { meter, modality } = rate.row;
    lines.push({ meter, modality, quantity, unit_price: rate.priceText, amount: formatUsd(amount as Usd) });
  };
  const requestRate = findRate(card, tier, 'request', 'text', prompt);
  const imageRate = findRate(card, tier, 'image', 'text', prompt);
  const images = shape.image_count ?? (isImageOperation(shape.operation) ? 1 : 0);
  const requestPricedImages =
    isImageOperation(shape.operation) && (requestRate !== undefined || imageRate !== undefined);
  for (const [meter, quantity] of [
    ['input_token', prompt],
    ['output_token', shape.max_output_tokens],
  ] as const) {
    const rate = highestRate(card, tier, meter, prompt);
    if (rate !== undefined) reserve(rate, quantity);
    else if (quantity > 0 && !requestPricedImages) {
      return {
        status: 'unpriced',
        reason: 'missing_price',
        detail: `card ${card.card_id} has no ${tier} price for ${meter} at prompt size ${prompt}`,
      };
    }
  }
  if (imageRate !== undefined) reserve(imageRate, images);
  if (requestRate !== undefined) {
    const perImage = isImageOperation(shape.operation) && imageRate === undefined;
    reserve(requestRate, perImage ? images : (shape.request_count ?? 1));
  }
  return { status: 'reserved', amount: total as Usd, amount_text: formatUsd(total as Usd), lines };
};
