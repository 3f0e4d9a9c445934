import { assertNever } from '../lib/assert.js';
import type { AudioCounter, BillingFailure } from './types.js';

/** Providers store these counters as UInt32; anything beyond cannot be a real token count. */
export const UINT32_MAX = 4_294_967_295;
const RAW_PREVIEW_LENGTH = 64;

/** A bounded rendering of what the provider sent, for the failure report and the stored marker. */
const preview = (raw: unknown): string => {
  let text: string;
  // JSON.stringify prints NaN as null and throws on bigint, so scalars other than strings use String.
  if (typeof raw === 'string') text = JSON.stringify(raw);
  else if (typeof raw !== 'object' || raw === null) text = String(raw);
  else {
    try {
      text = JSON.stringify(raw);
    } catch {
      text = String(raw);
    }
  }
  return text.length > RAW_PREVIEW_LENGTH ? `${text.slice(0, RAW_PREVIEW_LENGTH)}...` : text;
};

/**
 * SPEC 4.1 rule 10: JSON null (or an absent field) is not_reported; a value that is not an integer
 * within UInt32 is unreadable, whatever it is (a float, a string of digits, a negative, NaN).
 */
export const readCounter = (raw: unknown): AudioCounter => {
  if (raw === null || raw === undefined) return { marker: 'not_reported', tokens: null };
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= UINT32_MAX) {
    return { marker: 'reported', tokens: raw === 0 ? 0 : raw }; // folds -0 into 0
  }
  return { marker: 'unreadable', tokens: null, raw: preview(raw) };
};

/** The same reading for an attribution-only counter, where only the usable value matters. */
export const readOptionalCount = (raw: unknown): number | null => {
  const counter = readCounter(raw);
  return counter.marker === 'reported' ? counter.tokens : null;
};

/**
 * SPEC 4.1 rule 10, one half. Only called when the card has an audio rate for the half's meter:
 * without one nothing splits and nothing fails. Returns the billed audio quantity.
 */
export const audioShare = (
  side: 'input' | 'output',
  counter: AudioCounter,
  requested: boolean,
  sideTotal: number,
  cached: number,
  line: number,
): number | BillingFailure => {
  switch (counter.marker) {
    case 'reported': {
      if (counter.tokens > sideTotal) {
        const total = side === 'input' ? 'prompt_tokens' : 'completion_tokens';
        return {
          reason:
            side === 'input' ? 'audio_input_exceeds_prompt_tokens' : 'audio_output_exceeds_completion_tokens',
          detail: `reported ${side} audio tokens ${counter.tokens} exceed ${total} ${sideTotal}`,
        };
      }
      return Math.min(Math.max(counter.tokens - cached, 0), line);
    }
    case 'not_reported':
    case 'unreadable':
      if (!requested) return 0;
      return {
        reason: side === 'input' ? 'audio_input_breakdown_missing' : 'audio_output_breakdown_missing',
        detail: `audio ${side} was requested but the provider's ${side} audio counter is ${counter.marker}`,
      };
    default:
      return assertNever(counter);
  }
};
