import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_IMAGE_INPUT_TOKENS, FAKE_IMAGE_OUTPUT_TOKENS } from '../fakes/openai-upstream/routes.js';
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

// SPEC 4.1 POST /v1/images/edits and /v1/images/variations: multipart in, proxied as multipart (the
// fake reads it with the platform's own FormData parser), capability-gated, variations for the one
// model family that makes them, priced like generations.
describe('POST /v1/images/edits and /v1/images/variations', () => {
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
    'base64',
  );
  // Every byte value, so nothing in the path may treat a file as text.
  const binary = Buffer.concat([png, Buffer.from(Array.from({ length: 256 }, (_, i) => i))]);

  beforeAll(async () => {
    await upsert('dall-e-2', 'images', [
      '--input-price-per-token',
      '0',
      '--output-price-per-token',
      '0',
      '--price',
      'request=0.02',
    ]);
    await eventually(
      async () => (await client.models.list()).data.some((m) => m.id === 'dall-e-2'),
      15_000,
      'dall-e-2 in the catalog',
    );
  }, 60_000);

  it('an edit of several images with a mask: each file arrives byte for byte, image input tokens priced', async () => {
    const { data: r, response } = await client.images
      .edit({
        model: 'gpt-image-1',
        prompt: 'add a hat',
        image: [
          await toFile(binary, 'first.png', { type: 'image/png' }),
          await toFile(png, 'second.webp', { type: 'image/webp' }),
        ],
        mask: await toFile(png, 'mask.png', { type: 'image/png' }),
        size: '1024x1024',
      })
      .withResponse();
    expect(r.data?.[0]?.b64_json).toMatch(/^iVBOR/);
    expect(r.usage?.input_tokens_details?.image_tokens).toBe(2 * FAKE_IMAGE_INPUT_TOKENS);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/images/edits');
    expect(sent.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(sent.body).toEqual({ model: 'gpt-image-1-upstream', prompt: 'add a hat', size: '1024x1024' });
    expect(sent.form?.files.map((f) => [f.field, f.filename, f.type])).toEqual([
      ['image[]', 'first.png', 'image/png'],
      ['image[]', 'second.webp', 'image/webp'],
      ['mask', 'mask.png', 'image/png'],
    ]);
    expect(sent.form?.files[0]?.bytes.equals(binary)).toBe(true);
    expect(sent.form?.files[2]?.bytes.equals(png)).toBe(true);
    const envelope = await completedEnvelope(gw, response.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/images/edits',
      model_served: 'gpt-image-1',
      status: 'success',
      billing: { status: 'priced' },
    });
    const lines = envelope.cost_lines.map((l) => [l.meter, l.modality, l.quantity]);
    expect(lines).toContainEqual(['input_token', 'image', 2 * FAKE_IMAGE_INPUT_TOKENS]);
    expect(lines).toContainEqual(['input_token', 'text', 3]);
    expect(lines).toContainEqual(['output_token', 'image', FAKE_IMAGE_OUTPUT_TOKENS]);
    // 3 x 0.000005 + 646 x 0.00001 + 1056 x 0.00004
    expect(envelope.total_cost_usd).toBe('0.048715');
  });

  it('a dall-e-2 edit: one PNG, a URL back, an estimated per-image cost', async () => {
    const { data: r, response } = await client.images
      .edit({ model: 'dall-e-2', prompt: 'a window', image: await toFile(png, 'room.png'), n: 2 })
      .withResponse();
    expect(r.data?.map((d) => d.url)).toEqual([
      expect.stringMatching(/^https:\/\/images\.example\.test\//),
      expect.stringMatching(/^https:\/\/images\.example\.test\//),
    ]);
    expect(fake.requests.at(-1)!.body).toMatchObject({ model: 'dall-e-2-upstream', n: '2' });
    const envelope = await completedEnvelope(gw, response.headers.get('x-svc-request-id')!);
    expect(envelope.total_cost_usd).toBe('0.04');
  });

  it('streams an edit: partial images, then the completed image', async () => {
    const stream = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'a scarf',
      image: await toFile(png, 'a.png'),
      stream: true,
      partial_images: 1,
    });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types).toEqual(['image_edit.partial_image', 'image_edit.completed']);
    expect(fake.requests.at(-1)!.body).toMatchObject({ stream: 'true', partial_images: '1' });
  });

  it('a variation: dall-e-2 only, the image arrives whole, priced per image', async () => {
    const { data: r, response } = await client.images
      .createVariation({
        model: 'dall-e-2',
        image: await toFile(binary, 'base.png'),
        n: 2,
        response_format: 'b64_json',
      })
      .withResponse();
    expect(r.data).toHaveLength(2);
    expect(r.data?.[0]?.b64_json).toMatch(/^iVBOR/);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/images/variations');
    expect(sent.form?.files).toHaveLength(1);
    expect(sent.form?.files[0]?.bytes.equals(binary)).toBe(true);
    const envelope = await completedEnvelope(gw, response.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({ route: '/v1/images/variations', total_cost_usd: '0.04' });

    // Another image model cannot make variations: refused before any upstream call.
    fake.reset();
    const other = await client.images
      .createVariation({ model: 'gpt-image-1', image: await toFile(png, 'base.png') })
      .catch((e: unknown) => e);
    expect(other).toBeInstanceOf(OpenAI.BadRequestError);
    expect(other).toMatchObject({ code: 'no_compatible_candidate', param: 'model' });
    expect((other as Error).message).toMatch(/dall-e-2 model family only/);
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses what it cannot serve with a 400 naming the field, before any upstream call', async () => {
    const chat = await client.images
      .edit({ model: 'gpt-4o', prompt: 'x', image: await toFile(png, 'a.png') })
      .catch((e: unknown) => e);
    expect(chat).toMatchObject({ status: 400, code: 'no_compatible_candidate' });
    const form = (parts: [string, string | Blob, string?][]) => {
      const f = new FormData();
      for (const [name, value, filename] of parts)
        if (typeof value === 'string') f.append(name, value);
        else f.append(name, value, filename);
      return f;
    };
    const post = async (path: string, body: FormData) => {
      const r = await fetch(`${gw.serve.httpUrl}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.boot.api_key}` },
        body,
      });
      return {
        status: r.status,
        error: ((await r.json()) as { error: { param?: string; message: string } }).error,
      };
    };
    const image = new Blob([png], { type: 'image/png' });
    expect(await post('/images/edits', form([['image', image, 'a.png']]))).toMatchObject({
      status: 400,
      error: { param: 'prompt' },
    });
    expect(await post('/images/edits', form([['prompt', 'x']]))).toMatchObject({
      status: 400,
      error: { param: 'image' },
    });
    expect(
      await post(
        '/images/edits',
        form([
          ['prompt', 'x'],
          ['image', image, 'a.png'],
          ['other', image, 'b.png'],
        ]),
      ),
    ).toMatchObject({ status: 400, error: { param: 'other' } });
    expect(
      await post(
        '/images/edits',
        form([
          ['prompt', 'x'],
          ['prompt', 'y'],
          ['image', image, 'a.png'],
        ]),
      ),
    ).toMatchObject({ status: 400, error: { param: 'prompt' } });
    expect(
      await post(
        '/images/edits',
        form([
          ['prompt', 'x'],
          ['n', '11'],
          ['image', image, 'a.png'],
        ]),
      ),
    ).toMatchObject({ status: 400, error: { param: 'n' } });
    expect(
      await post(
        '/images/edits',
        form([
          ['prompt', 'x'],
          ['image', new Blob([]), 'empty.png'],
        ]),
      ),
    ).toMatchObject({
      status: 400,
      error: { param: 'image' },
    });
    expect(
      await post(
        '/images/variations',
        form([
          ['image', image, 'a.png'],
          ['stream', 'true'],
        ]),
      ),
    ).toMatchObject({ status: 400, error: { param: 'stream' } });
    // Not a multipart body at all, and a multipart body where JSON is expected.
    const json = await fetch(`${gw.serve.httpUrl}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
      body: '{"prompt":"x"}',
    });
    expect(json.status).toBe(415);
    expect(((await json.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    const wrongRoute = await post('/chat/completions', form([['model', 'gpt-4o']]));
    expect(wrongRoute.status).toBe(415);
    const truncated = await fetch(`${gw.serve.httpUrl}/v1/images/edits`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${gw.boot.api_key}`,
        'content-type': 'multipart/form-data; boundary=xyz',
      },
      body: '--xyz\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nhalf',
    });
    expect(truncated.status).toBe(400);
    expect(fake.requests).toHaveLength(0);
  });

  it('a file over 50 MiB is a 413 the SDK reads, and the gateway serves the next request', async () => {
    const big = Buffer.alloc(50 * 1_048_576 + 1, 7);
    const refused = await client.images
      .edit({ model: 'gpt-image-1', prompt: 'x', image: await toFile(big, 'big.png') })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 413 });
    expect((refused as Error).message).toMatch(/larger than the 50 MiB/);
    expect(fake.requests).toHaveLength(0);
    const next = await client.images.edit({
      model: 'dall-e-2',
      prompt: 'x',
      image: await toFile(png, 'a.png'),
    });
    expect(next.data).toHaveLength(1);
  });
});
