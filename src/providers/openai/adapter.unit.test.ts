import { describe, expect, it } from 'vitest';
import type { CanonicalRequest } from '../contract.js';
import { openAiChatBody } from './adapter.js';

const request = (raw: Record<string, unknown>): CanonicalRequest => ({
  operation: 'chat',
  route: '/v1/chat/completions',
  model: String(raw.model),
  messages: [],
  stream: raw.stream === true,
  includeUsage: false,
  raw,
});

describe('openAiChatBody', () => {
  const messages = [{ role: 'user', content: 'hi' }];

  it('relays a buffered body with only the model replaced', () => {
    const raw = { model: 'alias', messages, temperature: 0.2, vendor_field: { a: 1 } };
    expect(JSON.parse(openAiChatBody(request(raw), 'upstream-id'))).toEqual({ ...raw, model: 'upstream-id' });
  });

  it('asks a stream for usage when the caller did not (SPEC 4.1 rule 5), leaving the caller body as it was', () => {
    const raw = { model: 'alias', messages, stream: true };
    const sent = JSON.parse(openAiChatBody(request(raw), 'upstream-id'));
    expect(sent).toEqual({
      model: 'upstream-id',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(raw).toEqual({ model: 'alias', messages, stream: true });
  });

  it('keeps the caller stream_options members and turns include_usage on', () => {
    const options = { include_usage: false, continuous_usage_stats: true };
    const raw = { model: 'alias', messages, stream: true, stream_options: options };
    expect(JSON.parse(openAiChatBody(request(raw), 'm')).stream_options).toEqual({
      include_usage: true,
      continuous_usage_stats: true,
    });
    expect(options).toEqual({ include_usage: false, continuous_usage_stats: true });
  });

  it('replaces a stream_options that is not an object', () => {
    const raw = { model: 'alias', messages, stream: true, stream_options: 'yes' };
    expect(JSON.parse(openAiChatBody(request(raw), 'm')).stream_options).toEqual({ include_usage: true });
  });
});
