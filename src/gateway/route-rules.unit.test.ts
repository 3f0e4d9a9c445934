import { describe, expect, it } from 'vitest';
import { parseChatBody } from '../edges/http/gateway/chat.js';
import type { CanonicalRequest } from '../providers/contract.js';
import type { Adapter, Capability, RegistryEndpoint } from '../providers/endpoint.js';

import { routeRules } from './route-rules.js';

// Route-level rules, decided once before any attempt: SPEC 4.1 rules 6 (n) and 8 (hosted tools),
// 4.2 rule 8 (thinking pins the route).

const endpoint = (
  lane: string,
  adapter: Adapter,
  model: string,
  extra: Capability[] = [],
): RegistryEndpoint => ({
  lane,
  adapter,
  model,
  provider_model_id: model,
  base_url: null,
  display_name: model,
  family: '',
  release_date: null,
  description: '',
  capabilities: {
    chat: true,
    embeddings: false,
    responses: false,
    images: false,
    moderations: false,
    tools: true,
    streaming: true,
    reasoning: extra.includes('reasoning'),
  },
  input_modalities: ['text'],
  output_modalities: ['text'],
  context_length: null,
  max_output_tokens: null,
  enabled: true,
  retired: false,
  quarantined: false,
  managed_by: 'operator',
  pricing_pinned: true,
  cards: [],
});

const claude = endpoint('anthropic', 'anthropic', 'claude-sonnet', ['reasoning']);
const claudeNoReasoning = endpoint('anthropic-eu', 'anthropic', 'claude-haiku');
const gpt = endpoint('openai', 'openai', 'gpt-4o');
const nova = endpoint('bedrock', 'bedrock', 'nova-pro');
const chat = (body: Record<string, unknown>) =>
  parseChatBody({ model: 'x', messages: [{ role: 'user', content: 'hi' }], ...body });

describe('n on a route with a messages-style candidate', () => {
  it.each([undefined, null, 1])('n=%s passes', (n) => {
    expect(routeRules(chat(n === undefined ? {} : { n }), [claude, gpt]).ok).toBe(true);
  });

  it.each([2, 2.0, 0, -1, 1.5, '1', 'two'])('n=%j is refused once, naming the other candidates', (n) => {
    const verdict = routeRules(chat({ n }), [claude, gpt, nova]);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error).toMatchObject({ code: 'invalid_request_error', status: 400, param: 'n' });
    expect(verdict.error.message).toContain('anthropic/claude-sonnet');
    expect(verdict.error.message).toContain('openai/gpt-4o, bedrock/nova-pro');
  });

  it('a route without a messages-style candidate is not this rule', () => {
    expect(routeRules(chat({ n: 2 }), [gpt]).ok).toBe(true);
  });
});

describe('paid hosted tools on a route with a reference candidate', () => {
  it.each([
    [{ tools: [{ type: 'web_search_preview' }] }],
    [{ tools: [{ type: 'web_search_20250305', name: 'web_search' }] }],
    [{ tools: [{ type: 'code_interpreter' }] }],
    [{ tools: [{ type: 'computer_use_preview' }] }],
    [{ tools: [{ type: 'image_generation' }] }],
    [{ web_search_options: {} }],
  ])('%j is refused with bad_request naming the other candidates', (body) => {
    const verdict = routeRules(chat(body), [gpt, claude]);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error).toMatchObject({ code: 'bad_request', status: 400 });
    expect(verdict.error.message).toContain('anthropic/claude-sonnet');
  });

  it('function tools, file_search and malformed tools are not hosted tools; no reference candidate, no refusal', () => {
    expect(routeRules(chat({ tools: [{ type: 'function', function: { name: 'f' } }] }), [gpt]).ok).toBe(true);
    expect(routeRules(chat({ tools: [{ type: 'file_search' }] }), [gpt]).ok).toBe(true);
    expect(routeRules(chat({ tools: 'nope' }), [gpt]).ok).toBe(true);
    expect(routeRules(chat({ tools: [{ type: 42 }] }), [gpt]).ok).toBe(true);
    expect(routeRules(chat({ web_search_options: {} }), [claude]).ok).toBe(true);
  });
});

describe('extended thinking pins the route', () => {
  const thinking = (req: CanonicalRequest): CanonicalRequest => ({
    ...req,
    preserved: { raw: {}, beta: null, thinking: true },
  });

  it('keeps only messages-style endpoints advertising reasoning', () => {
    const verdict = routeRules(thinking(chat({})), [gpt, claudeNoReasoning, claude]);
    expect(verdict).toEqual({ ok: true, candidates: [claude] });
  });

  it('none left is a 400 with no attempt', () => {
    const verdict = routeRules(thinking(chat({})), [gpt, claudeNoReasoning]);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.error).toMatchObject({ status: 400, code: 'no_compatible_candidate' });
  });

  it('without thinking the route is unchanged', () => {
    expect(routeRules(chat({}), [gpt, claude])).toEqual({ ok: true, candidates: [gpt, claude] });
  });
});
