import OpenAI from 'openai';
import {
  connect as connectPrimary,
  eventually,
  type GatewayEnv,
  startGatewayEnv,
} from '../helpers/gateway-env.js';
import { type FakeBedrock, startFakeBedrock } from './bedrock-runtime.js';

/**
 * `svc serve` wired to the fake managed runtime for the bedrock end-to-end tests: two lanes served
 * by the bedrock adapter (so fallback lists have a second candidate), and a BYOK connection whose
 * base_url points at the fake. The lanes' own defaults are deliberately unusable
 * (https://unused.invalid means none; the other never resolves) to show the connection's origin wins.
 */

export const MODEL_A = { lane: 'bedrock', model: 'claude-a', id: 'anthropic.claude-3-haiku-20240307-v1:0' };
export const MODEL_B = {
  lane: 'bedrock-b',
  model: 'claude-b',
  id: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
};
/** USD per token, as the upsert command takes them. */
export const PRICES = { input: '0.000003', output: '0.000015' };

export interface BedrockGateway {
  fake: FakeBedrock;
  gw: GatewayEnv;
  client: OpenAI;
  /** A raw POST /v1/chat/completions with the bootstrap key. */
  post(body: unknown): Promise<{ status: number; headers: Headers; text: string }>;
  /** A second project whose primary bedrock connection holds this secret; its API key's client. */
  projectWithSecret(
    name: string,
    secret: { access_key_id: string; secret_access_key: string },
  ): Promise<OpenAI>;
  stop(): Promise<void>;
}

export const startBedrockGateway = async (env: Record<string, string> = {}): Promise<BedrockGateway> => {
  const fake = await startFakeBedrock();
  const gw = await startGatewayEnv({
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
    SVC_GATEWAY_ATTEMPT_TIMEOUT_MS: '5000',
    ...env,
  });
  for (const [m, baseUrl] of [
    [MODEL_A, 'https://unused.invalid'],
    [MODEL_B, 'https://lane-default.invalid'],
  ] as const) {
    await gw.svc([
      'registry',
      'upsert',
      '--lane',
      m.lane,
      '--adapter',
      'bedrock',
      '--model',
      m.model,
      '--provider-model-id',
      m.id,
      '--base-url',
      baseUrl,
      '--capabilities',
      'chat,streaming,tools',
      '--input-price-per-token',
      PRICES.input,
      '--output-price-per-token',
      PRICES.output,
    ]);
  }
  const connect = (projectId: string, secret: { access_key_id: string; secret_access_key: string }) =>
    connectPrimary(gw, {
      provider: 'bedrock',
      projectId,
      secret: JSON.stringify(secret),
      metadata: { region: fake.region },
      baseUrl: fake.url,
    });
  await connect(gw.boot.project_id, {
    access_key_id: fake.credentials.accessKeyId,
    secret_access_key: fake.credentials.secretAccessKey,
  });
  const clientFor = (apiKey: string) =>
    new OpenAI({ apiKey, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  const post = async (body: unknown, apiKey = gw.boot.api_key) => {
    const res = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  const ready = async (apiKey: string) =>
    eventually(
      async () =>
        (await post({ model: MODEL_A.model, messages: [{ role: 'user', content: 'ping' }] }, apiKey))
          .status === 200,
      10_000,
      'gateway snapshots',
    );
  await ready(gw.boot.api_key);
  fake.reset();
  return {
    fake,
    gw,
    client: clientFor(gw.boot.api_key),
    post: (body) => post(body),
    projectWithSecret: async (name, secret) => {
      const boot = (await gw.svc([
        'bootstrap',
        '--workspace',
        'Gw',
        '--org',
        'Gw Org',
        '--project',
        name,
      ])) as {
        project_id: string;
        api_key: string;
      };
      await connect(boot.project_id, secret);
      // Until the gateway's snapshots know the key and the connection, it answers 401 or 503.
      await eventually(
        async () => {
          const r = await post(
            { model: MODEL_A.model, messages: [{ role: 'user', content: 'ping' }] },
            boot.api_key,
          );
          return r.status !== 401 && r.status !== 503;
        },
        10_000,
        'the new project in the gateway',
      );
      fake.reset();
      return clientFor(boot.api_key);
    },
    stop: async () => {
      await gw.stop();
      await fake.close();
    },
  };
};
