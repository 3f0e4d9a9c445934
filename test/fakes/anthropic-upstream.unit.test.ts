import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  anthropicError,
  type BlockSpec,
  count,
  cutStream,
  type FakeAnthropic,
  inBandError,
  message,
  startFakeAnthropic,
  status,
} from './anthropic-upstream.js';

// The fake must be indistinguishable from the real API to the real SDK: typed replies, the SDK's
// own stream accumulation, its error classes, and the headers it sends recorded.

/** finalMessage() as plain JSON, without the SDK's own parsed_output helper field. */
const plain = (m: object): unknown => {
  const { parsed_output: _sdk, ...rest } = JSON.parse(JSON.stringify(m)) as Record<string, unknown>;
  return rest;
};

let fake: FakeAnthropic;
let client: Anthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic({ requireKey: 'sk-ant-fake' });
  client = new Anthropic({ apiKey: 'sk-ant-fake', baseURL: fake.url, maxRetries: 0 });
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const rich: BlockSpec[] = [
  { type: 'thinking', thinking: 'Let me think about the weather.', signature: 'EqQBCkgIARABGAIiQL' },
  { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT' },
  { type: 'text', text: 'I will look it up.' },
  {
    type: 'tool_use',
    id: 'toolu_01A09q90qw90lq917835lq9',
    name: 'get_weather',
    input: { city: 'Paris', unit: 'c' },
  },
];

describe('fake Anthropic upstream, verified with @anthropic-ai/sdk', () => {
  it('buffered: a typed message, and the request recorded with key, version and beta headers', async () => {
    fake.enqueue(message({ usage: { input_tokens: 12, output_tokens: 3 } }));
    const reply = await client.messages.create(
      { model: 'claude-fake-model', max_tokens: 64, messages: [{ role: 'user', content: 'hello there' }] },
      { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31,foo-2025' } },
    );
    expect(reply).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-fake-model',
      content: [{ type: 'text', text: 'hello there' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 12, output_tokens: 3, cache_read_input_tokens: 0 },
    });
    const r = fake.requests.at(-1)!;
    expect(r.apiKey).toBe('sk-ant-fake');
    expect(r.version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(r.beta).toBe('prompt-caching-2024-07-31,foo-2025');
  });

  it("streamed: the SDK's finalMessage equals the buffered message of the same script", async () => {
    const spec = {
      id: 'msg_same',
      blocks: rich,
      usage: {
        input_tokens: 20,
        output_tokens: 40,
        cache_creation_input_tokens: 7,
        cache_read_input_tokens: 5,
        cache_creation: { ephemeral_5m_input_tokens: 7, ephemeral_1h_input_tokens: 0 },
        thinking_tokens: 11,
      },
    };
    fake.enqueue(message(spec), message(spec));
    const params = {
      model: 'claude-fake-model',
      max_tokens: 64,
      messages: [{ role: 'user' as const, content: 'weather?' }],
    };
    const buffered = await client.messages.create(params);
    const final = await client.messages.stream(params).finalMessage();
    expect(plain(final)).toEqual(buffered);
    expect(buffered.content.map((b) => b.type)).toEqual([
      'thinking',
      'redacted_thinking',
      'text',
      'tool_use',
    ]);
    expect(buffered.stop_reason).toBe('tool_use');
  });

  it('the stream follows the documented event sequence with signature and input_json deltas', async () => {
    fake.enqueue(message({ blocks: rich, deltaChunks: 2 }));
    const events: string[] = [];
    const stream = await client.messages.create({
      model: 'm',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    for await (const e of stream)
      events.push(e.type === 'content_block_delta' ? `delta:${e.delta.type}` : e.type);
    expect(events[0]).toBe('message_start');
    expect(events).toContain('delta:signature_delta');
    expect(events).toContain('delta:input_json_delta');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
  });

  it('server tools: server_tool_use and its result block, with server_tool_use usage', async () => {
    fake.enqueue(
      message({
        blocks: [
          {
            type: 'server_tool_use',
            id: 'srvtoolu_1',
            name: 'web_search',
            input: { query: 'paris weather' },
          },
          { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
          { type: 'text', text: 'Sunny.' },
        ],
        usage: { server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 } },
      }),
    );
    const reply = await client.messages
      .stream({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'x' }] })
      .finalMessage();
    expect(reply.content.map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
    expect(reply.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
  });

  it("errors in Anthropic's envelope raise the SDK's classes", async () => {
    fake.enqueue(status(529, 'Overloaded'), status(400, 'messages: bad'));
    const overloaded = await client.messages
      .create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    const bad = await client.messages
      .create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as Error).message).toContain('messages: bad');
  });

  it('refuses what the real API refuses: no max_tokens, no version header, a wrong key', async () => {
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'sk-ant-fake', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 4, messages: [] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    await expect(
      client.messages.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming),
    ).rejects.toThrow(/max_tokens/);
    const other = new Anthropic({ apiKey: 'wrong', baseURL: fake.url, maxRetries: 0 });
    await expect(
      other.messages.create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('a cut stream and an in-band error event both fail the SDK stream', async () => {
    fake.enqueue(cutStream(4), inBandError(3, anthropicError('overloaded_error', 'Overloaded mid-stream')));
    const params = {
      model: 'm',
      max_tokens: 8,
      messages: [{ role: 'user' as const, content: 'a b c d e f' }],
    };
    await expect(client.messages.stream(params).finalMessage()).rejects.toThrow();
    await expect(client.messages.stream(params).finalMessage()).rejects.toThrow(/Overloaded mid-stream/);
  });

  it('count_tokens answers input_tokens and refuses max_tokens', async () => {
    fake.enqueue(count(42));
    const counted = await client.messages.countTokens({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(counted.input_tokens).toBe(42);
    expect(fake.requests.at(-1)!.path).toBe('/v1/messages/count_tokens');
  });
});
