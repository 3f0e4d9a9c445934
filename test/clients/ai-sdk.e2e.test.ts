import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, type LanguageModel, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { message } from '../fakes/anthropic-upstream.js';
import {
  type ClientsEnv,
  MODELS,
  resetUpstreams,
  scriptText,
  scriptToolThenText,
  startClientsEnv,
} from './setup.js';

// The Vercel AI SDK against the gateway (SPEC 4.1, 4.2): @ai-sdk/openai (chat completions),
// @ai-sdk/openai-compatible and @ai-sdk/anthropic (the /alt edge), each on a model served by an
// OpenAI-shaped and a Claude upstream: text, streamed text, and a tool round trip through the SDK's
// own multi-step loop, with a tool that has no parameters.

let env: ClientsEnv;
beforeAll(async () => {
  env = await startClientsEnv();
});
afterAll(async () => {
  await env?.stop();
});
beforeEach(() => resetUpstreams(env));

const providers: [string, (model: string) => LanguageModel][] = [
  ['@ai-sdk/openai', (m) => createOpenAI({ baseURL: env.v1, apiKey: env.key }).chat(m)],
  [
    '@ai-sdk/openai-compatible',
    // includeUsage asks for the terminal usage chunk, as the primary wire sends it only when asked.
    (m) =>
      createOpenAICompatible({
        name: 'gateway',
        baseURL: env.v1,
        apiKey: env.key,
        includeUsage: true,
      }).chatModel(m),
  ],
  ['@ai-sdk/anthropic', (m) => createAnthropic({ baseURL: `${env.alt}/v1`, apiKey: env.key })(m)],
];

describe.each(providers)('%s', (_name, modelOf) => {
  it.each(MODELS)('generateText on %s', async (model) => {
    scriptText(env, model, 'Hello from the gateway.');
    const r = await generateText({ model: modelOf(model), prompt: 'hi', maxRetries: 0 });
    expect(r.text).toBe('Hello from the gateway.');
    expect(r.usage.inputTokens).toBeGreaterThan(0);
  });

  it.each(MODELS)('streamText on %s', async (model) => {
    scriptText(env, model, 'Streamed through the gateway.');
    const r = streamText({ model: modelOf(model), prompt: 'hi', maxRetries: 0 });
    let text = '';
    for await (const part of r.textStream) text += part;
    expect(text).toBe('Streamed through the gateway.');
    expect((await r.usage).outputTokens).toBeGreaterThan(0);
  });

  it.each(MODELS)('a tool without parameters, streamed, runs in the SDK loop on %s', async (model) => {
    scriptToolThenText(env, model, 'current_time', {}, 'It is noon.');
    let ran = 0;
    const r = streamText({
      model: modelOf(model),
      prompt: 'what time is it?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        current_time: tool({
          description: 'the current time',
          inputSchema: z.object({}),
          execute: async () => {
            ran += 1;
            return '12:00';
          },
        }),
      },
    });
    expect(await r.text).toBe('It is noon.');
    expect(ran).toBe(1);
  });

  it.each(MODELS)('a tool with arguments, buffered, on %s', async (model) => {
    scriptToolThenText(env, model, 'get_weather', { city: 'Oslo' }, 'Sunny in Oslo.');
    const seen: string[] = [];
    const r = await generateText({
      model: modelOf(model),
      prompt: 'weather in Oslo?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        get_weather: tool({
          description: 'weather for a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            seen.push(city);
            return 'sunny';
          },
        }),
      },
    });
    expect(seen).toEqual(['Oslo']);
    expect(r.text).toBe('Sunny in Oslo.');
  });
});

describe('a server tool a Claude upstream ran itself, streamed to @ai-sdk/openai-compatible', () => {
  it('ends normally with the text (no InvalidResponseDataError)', async () => {
    env.anthropic.enqueue(
      message({
        blocks: [
          { type: 'server_tool_use', name: 'web_search', input: { query: 'Oslo weather' } },
          { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
          { type: 'text', text: 'Sunny.' },
        ],
      }),
    );
    const model = createOpenAICompatible({ name: 'gateway', baseURL: env.v1, apiKey: env.key }).chatModel(
      'claude-sonnet',
    );
    const r = streamText({
      model,
      prompt: 'weather in Oslo?',
      maxRetries: 0,
      providerOptions: { gateway: { web_search_options: {} } },
    });
    let text = '';
    for await (const part of r.textStream) text += part;
    expect(text).toBe('Sunny.');
    const last = env.anthropic.requests.at(-1)?.body as { tools?: { type: string }[] } | undefined;
    expect(last?.tools?.map((t) => t.type)).toContain('web_search_20250305');
  });
});
