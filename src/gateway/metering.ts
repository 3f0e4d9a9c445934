import type { Operation, PricingUsage } from '../pricing/index.js';
import type { CanonicalRequest, Usage } from '../providers/contract.js';

const TIER_ALIASES: Record<string, string> = { default: 'standard', auto: 'standard', standard: 'standard' };

/** Whether the request asked for audio on each side (SPEC 4.1 rule 10). */
export const audioRequested = (request: CanonicalRequest) => {
  const input = request.messages.some(
    (m) =>
      Array.isArray(m?.content) &&
      m.content.some((p) => (p as { type?: unknown } | null)?.type === 'input_audio'),
  );
  const modalities = request.raw.modalities;
  const output =
    (Array.isArray(modalities) && modalities.includes('audio')) || request.raw.audio !== undefined;
  return { input, output };
};

/**
 * Cache-write tokens by cache lifetime, for the cache_write_token meter: the messages-style tier
 * breakdown when reported, else the upstream's default lifetime of five minutes.
 */
const cacheWrites = (usage: Usage): { cache_write_tokens?: Record<string, number> } => {
  const tiers = usage.breakdown?.cache_creation;
  const total = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  if (tiers) {
    const writes: Record<string, number> = {};
    if (tiers.ephemeral_5m_input_tokens > 0) writes['5m'] = tiers.ephemeral_5m_input_tokens;
    if (tiers.ephemeral_1h_input_tokens > 0) writes['1h'] = tiers.ephemeral_1h_input_tokens;
    const stated = (writes['5m'] ?? 0) + (writes['1h'] ?? 0);
    // A breakdown that does not add up to the total leaves the rest at the default lifetime.
    if (total > stated) writes['5m'] = (writes['5m'] ?? 0) + total - stated;
    return Object.keys(writes).length > 0 ? { cache_write_tokens: writes } : {};
  }
  return total > 0 ? { cache_write_tokens: { '5m': total } } : {};
};

/** A provider-reported usage object as the pricing engine's input (counters passed raw: it judges them). */
export const pricingUsageOf = (
  operation: Operation,
  usage: Usage,
  request: CanonicalRequest,
  serviceTier: unknown,
): PricingUsage => {
  const prompt = usage.prompt_tokens_details;
  const completion = usage.completion_tokens_details;
  const tier = typeof serviceTier === 'string' ? (TIER_ALIASES[serviceTier] ?? serviceTier) : 'standard';
  return {
    operation,
    tier,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cache_read_tokens: prompt?.cached_tokens ?? 0,
    ...cacheWrites(usage),
    reasoning_tokens: completion?.reasoning_tokens,
    audio_input_tokens: prompt === undefined ? undefined : prompt.audio_tokens,
    audio_output_tokens: completion === undefined ? undefined : completion.audio_tokens,
    audio_requested: audioRequested(request),
    ...(usage.images
      ? {
          input_image_tokens: usage.images.input_image_tokens,
          output_image_tokens: usage.images.output_image_tokens,
          image_count: usage.images.image_count,
        }
      : {}),
  };
};

/** When a stream ended without a usage report: counts estimated from bytes (ceil(bytes / 4)). */
export const estimatedUsage = (requestBytes: number, completionText: string): Usage => {
  const prompt = Math.ceil(requestBytes / 4);
  const completion = Math.ceil(Buffer.byteLength(completionText) / 4);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
};

/**
 * A stream that ended without its terminal usage (cut, failed in band, or the client left): priced
 * from what was observed. Input-side counts the upstream stated when it opened its message are
 * exact; the output is the larger of what it stated then and an estimate of what was relayed.
 */
export const observedUsage = (opening: Usage | null, requestBytes: number, relayedText: string): Usage => {
  if (!opening) return estimatedUsage(requestBytes, relayedText);
  const completion = Math.max(opening.completion_tokens, Math.ceil(Buffer.byteLength(relayedText) / 4));
  return { ...opening, completion_tokens: completion, total_tokens: opening.prompt_tokens + completion };
};
