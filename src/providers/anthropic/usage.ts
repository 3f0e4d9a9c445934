import type { FinishReason, Usage, UsageBreakdown } from '../contract.js';

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const count = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;

/**
 * A messages-style usage object in the primary dialect's terms: input_tokens excludes both cache
 * classes there, prompt_tokens includes them here (cached_tokens is the cache-read share,
 * cache_write_tokens the cache-creation share), so the alternate edge can split them back exactly.
 * Thinking tokens are attribution only (SPEC 4.1 rule 9).
 */
export const usageOf = (u: unknown): Usage | null => {
  if (!isObject(u)) return null;
  const input = count(u.input_tokens) ?? 0;
  const write = count(u.cache_creation_input_tokens) ?? 0;
  const read = count(u.cache_read_input_tokens) ?? 0;
  const output = count(u.output_tokens) ?? 0;
  const prompt = input + write + read;
  const thinking = isObject(u.output_tokens_details)
    ? count(u.output_tokens_details.thinking_tokens)
    : undefined;
  const breakdown: UsageBreakdown = {};
  const tiers = u.cache_creation;
  if (isObject(tiers))
    breakdown.cache_creation = {
      ephemeral_5m_input_tokens: count(tiers.ephemeral_5m_input_tokens) ?? 0,
      ephemeral_1h_input_tokens: count(tiers.ephemeral_1h_input_tokens) ?? 0,
    };
  const server = u.server_tool_use;
  if (isObject(server)) {
    const search = count(server.web_search_requests) ?? 0;
    const fetch = count(server.web_fetch_requests) ?? 0;
    // Only a server tool that ran is reported (SPEC 4.2 rule 4).
    if (search + fetch > 0)
      breakdown.server_tool_use = { web_search_requests: search, web_fetch_requests: fetch };
  }
  return {
    prompt_tokens: prompt,
    completion_tokens: output,
    total_tokens: prompt + output,
    prompt_tokens_details: { cached_tokens: read, cache_write_tokens: write },
    ...(thinking !== undefined ? { completion_tokens_details: { reasoning_tokens: thinking } } : {}),
    ...(Object.keys(breakdown).length > 0 ? { breakdown } : {}),
  };
};

/**
 * The terminal usage of a stream: message_start's counts overwritten by every counter message_delta
 * states (its counters are cumulative totals, and older upstreams state only output_tokens).
 */
export const mergeStreamUsage = (start: unknown, delta: unknown): Usage | null => {
  const base = isObject(start) ? start : {};
  const stated = isObject(delta)
    ? Object.fromEntries(Object.entries(delta).filter(([, v]) => v !== null && v !== undefined))
    : {};
  return usageOf({ ...base, ...stated });
};

export const serviceTierOf = (u: unknown): string | undefined =>
  isObject(u) && typeof u.service_tier === 'string' ? u.service_tier : undefined;

/** Messages-style stop reasons as canonical finish reasons; pause_turn and refusal are kept. */
export const finishReasonOf = (stop: unknown): FinishReason | null => {
  switch (stop) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'pause_turn':
    case 'refusal':
      return stop;
    case null:
    case undefined:
      return null;
    default:
      return 'stop';
  }
};
