import OpenAI from 'openai';
import { Pool } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  cutStream,
  type FakeOpenAI,
  inBandError,
  onPath,
  oversized,
  rateLimited,
  rawBody,
  reply,
  reset,
  stall,
  stallMidStream,
  startFakeOpenAI,
  status,
  toolCalls,
  withKey,
} from './openai-upstream.js';

// The fake is only worth something if the real SDK cannot tell it from api.openai.com: every case
// here goes through `openai` v6 over a real socket, or reads the raw bytes the SDK would parse.

let fake: FakeOpenAI;
let client: OpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  client = new OpenAI({ apiKey: 'sk-test-key-0001', baseURL: fake.baseUrl, maxRetries: 0 });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => fake.reset());

const user = (content: string) => [{ role: 'user' as const, content }];

const post = (path: string, body: unknown, key = 'sk-test-key-0001') =>
  fetch(`${fake.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const drain = async <T>(stream: AsyncIterable<T>): Promise<{ chunks: T[]; error: unknown }> => {
  const chunks: T[] = [];
  try {
    for await (const chunk of stream) chunks.push(chunk);
    return { chunks, error: undefined };
  } catch (error) {
    return { chunks, error };
  }
};

describe('chat completions', () => {
  it('answers buffered with the shape, usage and headers of the real API', async () => {
    const messages = user('Say hello to the gateway');
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages })
      .withResponse();
    expect(data).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-4o-mini',
      service_tier: 'default',
      choices: [
        {
          index: 0,
          finish_reason: 'stop',
          message: { role: 'assistant', content: 'Say hello to the gateway', refusal: null },
        },
      ],
    });
    expect(data.id).toMatch(/^chatcmpl-[A-Za-z0-9]{29}$/);
    expect(data.system_fingerprint).toMatch(/^fp_/);
    expect(data.created).toBeCloseTo(Date.now() / 1000, -1);
    const promptTokens = Math.ceil(Buffer.byteLength(JSON.stringify(messages)) / 4);
    expect(data.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: 5,
      total_tokens: promptTokens + 5,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    });
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(Number(response.headers.get('content-length'))).toBeGreaterThan(0);
    expect(response.headers.get('connection')).toBe('keep-alive');
    expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it('takes text, model and token counts from the behaviour', async () => {
    fake.enqueue(
      reply({
        text: 'fixed words here',
        model: 'gpt-4o-mini-2024-07-18',
        tokens: { promptTokens: 7, cachedTokens: 3, reasoningTokens: 2 },
      }),
    );
    const data = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: user('x') });
    expect(data.choices[0]?.message.content).toBe('fixed words here');
    expect(data.model).toBe('gpt-4o-mini-2024-07-18');
    expect(data.usage).toMatchObject({
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      prompt_tokens_details: { cached_tokens: 3 },
      completion_tokens_details: { reasoning_tokens: 2 },
    });
  });

  it('streams chunks the SDK assembles, with a usage chunk only when asked for', async () => {
    fake.enqueue(reply({ text: 'one two three four five six', chunks: 3 }));
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('hi'),
      stream: true,
      stream_options: { include_usage: true },
    });
    const { chunks, error } = await drain(stream);
    expect(error).toBeUndefined();
    expect(chunks).toHaveLength(1 + 3 + 1 + 1);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gpt-4o-mini')).toBe(true);
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '', refusal: null });
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('one two three four five six');
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage).toMatchObject({ completion_tokens: 6 });

    const plain = await drain(
      await client.chat.completions.create({ model: 'gpt-4o-mini', messages: user('a b'), stream: true }),
    );
    expect(plain.chunks.every((c) => !('usage' in c))).toBe(true);
    expect(plain.chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
  });

  it('frames SSE byte for byte as OpenAI does', async () => {
    const response = await post('/chat/completions', {
      model: 'gpt-4o-mini',
      messages: user('a b'),
      stream: true,
      stream_options: { include_usage: true, include_obfuscation: false },
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const raw = await response.text();
    const frames = raw.split('\n\n');
    expect(frames.pop()).toBe('');
    expect(frames.at(-1)).toBe('data: [DONE]');
    for (const frame of frames.slice(0, -1)) {
      expect(frame).toMatch(
        /^data: \{"id":"chatcmpl-[^"]+","object":"chat\.completion\.chunk","created":\d+,"model":"gpt-4o-mini",/,
      );
    }
    expect(frames[1]).toContain(
      '"choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}],"usage":null}',
    );
  });

  it('relays chunk by chunk with the configured pause between frames', async () => {
    fake.enqueue(reply({ text: 'a b c d', chunkDelayMs: 60 }));
    const stream = await client.chat.completions.create({ model: 'm', messages: user('x'), stream: true });
    const arrivals: number[] = [];
    for await (const _ of stream) arrivals.push(performance.now());
    expect(arrivals).toHaveLength(6);
    for (let i = 1; i < arrivals.length; i++) expect(arrivals[i]! - arrivals[i - 1]!).toBeGreaterThan(40);
  });

  it('pauses mid-stream and then finishes', async () => {
    fake.enqueue(stallMidStream(2, 300, { text: 'a b c' }));
    const stream = await client.chat.completions.create({ model: 'm', messages: user('x'), stream: true });
    const arrivals: number[] = [];
    for await (const _ of stream) arrivals.push(performance.now());
    expect(arrivals).toHaveLength(5);
    expect(arrivals[2]! - arrivals[1]!).toBeGreaterThan(250);
  });
});

describe('tool calls', () => {
  const calls = [
    { name: 'get_weather', arguments: { city: 'Paris', units: 'celsius', note: 'naïve 🌧' } },
    { name: 'get_time', arguments: '{"zone":"Europe/Paris"}', id: 'call_fixed' },
  ];

  it('answers buffered with tool_calls, null content and finish_reason tool_calls', async () => {
    fake.enqueue(toolCalls(calls));
    const data = await client.chat.completions.create({ model: 'gpt-4o', messages: user('weather?') });
    const choice = data.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBeNull();
    expect(choice?.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: { name: 'get_weather', arguments: JSON.stringify(calls[0]?.arguments) },
      },
      {
        id: 'call_fixed',
        type: 'function',
        function: { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' },
      },
    ]);
  });

  it('streams indexed deltas whose fragments the SDK joins into valid JSON', async () => {
    fake.enqueue(toolCalls(calls, { argumentChunks: 5 }));
    const runner = client.chat.completions.stream({ model: 'gpt-4o', messages: user('weather?') });
    const deltas: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    runner.on('chunk', (chunk) => deltas.push(chunk));
    const final = await runner.finalChatCompletion();
    const toolCallsOut = final.choices[0]?.message.tool_calls ?? [];
    expect(toolCallsOut).toHaveLength(2);
    const first = toolCallsOut[0];
    expect(first?.type === 'function' && JSON.parse(first.function.arguments)).toEqual(calls[0]?.arguments);
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(deltas[0]?.choices[0]?.delta).toMatchObject({
      role: 'assistant',
      content: null,
      tool_calls: [{ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } }],
    });
    const fragments = deltas
      .flatMap((d) => d.choices[0]?.delta.tool_calls ?? [])
      .filter((t) => t.index === 0 && !t.id);
    expect(fragments).toHaveLength(5);
    expect(fragments.every((t) => t.id === undefined && t.function?.name === undefined)).toBe(true);
  });
});

describe('embeddings and models', () => {
  it('embeds deterministically as float and base64, and the SDK default decodes to the same floats', async () => {
    const float = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: ['alpha', 'beta'],
      encoding_format: 'float',
    });
    expect(float.object).toBe('list');
    expect(float.data.map((d) => d.index)).toEqual([0, 1]);
    expect(float.data[0]?.embedding).toHaveLength(1536);
    expect(float.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 });
    const norm = Math.hypot(...(float.data[0]?.embedding ?? []));
    expect(norm).toBeCloseTo(1, 4);

    const base64 = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: ['alpha', 'beta'],
      encoding_format: 'base64',
    });
    const encoded = base64.data[0]?.embedding as unknown as string;
    // A Buffer is a view: its ArrayBuffer may be larger (Node 24 decodes base64 into a bigger one).
    const bytes = Buffer.from(encoded, 'base64');
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
    expect(decoded).toEqual(float.data[0]?.embedding);

    const sdkDefault = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: 'alpha',
      dimensions: 8,
    });
    expect(fake.requests.at(-1)?.body).toMatchObject({ encoding_format: 'base64', dimensions: 8 });
    expect(Array.from(sdkDefault.data[0]?.embedding ?? [])).toHaveLength(8);
  });

  it('accepts token arrays and rejects malformed input in the API shape', async () => {
    const tokens = await client.embeddings.create({
      model: 'e',
      input: [
        [1, 2, 3],
        [4, 5],
      ],
      encoding_format: 'float',
    });
    expect(tokens.usage.prompt_tokens).toBe(5);
    await expect(client.embeddings.create({ model: 'e', input: [] })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
  });

  it('lists and retrieves models, 404 for an unknown one', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toContain('gpt-4o-mini');
    expect(await client.models.retrieve('gpt-4o')).toMatchObject({
      id: 'gpt-4o',
      object: 'model',
      owned_by: 'system',
    });
    const error = await client.models.retrieve('nope').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ code: 'model_not_found' });
  });
});

describe('responses', () => {
  it('answers buffered and streamed', async () => {
    const buffered = await client.responses.create({ model: 'gpt-4.1', input: 'echo me' });
    expect(buffered.output_text).toBe('echo me');
    expect(buffered.usage?.output_tokens).toBe(2);
    const stream = client.responses.stream({
      model: 'gpt-4.1',
      input: [{ role: 'user', content: 'stream me please' }],
    });
    let text = '';
    stream.on('response.output_text.delta', (event) => {
      text += event.delta;
    });
    const final = await stream.finalResponse();
    expect(text).toBe('stream me please');
    expect(final.output_text).toBe('stream me please');
  });
});

describe('faults', () => {
  it('surfaces a 429 as RateLimitError with the message, code and headers', async () => {
    fake.enqueue(rateLimited({ retryAfterSeconds: 2, message: 'Slow down, please.' }));
    const error = await client.chat.completions
      .create({ model: 'm', messages: user('x') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const rateLimit = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rateLimit.message).toBe('429 Slow down, please.');
    expect(rateLimit.code).toBe('rate_limit_exceeded');
    expect(rateLimit.headers?.get('retry-after')).toBe('2');
    expect(rateLimit.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
  });

  it('maps statuses to the SDK error classes, and non-JSON bodies come through raw', async () => {
    fake.enqueue(
      status(400, {
        error: {
          message: 'bad temperature',
          type: 'invalid_request_error',
          param: 'temperature',
          code: null,
        },
      }),
      status(503),
      rawBody(502, '<html><body>502 Bad Gateway</body></html>', 'text/html'),
    );
    const bad = await client.chat.completions
      .create({ model: 'm', messages: user('x') })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad).toMatchObject({ status: 400, param: 'temperature', message: '400 bad temperature' });
    const overloaded = await client.chat.completions
      .create({ model: 'm', messages: user('x') })
      .catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(OpenAI.InternalServerError);
    expect(overloaded).toMatchObject({ status: 503, type: 'server_error' });
    const html = await client.chat.completions
      .create({ model: 'm', messages: user('x') })
      .catch((e: unknown) => e);
    expect(html).toMatchObject({ status: 502, message: '502 <html><body>502 Bad Gateway</body></html>' });
  });

  it('cuts a stream after N frames, which the SDK reports as an error, not an end', async () => {
    fake.enqueue(cutStream(3, { text: 'a b c d e' }));
    const stream = await client.chat.completions.create({ model: 'm', messages: user('x'), stream: true });
    const { chunks, error } = await drain(stream);
    expect(chunks).toHaveLength(3);
    expect(error).toBeInstanceOf(Error);
    const next = await client.chat.completions.create({ model: 'm', messages: user('still alive') });
    expect(next.choices[0]?.message.content).toBe('still alive');
  });

  it('sends an in-band error frame on a 200 stream, which the SDK raises as APIError', async () => {
    fake.enqueue(
      inBandError(2, { message: 'upstream blew up', type: 'server_error', param: null, code: 'boom' }),
    );
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: user('a b c'),
      stream: true,
    });
    const { chunks, error } = await drain(stream);
    expect(chunks).toHaveLength(2);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ message: 'upstream blew up', code: 'boom', status: undefined });
  });

  it('stalls before headers long enough for a client timeout, then keeps serving', async () => {
    fake.enqueue(stall(2_000));
    const impatient = new OpenAI({ apiKey: 'sk-x', baseURL: fake.baseUrl, maxRetries: 0, timeout: 150 });
    const error = await impatient.chat.completions
      .create({ model: 'm', messages: user('x') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    fake.enqueue(stall(50, reply({ text: 'late' })));
    const late = await client.chat.completions.create({ model: 'm', messages: user('x') });
    expect(late.choices[0]?.message.content).toBe('late');
  });

  it('resets the connection before any response', async () => {
    fake.enqueue(reset());
    const error = await client.chat.completions
      .create({ model: 'm', messages: user('x') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('sends oversized bodies, as an error and as a streamed reply', async () => {
    fake.enqueue(oversized(100_000, { status: 400 }), oversized(200_000));
    const response = await post('/chat/completions', { model: 'm', messages: user('x') });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { message: string; type: string } };
    expect(body.error.message.length).toBeGreaterThan(100_000);
    expect(body.error.type).toBe('invalid_request_error');
    const stream = await client.chat.completions.create({ model: 'm', messages: user('x'), stream: true });
    const { chunks } = await drain(stream);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('').length).toBeGreaterThan(200_000);
  });

  it('demands a bearer key, and a required key answers 401 invalid_api_key to any other', async () => {
    const missing = await fetch(`${fake.baseUrl}/models`);
    expect(missing.status).toBe(401);
    fake.enqueue(withKey('sk-right', reply()));
    const error = await client.chat.completions
      .create({ model: 'm', messages: user('x') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error).toMatchObject({ code: 'invalid_api_key' });
    expect((error as Error).message).toMatch(/^401 Incorrect API key provided: sk-\*+0001\./);
  });

  it('answers unknown paths and bad JSON in the error shape', async () => {
    const unknown = await post('/fine_tuning/jobs', {});
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: {
        message: 'Invalid URL (POST /v1/fine_tuning/jobs)',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
    const broken = await fetch(`${fake.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-x', 'content-type': 'application/json' },
      body: '{"model":',
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { message: string } }).error.message).toMatch(
      /could not parse the JSON body/,
    );
  });
});

describe('scripting and recording', () => {
  it('consumes queued behaviours in order, skipping those bound to another path', async () => {
    fake.enqueue(onPath('/v1/embeddings', status(500)), reply({ text: 'first' }), reply({ text: 'second' }));
    const a = await client.chat.completions.create({ model: 'm', messages: user('x') });
    expect(a.choices[0]?.message.content).toBe('first');
    await expect(client.embeddings.create({ model: 'e', input: 'x' })).rejects.toBeInstanceOf(
      OpenAI.InternalServerError,
    );
    const b = await client.chat.completions.create({ model: 'm', messages: user('x') });
    expect(b.choices[0]?.message.content).toBe('second');
    expect(fake.queued).toBe(0);
    fake.setDefault(reply({ text: 'default now' }));
    const c = await client.chat.completions.create({ model: 'm', messages: user('x') });
    expect(c.choices[0]?.message.content).toBe('default now');
  });

  it('records method, path, query, headers, key, body and raw bytes', async () => {
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('recorded'),
      temperature: 0,
    });
    await client.models.list({ query: { limit: 5 } });
    const [chat, models] = fake.requests;
    expect(chat).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      apiKey: 'sk-test-key-0001',
      body: { model: 'gpt-4o-mini', messages: user('recorded'), temperature: 0 },
    });
    expect(chat?.headers.authorization).toBe('Bearer sk-test-key-0001');
    expect(chat?.headers['user-agent']).toMatch(/^OpenAI\/JS /);
    expect(JSON.parse(chat?.rawBody.toString('utf8') ?? '')).toEqual(chat?.body);
    expect(chat?.receivedAt).toBeGreaterThan(Date.now() - 10_000);
    expect(models).toMatchObject({ method: 'GET', path: '/v1/models', query: { limit: '5' } });
  });

  it('keeps a pooled connection alive across buffered and streamed replies', async () => {
    const pool = new Pool(fake.url, { connections: 1 });
    try {
      for (const stream of [false, true, false]) {
        const response = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { authorization: 'Bearer sk-x', 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages: user('x'), stream }),
        });
        expect(response.headers.connection).toBe('keep-alive');
        if (!stream) expect(Number(response.headers['content-length'])).toBeGreaterThan(0);
        await response.body.text();
      }
    } finally {
      await pool.close();
    }
    expect(new Set(fake.requests.map((r) => r.remotePort)).size).toBe(1);
  });
});
