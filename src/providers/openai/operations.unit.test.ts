import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { TEXT_CARD } from '../../../test/fixtures/pricing/pricing.fixtures.js';
import { parseEmbeddingsBody, parseResponsesBody } from '../../edges/http/gateway/json-bodies.js';
import { pricingUsageOf } from '../../gateway/metering.js';
import { priceUsage } from '../../pricing/index.js';
import type { RelayedEvent } from '../provider.js';
import {
  embeddingsReply,
  embeddingsUsage,
  imageEvents,
  imagesReply,
  imagesUsage,
  responsesReply,
  responsesUsage,
} from './operations.js';

describe('usage of the JSON operations', () => {
  it('embeddings usage is input only', () => {
    expect(embeddingsUsage({ prompt_tokens: 12, total_tokens: 12 })).toEqual({
      prompt_tokens: 12,
      completion_tokens: 0,
      total_tokens: 12,
    });
    expect(embeddingsUsage(null)).toBeNull();
  });

  it('responses usage maps input, output, cached and reasoning tokens', () => {
    expect(
      responsesUsage({
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 40 },
        output_tokens: 30,
        output_tokens_details: { reasoning_tokens: 10 },
        total_tokens: 130,
      }),
    ).toEqual({
      prompt_tokens: 100,
      completion_tokens: 30,
      total_tokens: 130,
      prompt_tokens_details: { cached_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 10 },
    });
  });

  it('embeddings replies echo the catalog model; responses replies pass through', () => {
    const list = {
      object: 'list',
      data: [],
      model: 'text-embedding-3-small-2024',
      usage: { prompt_tokens: 1 },
    };
    expect(embeddingsReply('text-embedding-3-small')(list).body.model).toBe('text-embedding-3-small');
    const response = { object: 'response', model: 'gpt-4o-2024', service_tier: 'default', usage: null };
    expect(responsesReply(response)).toEqual({ body: response, usage: null, serviceTier: 'default' });
  });
});

describe('responses usage reaches pricing raw (SPEC 4.1 rule 10: judged there, never a silent 0)', () => {
  const request = parseResponsesBody({ model: 'gpt-4o', input: 'x' });
  const priced = (usage: Record<string, unknown>) =>
    priceUsage(TEXT_CARD, pricingUsageOf('responses', responsesUsage(usage)!, request, undefined));

  it.each([
    ['null', null],
    ['a digit string', '100'],
    ['a fraction', 2.5],
  ])('input_tokens %s fails billing instead of pricing the input at 0', (_name, input) => {
    expect(priced({ input_tokens: input, output_tokens: 30, total_tokens: 130 })).toMatchObject({
      billing_status: 'failed',
      billing_reason: 'invalid_usage',
    });
  });

  it('fields are renamed, values kept as sent', () => {
    expect(
      responsesUsage({
        input_tokens: null,
        output_tokens: '3',
        output_tokens_details: { reasoning_tokens: '1' },
      }),
    ).toMatchObject({
      prompt_tokens: null,
      completion_tokens: '3',
      completion_tokens_details: { reasoning_tokens: '1' },
    });
  });
});

describe('embeddings usage reaches pricing raw (SPEC 4.1 rule 10: judged there, never a silent 0)', () => {
  const request = parseEmbeddingsBody({ model: 'text-embedding-3-small', input: 'x' });
  const priced = (usage: Record<string, unknown>) =>
    priceUsage(TEXT_CARD, pricingUsageOf('embeddings', embeddingsUsage(usage)!, request, undefined));

  it.each([
    ['null', null],
    ['a digit string', '100'],
    ['a fraction', 2.5],
  ])('prompt_tokens %s fails billing instead of pricing the input at 0', (_name, input) => {
    expect(priced({ prompt_tokens: input, total_tokens: 100 })).toMatchObject({
      billing_status: 'failed',
      billing_reason: 'invalid_usage',
    });
  });

  it('a readable count is priced', () => {
    expect(priced({ prompt_tokens: 100, total_tokens: 100 })).toMatchObject({ billing_status: 'priced' });
  });
});

describe('image generation (SPEC 4.1 rule 9)', () => {
  it('usage splits the input into text and image tokens, the output is image tokens, and counts the images', () => {
    expect(
      imagesUsage(
        {
          input_tokens: 50,
          input_tokens_details: { text_tokens: 20, image_tokens: 30 },
          output_tokens: 1056,
          total_tokens: 1106,
        },
        1,
      ),
    ).toEqual({
      prompt_tokens: 50,
      completion_tokens: 1056,
      total_tokens: 1106,
      images: { input_image_tokens: 30, output_image_tokens: 1056, image_count: 1 },
    });
    // A model that reports nothing: only the images returned, for a per-image price.
    expect(imagesReply({ data: [{ url: 'u1' }, { url: 'u2' }] }).usage).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      images: { input_image_tokens: 0, output_image_tokens: 0, image_count: 2 },
    });
  });

  const upstream = (text: string) =>
    ({ statusCode: 200, headers: {}, body: Readable.from([Buffer.from(text)]) }) as unknown as Parameters<
      typeof imageEvents
    >[0];
  const drain = async (text: string) => {
    const out: RelayedEvent[] = [];
    for await (const e of imageEvents(upstream(text), 1 << 20)) out.push(e);
    return out;
  };
  const frame = (data: unknown) => `event: x\ndata: ${JSON.stringify(data)}\n\n`;

  it('relays partial images and sums the usage of the completed ones', async () => {
    const usage = {
      input_tokens: 5,
      input_tokens_details: { text_tokens: 5 },
      output_tokens: 100,
      total_tokens: 105,
    };
    const events = await drain(
      frame({ type: 'image_generation.partial_image', b64_json: 'a' }) +
        frame({ type: 'image_generation.completed', b64_json: 'b', usage }) +
        frame({ type: 'image_generation.completed', b64_json: 'c', usage }),
    );
    expect(events).toHaveLength(3);
    expect(events[0]!.usage).toBeUndefined();
    expect(events[2]!.usage).toMatchObject({
      prompt_tokens: 10,
      completion_tokens: 200,
      images: { image_count: 2 },
    });
  });

  it('fails a stream that ends before any image completed, or carries an error event', async () => {
    await expect(drain(frame({ type: 'image_generation.partial_image', b64_json: 'a' }))).rejects.toThrow(
      /before any image completed/,
    );
    await expect(drain(frame({ type: 'error', error: { message: 'moderation_blocked' } }))).rejects.toThrow(
      /moderation_blocked/,
    );
  });
});
