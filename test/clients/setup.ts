import { type FakeAnthropic, message, startFakeAnthropic } from '../fakes/anthropic-upstream.js';
import { connect, upsertAnthropic, upsertOpenAi } from '../fakes/anthropic-upstream-gateway.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

/**
 * One `svc serve` in front of both fake upstreams, for the client-compatibility suite: `gpt-4o`
 * served by the OpenAI-shaped fake, `claude-sonnet` by the Anthropic-shaped one (priced on every
 * meter its replies report), each through the project's own primary connection. The fakes answer
 * in the providers' real shapes; the suite drives the client libraries users point at a gateway.
 */
export interface ClientsEnv {
  gw: GatewayEnv;
  openai: FakeOpenAI;
  anthropic: FakeAnthropic;
  /** `<gateway>/v1` and `<gateway>/alt` (the Anthropic SDKs add `/v1`). */
  v1: string;
  alt: string;
  key: string;
  stop(): Promise<void>;
}

const OPENAI_KEY = 'sk-openai-tenant';
const ANTHROPIC_KEY = 'sk-ant-tenant';

export const startClientsEnv = async (): Promise<ClientsEnv> => {
  const openai = await startFakeOpenAI({ requireKey: OPENAI_KEY });
  const anthropic = await startFakeAnthropic({ requireKey: ANTHROPIC_KEY });
  const gw = await startGatewayEnv({ SVC_GATEWAY_RETRIES: '0' });
  await upsertOpenAi(gw, 'gpt-4o', openai.url);
  await upsertAnthropic(
    gw,
    {
      lane: 'anthropic',
      model: 'claude-sonnet',
      providerModelId: 'claude-sonnet-4-5-20250929',
      baseUrl: anthropic.url,
      reasoning: false,
    },
    ['--cache-read-price-per-token', '0.0000003', '--cache-write-price-per-token', '0.00000375'],
  );
  await connect(gw, 'openai', OPENAI_KEY);
  await connect(gw, 'anthropic', ANTHROPIC_KEY);
  const v1 = `${gw.serve.httpUrl}/v1`;
  const key = gw.boot.api_key;
  await eventually(
    async () => {
      anthropic.enqueue(message());
      const ok = await Promise.all(
        ['gpt-4o', 'claude-sonnet'].map(async (model) => {
          const res = await fetch(`${v1}/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model, messages: [{ role: 'user', content: 'ping' }] }),
          });
          await res.text();
          return res.status === 200;
        }),
      );
      return ok.every(Boolean);
    },
    15_000,
    'the gateway snapshots',
  );
  return {
    gw,
    openai,
    anthropic,
    v1,
    alt: `${gw.serve.httpUrl}/alt`,
    key,
    stop: async () => {
      await gw.stop();
      await openai.close();
      await anthropic.close();
    },
  };
};

export const MODELS = ['gpt-4o', 'claude-sonnet'] as const;

/** Queues, on the upstream that serves `model`, a tool call to `name` with `input`, then a text reply. */
export const scriptToolThenText = (
  env: ClientsEnv,
  model: string,
  name: string,
  input: Record<string, unknown>,
  text: string,
) => {
  if (model.startsWith('claude')) {
    env.anthropic.enqueue(
      message({ blocks: [{ type: 'tool_use', name, input }] }),
      message({ blocks: [{ type: 'text', text }] }),
    );
  } else {
    env.openai.enqueue(
      { kind: 'reply', options: { toolCalls: [{ name, arguments: input }] } },
      { kind: 'reply', options: { text } },
    );
  }
};

/** Queues, on the upstream that serves `model`, one reply calling `name` with `input`. */
export const scriptTool = (env: ClientsEnv, model: string, name: string, input: Record<string, unknown>) => {
  if (model.startsWith('claude'))
    env.anthropic.enqueue(message({ blocks: [{ type: 'tool_use', name, input }] }));
  else env.openai.enqueue({ kind: 'reply', options: { toolCalls: [{ name, arguments: input }] } });
};

/** Empties both upstreams' queues, so one test's script never answers the next. */
export const resetUpstreams = (env: ClientsEnv) => {
  env.openai.reset();
  env.anthropic.reset();
};

/** Queues a plain text reply on the upstream that serves `model`. */
export const scriptText = (env: ClientsEnv, model: string, text: string) => {
  if (model.startsWith('claude')) env.anthropic.enqueue(message({ blocks: [{ type: 'text', text }] }));
  else env.openai.enqueue({ kind: 'reply', options: { text } });
};
