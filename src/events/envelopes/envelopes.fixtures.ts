import { priceUsage } from '../../gateway/pricing/engine.js';
import { AUDIO_CARD } from '../../gateway/pricing/pricing.fixtures.js';
import { attributionUsage, pricingFields } from './from-pricing.js';
import type { RequestCompletedDraft } from './record.js';

/** A served, priced chat request as the gateway would describe it, priced by the real engine. */
export const sampleDraft = (overrides: Partial<RequestCompletedDraft> = {}): RequestCompletedDraft => {
  const priced = priceUsage(AUDIO_CARD, {
    operation: 'chat',
    prompt_tokens: 1200,
    completion_tokens: 300,
    cache_read_tokens: 200,
    reasoning_tokens: 40,
    audio_input_tokens: null,
    audio_output_tokens: null,
  });
  return {
    request_id: 'req_01',
    org_id: 'org_a',
    project_id: 'prj_a',
    workspace_id: 'wsp_a',
    api_key_id: 'key_a',
    route: '/v1/chat/completions',
    model_requested: 'gpt-x,claude-y',
    model_served: 'gpt-x',
    provider: 'openai',
    endpoint_id: 'ep_1',
    provider_model_id: 'gpt-x-2025-01-01',
    stream: true,
    status: 'success',
    http_status: 200,
    error: null,
    started_at: '2025-06-01T12:00:00.000Z',
    finished_at: '2025-06-01T12:00:01.250Z',
    latency_ms: 1250,
    ttfb_ms: 310.5,
    attempts: [
      {
        source: 'openai/ep_0',
        kind: 'UpstreamStatus',
        status_code: 503,
        message: 'upstream overloaded',
        provider: 'openai',
        endpoint_id: 'ep_0',
        latency_ms: 40,
        outcome: 'fell_back',
      },
      {
        source: 'openai/ep_1',
        kind: null,
        status_code: 200,
        message: null,
        provider: 'openai',
        endpoint_id: 'ep_1',
        latency_ms: 1200,
        outcome: 'success',
      },
    ],
    usage: {
      prompt_tokens: 1200,
      completion_tokens: 300,
      total_tokens: 1500,
      cache_read_tokens: 200,
      cache_write_tokens: 0,
      ...attributionUsage(priced),
      input_image_tokens: null,
      output_image_tokens: null,
    },
    usage_lines: [
      {
        meter: 'input_token',
        modality: 'text',
        tier: 'standard',
        cache_ttl: null,
        tool_type: null,
        quantity: 1000,
      },
      {
        meter: 'cache_read_token',
        modality: 'text',
        tier: 'standard',
        cache_ttl: null,
        tool_type: null,
        quantity: 200,
      },
      {
        meter: 'output_token',
        modality: 'text',
        tier: 'standard',
        cache_ttl: null,
        tool_type: null,
        quantity: 300,
      },
    ],
    ...pricingFields(priced),
    funding: 'byok',
    session_id: 'sess_1',
    end_user_id: null,
    trace: { full_tracing: true, source: 'header' },
    tool_summary: { declared: ['get_weather'], calls: [{ name: 'get_weather', count: 2 }] },
    ...overrides,
  };
};
