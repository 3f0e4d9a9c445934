import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_IMAGE_OUTPUT_TOKENS } from '../fakes/openai-upstream/routes.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { connect, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { completedEnvelope } from '../helpers/request-envelopes.js';

// SPEC 4.1 POST /v1/images/generations through a running `svc serve` with the real OpenAI SDK:
// capability-gated per registry model, b64_json and URL replies, streamed partial images, usage
// split into text and image tokens when reported (rule 9), and an estimated per-image cost for
// request-priced models.

let fake: FakeOpenAI;
let gw: GatewayEnv;
let client: OpenAI;

const upsert = (model: string, capabilities: string, prices: string[]) =>
  gw.svc([
    'registry',
    'upsert',
    '--lane',
    'openai',
    '--adapter',
    'openai',
    '--model',
    model,
    '--provider-model-id',
    `${model}-upstream`,
    '--base-url',
    fake.url,
    '--capabilities',
    capabilities,
    '--output-modalities',
    capabilities === 'images' ? 'image' : 'text',
    ...prices,
  ]);

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  await upsert('gpt-image-1', 'images', [
    '--input-price-per-token',
    '0.000005',
    '--output-price-per-token',
    '0.00004',
    '--price',
    'input_token/image=0.00001',
    '--price',
    'output_token/image=0.00004',
  ]);
  await upsert('dall-e-3', 'images', [
    '--input-price-per-token',
    '0',
    '--output-price-per-token',
    '0',
    '--price',
    'request=0.04',
  ]);
  await upsert('gpt-4o', 'chat,streaming', [
    '--input-price-per-token',
    '0.0000025',
    '--output-price-per-token',
    '0.00001',
  ]);
  await connect(gw, { provider: 'openai', secret: 'sk-x' });
  client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  await eventually(
    async () => {
      const r = await fetch(`${gw.serve.httpUrl}/v1/models`, {
        headers: { authorization: `Bearer ${gw.boot.api_key}` },
      });
      return ((await r.json()) as { data: unknown[] }).data.length >= 3;
    },
    15_000,
    'registry snapshot',
  );
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe('POST /v1/images/generations', () => {
  it('a token-priced model: b64_json back, usage split into text and image tokens, priced per meter', async () => {
    const { data: r, response } = await client.images
      .generate({ model: 'gpt-image-1', prompt: 'a lighthouse at dusk', n: 2 })
      .withResponse();
    expect(r.data).toHaveLength(2);
    expect(r.data?.[0]?.b64_json).toMatch(/^iVBOR/);
    expect(r.usage?.output_tokens).toBe(2 * FAKE_IMAGE_OUTPUT_TOKENS);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/images/generations');
    expect(sent.body).toMatchObject({ model: 'gpt-image-1-upstream', prompt: 'a lighthouse at dusk', n: 2 });
    const envelope = await completedEnvelope(gw, response.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/images/generations',
      model_served: 'gpt-image-1',
      status: 'success',
      billing: { status: 'priced' },
    });
    const lines = envelope.cost_lines.map((l) => [l.meter, l.modality, l.quantity]);
    // The output is all image tokens; the prompt text (5 tokens) is text input.
    expect(lines).toContainEqual(['output_token', 'image', 2 * FAKE_IMAGE_OUTPUT_TOKENS]);
    expect(lines).toContainEqual(['input_token', 'text', 5]);
    // 5 x 0.000005 + 2112 x 0.00004
    expect(envelope.total_cost_usd).toBe('0.084505');
  });

  it('a request-priced model: URL replies by default, an estimated per-image cost recorded', async () => {
    const { data: r, response } = await client.images
      .generate({ model: 'dall-e-3', prompt: 'a red fox', n: 1, size: '1024x1024' })
      .withResponse();
    expect(r.data?.[0]?.url).toMatch(/^https:\/\/images\.example\.test\//);
    const b64 = await client.images.generate({ model: 'dall-e-3', prompt: 'x', response_format: 'b64_json' });
    expect(b64.data?.[0]?.b64_json).toMatch(/^iVBOR/);
    const envelope = await completedEnvelope(gw, response.headers.get('x-svc-request-id')!);
    expect(envelope.total_cost_usd).toBe('0.04');
    expect(envelope.cost_lines).toEqual([
      expect.objectContaining({ meter: 'request', quantity: 1, amount: '0.04' }),
    ]);
  });

  it('streams partial images then the completed image, and prices the stream from its completed event', async () => {
    const stream = await client.images.generate({
      model: 'gpt-image-1',
      prompt: 'a paper boat',
      stream: true,
      partial_images: 2,
    });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types).toEqual([
      'image_generation.partial_image',
      'image_generation.partial_image',
      'image_generation.completed',
    ]);
    expect(fake.requests.at(-1)!.body).toMatchObject({ stream: true, partial_images: 2 });
    let envelope: Awaited<ReturnType<typeof completedEnvelope>> | undefined;
    await eventually(
      async () => {
        const page = await fetch(`${gw.serve.httpUrl}/api/requests?org_id=${gw.boot.org_id}&limit=20`, {
          headers: { authorization: `Bearer ${gw.admin}` },
        });
        const rows = ((await page.json()) as { data: { request_id: string; stream: boolean | number }[] })
          .data;
        const streamed = rows.find((x) => Boolean(x.stream));
        if (!streamed) return false;
        envelope = await completedEnvelope(gw, streamed.request_id);
        return true;
      },
      30_000,
      'the streamed request in the log',
    );
    expect(envelope!.billing.status).toBe('priced');
    expect(envelope!.cost_lines.map((l) => [l.meter, l.modality, l.quantity])).toContainEqual([
      'output_token',
      'image',
      FAKE_IMAGE_OUTPUT_TOKENS,
    ]);
  });

  it('capability-gated: a chat model is refused before any call; a missing prompt or a bad n is a 400', async () => {
    const refused = await client.images.generate({ model: 'gpt-4o', prompt: 'x' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('no_compatible_candidate');
    const post = (body: unknown) =>
      fetch(`${gw.serve.httpUrl}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const noPrompt = await post({ model: 'gpt-image-1' });
    expect(noPrompt.status).toBe(400);
    expect(((await noPrompt.json()) as { error: { param: string } }).error.param).toBe('prompt');
    const badN = await post({ model: 'gpt-image-1', prompt: 'x', n: 0 });
    expect(badN.status).toBe(400);
    expect(fake.requests.length).toBe(0);
  });
});
