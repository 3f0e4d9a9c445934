import type { CanonicalRequest, Usage } from './contract.js';
import type { Operation, PricingUsage } from './pricing/index.js';

const TIER_ALIASES: Record<string, string> = { default: 'standard', auto: 'standard', standard: 'standard' };

/** Whether the request asked for audio on each side (SPEC 4.1 rule 10). */
export const audioRequested = (request: CanonicalRequest) => {
  const input = request.messages.some(
    (m) =>
      Array.isArray(m.content) && m.content.some((p) => (p as { type?: unknown }).type === 'input_audio'),
  );
  const modalities = request.raw.modalities;
  const output =
    (Array.isArray(modalities) && modalities.includes('audio')) || request.raw.audio !== undefined;
  return { input, output };
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
    prompt_tokens: usage.prompt_tokens ?? 0,
    completion_tokens: usage.completion_tokens ?? 0,
    cache_read_tokens: prompt?.cached_tokens ?? 0,
    reasoning_tokens: completion?.reasoning_tokens,
    audio_input_tokens: prompt === undefined ? undefined : prompt.audio_tokens,
    audio_output_tokens: completion === undefined ? undefined : completion.audio_tokens,
    audio_requested: audioRequested(request),
  };
};

/** When a stream ended without a usage report: counts estimated from bytes (ceil(bytes / 4)). */
export const estimatedUsage = (requestBytes: number, completionText: string): Usage => {
  const prompt = Math.ceil(requestBytes / 4);
  const completion = Math.ceil(Buffer.byteLength(completionText) / 4);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
};
