import { ServiceError } from '../../../lib/errors.js';

/**
 * What the gateway itself reads in a primary-dialect body, checked at the edge so that a body it
 * cannot read is refused with a 400 before any upstream call, never after one (SPEC 4.1 rule 10,
 * 7.1): output limits, on which the escrow hold is sized (SPEC 8 "escrow hold"). Anything else
 * passes through for the upstream to judge (STYLE.md rule 3).
 */

const invalid = (param: string, message: string) =>
  new ServiceError('invalid_request_error', message, { param });

/**
 * An output limit (max_tokens, max_completion_tokens, max_output_tokens): absent or null, or a
 * positive safe integer. Anything else (1e308, -1, 0.5, 2^53 + 1, a string) cannot size a hold.
 */
export const outputLimit = (raw: Record<string, unknown>, field: string): number | undefined => {
  const value = raw[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw invalid(field, `${field} must be a positive integer (at most ${Number.MAX_SAFE_INTEGER})`);
  return value;
};

/** The larger of the output limits the body states: the most an upstream may be asked to write. */
export const largestOutputLimit = (
  raw: Record<string, unknown>,
  fields: readonly string[],
): number | undefined => {
  let largest: number | undefined;
  for (const field of fields) {
    const value = outputLimit(raw, field);
    if (value !== undefined && (largest === undefined || value > largest)) largest = value;
  }
  return largest;
};
