import type { AudioCounter, PricingResult } from '../../pricing/types.js';
import type { Billing, RequestCompleted, RequestUsage } from './request-completed.js';

/** The envelope fields the pricing engine decides, taken from its result without reshaping money. */
export const pricingFields = (
  result: PricingResult,
): Pick<RequestCompleted, 'cost_lines' | 'total_cost_usd' | 'billing'> => {
  const billing: Billing =
    result.billing_status === 'priced'
      ? { status: 'priced', rate_card_id: result.rate_card_id }
      : {
          status: 'failed',
          reason: result.billing_reason,
          detail: result.billing_detail,
          rate_card_id: result.rate_card_id,
        };
  return { cost_lines: result.lines, total_cost_usd: result.total, billing };
};

const tokensOf = (counter: AudioCounter): number | null =>
  counter.marker === 'reported' ? counter.tokens : null;

/** The per-request counters SPEC 2.5 stores whatever the billing outcome. */
export const attributionUsage = (
  result: PricingResult,
): Pick<
  RequestUsage,
  | 'reasoning_tokens'
  | 'audio_input_marker'
  | 'audio_input_tokens'
  | 'audio_output_marker'
  | 'audio_output_tokens'
  | 'has_audio'
> => {
  const a = result.attribution;
  return {
    reasoning_tokens: a.reasoning_tokens,
    audio_input_marker: a.audio_input.marker,
    audio_input_tokens: tokensOf(a.audio_input),
    audio_output_marker: a.audio_output.marker,
    audio_output_tokens: tokensOf(a.audio_output),
    has_audio: a.carried_audio,
  };
};
