import { type CompiledRateCard, compileRateCard } from './rate-card.js';
import type { Meter, Modality, RateRowInput } from './types.js';

/**
 * Hand-written rate cards for the golden table, the escrow tests and the benchmark. Prices are per
 * unit (per token for token meters) so every expected amount in the tests can be checked by hand.
 */

interface RowOptions {
  tier?: string;
  min?: number;
  max?: number | null;
  ttl?: string | null;
  tool?: string;
}

export const rateRow = (
  row_id: string,
  meter: Meter,
  modality: Modality,
  unit_price: string,
  options: RowOptions = {},
): RateRowInput => ({
  row_id,
  tier: options.tier ?? 'standard',
  meter,
  modality,
  min_context: options.min ?? 0,
  max_context: options.max ?? null,
  cache_ttl: options.ttl ?? null,
  tool_type: options.tool ?? null,
  unit_price,
});

const card = (
  card_id: string,
  rows: RateRowInput[],
  interval: { from?: string; to?: string | null; revision?: number } = {},
): CompiledRateCard =>
  compileRateCard({
    card_id,
    model: card_id,
    revision: interval.revision ?? 1,
    effective_from: interval.from ?? '2025-01-01T00:00:00Z',
    effective_to: interval.to ?? null,
    rows,
  });

/** Two context bands (edge 200,000), audio on both token meters, two cache TTLs, a flex tier. */
export const AUDIO_CARD = card('audio-card', [
  rateRow('in-b1', 'input_token', 'text', '0.000003', { max: 200_000 }),
  rateRow('in-b2', 'input_token', 'text', '0.000006', { min: 200_000, max: 1_000_000 }),
  rateRow('in-audio', 'input_token', 'audio', '0.00004'),
  rateRow('cr-b1', 'cache_read_token', 'text', '0.0000003', { max: 200_000 }),
  rateRow('cr-b2', 'cache_read_token', 'text', '0.0000006', { min: 200_001 }),
  rateRow('cw-5m', 'cache_write_token', 'text', '0.00000375', { ttl: '5m' }),
  rateRow('cw-1h', 'cache_write_token', 'text', '0.000006', { ttl: '1h' }),
  rateRow('out-b1', 'output_token', 'text', '0.000015', { max: 200_000 }),
  rateRow('out-b2', 'output_token', 'text', '0.0000225', { min: 200_001 }),
  rateRow('out-audio', 'output_token', 'audio', '0.00008'),
  rateRow('web-search', 'tool_call', 'text', '0.01', { tool: 'web_search' }),
  rateRow('flex-in', 'input_token', 'text', '0.0000015', { tier: 'flex' }),
  rateRow('flex-out', 'output_token', 'text', '0.0000075', { tier: 'flex' }),
]);

/** Text only: no audio rates, so audio never splits and never fails. */
export const TEXT_CARD = card('text-card', [
  rateRow('in', 'input_token', 'text', '0.00000015'),
  rateRow('cr', 'cache_read_token', 'text', '0.000000075'),
  rateRow('out', 'output_token', 'text', '0.0000006'),
]);

/** A per-request fee beside token prices, and no cache_read price. */
export const REQUEST_CARD = card('request-card', [
  rateRow('in', 'input_token', 'text', '0.000001'),
  rateRow('out', 'output_token', 'text', '0.000002'),
  rateRow('req', 'request', 'text', '0.0005'),
]);

export const INPUT_ONLY_CARD = card('input-only', [rateRow('in', 'input_token', 'text', '0.000001')]);

/** A cache-write row without TTL prices every TTL that has no row of its own. */
export const ANY_TTL_CARD = card('any-ttl', [
  rateRow('in', 'input_token', 'text', '0.000001'),
  rateRow('cw', 'cache_write_token', 'text', '0.000002'),
]);

/** Token-priced image model: text and image tokens split on input, image tokens on output. */
export const IMAGE_TOKEN_CARD = card('image-tokens', [
  rateRow('in-text', 'input_token', 'text', '0.000005'),
  rateRow('in-image', 'input_token', 'image', '0.00001'),
  rateRow('out-image', 'output_token', 'image', '0.00004'),
]);

/** Request-priced image model: the request rate is the estimated price of one image. */
export const REQUEST_PRICED_IMAGE_CARD = card('dall-e', [rateRow('req', 'request', 'text', '0.04')]);

/** Per-image meter plus a per-request fee and a token price. */
export const IMAGE_METER_CARD = card('image-meter', [
  rateRow('in', 'input_token', 'text', '0.000001'),
  rateRow('img', 'image', 'image', '0.02'),
  rateRow('req', 'request', 'text', '0.001'),
]);

/** Versioned cards of one model: a correction (revision 2) on the first interval, then a new price. */
export const VERSIONED_CARDS = [
  card('v1', [rateRow('in', 'input_token', 'text', '0.000001')], { to: '2025-07-01T00:00:00Z' }),
  card('v1-corrected', [rateRow('in', 'input_token', 'text', '0.0000011')], {
    to: '2025-07-01T00:00:00Z',
    revision: 2,
  }),
  card('v2', [rateRow('in', 'input_token', 'text', '0.000002')], { from: '2025-07-01T00:00:00Z' }),
];
