import {
  Agent,
  BatchTraceProcessor,
  getGlobalTraceProvider,
  OpenAIProvider,
  OpenAITracingExporter,
  Runner,
  setTraceProcessors,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type ClientsEnv,
  MODELS,
  resetUpstreams,
  scriptText,
  scriptToolThenText,
  startClientsEnv,
} from './setup.js';

// The OpenAI Agents SDK against the gateway (SPEC 4.1): an agent with a function tool runs its
// loop on chat completions through the gateway, on a model served by an OpenAI-shaped and by a
// Claude upstream, and its trace exporter, pointed at the gateway's /v1/traces/ingest instead of
// the vendor's host, exports without a failure or a retry.

let env: ClientsEnv;
let runner: Runner;
beforeAll(async () => {
  env = await startClientsEnv();
  // What a user writes: the SDK's own provider with the gateway as its base URL, chat completions.
  runner = new Runner({
    modelProvider: new OpenAIProvider({ apiKey: env.key, baseURL: env.v1, useResponses: false }),
  });
});
afterAll(async () => {
  await env?.stop();
});
beforeEach(() => {
  resetUpstreams(env);
  setTracingDisabled(true);
});

const weather = tool({
  name: 'get_weather',
  description: 'weather for a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `sunny in ${city}`,
});

describe('an agent with a tool on chat completions', () => {
  it.each(MODELS)('runs its tool loop on %s', async (model) => {
    scriptToolThenText(env, model, 'get_weather', { city: 'Oslo' }, 'It is sunny in Oslo.');
    const agent = new Agent({ name: 'Weather', instructions: 'Answer briefly.', model, tools: [weather] });
    const result = await runner.run(agent, 'weather in Oslo?');
    expect(result.finalOutput).toBe('It is sunny in Oslo.');
    const calls = result.newItems.filter((i) => i.type === 'tool_call_output_item');
    expect(calls).toHaveLength(1);
  });
});

describe('the trace exporter pointed at the gateway', () => {
  const realFetch = globalThis.fetch;
  const exported: { status: number; items: number }[] = [];
  afterEach(() => {
    globalThis.fetch = realFetch;
    setTraceProcessors([]);
  });

  it('exports a run to /v1/traces/ingest with 2xx answers and no retry', async () => {
    const endpoint = `${env.v1}/traces/ingest`;
    globalThis.fetch = async (input, init) => {
      const res = await realFetch(input, init);
      if (String(input) === endpoint) {
        const body = JSON.parse(String(init?.body)) as { data: unknown[] };
        exported.push({ status: res.status, items: body.data.length });
      }
      return res;
    };
    const exporter = new OpenAITracingExporter({ apiKey: env.key, endpoint });
    setTraceProcessors([new BatchTraceProcessor(exporter)]);
    setTracingDisabled(false);
    scriptText(env, 'gpt-4o', 'Traced.');
    const agent = new Agent({ name: 'Traced', instructions: 'Answer.', model: 'gpt-4o' });
    expect((await runner.run(agent, 'hi')).finalOutput).toBe('Traced.');
    await getGlobalTraceProvider().forceFlush();
    expect(exported.length).toBeGreaterThan(0);
    expect(exported.every((e) => e.status === 200)).toBe(true);
    expect(exported.reduce((n, e) => n + e.items, 0)).toBeGreaterThanOrEqual(2);
  });
});
