import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ClientsEnv, MODELS, resetUpstreams, scriptText, scriptTool, startClientsEnv } from './setup.js';

// LangChain JS against the gateway (SPEC 4.1, 4.2): ChatOpenAI on /v1 and ChatAnthropic on /alt,
// each on a model served by an OpenAI-shaped and a Claude upstream: invoke, stream, and tool calls
// bound with bindTools, streamed and buffered.

let env: ClientsEnv;
beforeAll(async () => {
  env = await startClientsEnv();
});
afterAll(async () => {
  await env?.stop();
});
beforeEach(() => resetUpstreams(env));

const clients: [string, (model: string) => BaseChatModel][] = [
  [
    '@langchain/openai ChatOpenAI',
    (model) => new ChatOpenAI({ model, apiKey: env.key, configuration: { baseURL: env.v1 }, maxRetries: 0 }),
  ],
  [
    '@langchain/anthropic ChatAnthropic',
    (model) => new ChatAnthropic({ model, apiKey: env.key, anthropicApiUrl: env.alt, maxRetries: 0 }),
  ],
];

const weather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
  name: 'get_weather',
  description: 'weather for a city',
  schema: z.object({ city: z.string() }),
});
const now = tool(async () => '12:00', {
  name: 'current_time',
  description: 'the current time',
  schema: z.object({}),
});

describe.each(clients)('%s', (_name, chatOf) => {
  it.each(MODELS)('invoke on %s', async (model) => {
    scriptText(env, model, 'Hello from the gateway.');
    const r = await chatOf(model).invoke('hi');
    expect(r.content).toBe('Hello from the gateway.');
  });

  it.each(MODELS)('stream on %s', async (model) => {
    scriptText(env, model, 'Streamed through the gateway.');
    let text = '';
    for await (const chunk of await chatOf(model).stream('hi'))
      text += typeof chunk.content === 'string' ? chunk.content : '';
    expect(text).toBe('Streamed through the gateway.');
  });

  it.each(MODELS)('bindTools: a tool call with arguments, buffered, on %s', async (model) => {
    scriptTool(env, model, 'get_weather', { city: 'Oslo' });
    const chat = chatOf(model);
    const r = await chat.bindTools!([weather, now]).invoke('weather in Oslo?');
    expect(r.tool_calls?.map((c) => [c.name, c.args])).toEqual([['get_weather', { city: 'Oslo' }]]);
  });

  it.each(MODELS)('bindTools: a tool without parameters, streamed, on %s', async (model) => {
    scriptTool(env, model, 'current_time', {});
    const chat = chatOf(model);
    let merged: Awaited<ReturnType<typeof chat.invoke>> | undefined;
    for await (const chunk of await chat.bindTools!([weather, now]).stream('what time is it?'))
      merged =
        merged === undefined
          ? chunk
          : (merged as unknown as { concat(c: unknown): typeof chunk }).concat(chunk);
    expect(merged?.tool_calls?.map((c) => [c.name, c.args])).toEqual([['current_time', {}]]);
  });
});
