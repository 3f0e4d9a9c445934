import { describe, expect, it } from 'vitest';
import { embeddingsInputForm, embeddingsPromptTokens } from '../../../gateway/embeddings-input.js';
import { ServiceError } from '../../../lib/errors.js';
import {
  checkPartialImages,
  parseEmbeddingsBody,
  parseImageGenerationBody,
  parseResponsesBody,
} from './json-bodies.js';

// SPEC 4.1 rule 4: request-global malformed embeddings input is refused before dispatch.

const refusal = (fn: () => unknown): { param: string | null; message: string } => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError) return { param: err.param, message: err.message };
    throw err;
  }
  throw new Error('expected a refusal');
};

describe('embeddings input forms', () => {
  it('string, string array, token ids and token-id arrays', () => {
    expect(embeddingsInputForm('a')).toBe('string');
    expect(embeddingsInputForm(['a', 'b'])).toBe('strings');
    expect(embeddingsInputForm([1, 2, 0])).toBe('tokens');
    expect(embeddingsInputForm([[1], [2, 3]])).toBe('token_arrays');
  });

  it('empty, mixed, negative, fractional and nested-empty inputs are refused naming input', () => {
    for (const input of [
      '',
      [],
      ['a', ''],
      ['a', 1],
      [1.5],
      [-1],
      [[]],
      [[1], 'a'],
      { a: 1 },
      null,
      undefined,
    ])
      expect(refusal(() => embeddingsInputForm(input)).param).toBe('input');
  });
});

describe('embeddingsPromptTokens (the escrow estimate, SPEC 8)', () => {
  it('counts token ids exactly and text at ~4 bytes a token, never 0', () => {
    expect(embeddingsPromptTokens([5, 6, 7])).toBe(3);
    expect(embeddingsPromptTokens([[1, 2], [3]])).toBe(3);
    expect(embeddingsPromptTokens('abcdefghi')).toBe(3);
    expect(embeddingsPromptTokens(['abcde', 'f'])).toBe(3);
    expect(embeddingsPromptTokens('a')).toBe(1);
  });
});

describe('parseEmbeddingsBody', () => {
  it('keeps the body as raw and reads model and user', () => {
    const body = { model: ' emb ', input: 'x', dimensions: 256, encoding_format: 'base64', user: 'u' };
    expect(parseEmbeddingsBody(body)).toMatchObject({
      operation: 'embeddings',
      route: '/v1/embeddings',
      model: 'emb',
      stream: false,
      endUserId: 'u',
      raw: body,
    });
  });

  it('encoding_format, dimensions, user and model are checked by name', () => {
    const base = { model: 'm', input: 'x' };
    expect(refusal(() => parseEmbeddingsBody({ ...base, encoding_format: 'int8' })).param).toBe(
      'encoding_format',
    );
    expect(refusal(() => parseEmbeddingsBody({ ...base, dimensions: 1.5 })).param).toBe('dimensions');
    expect(refusal(() => parseEmbeddingsBody({ ...base, dimensions: -1 })).param).toBe('dimensions');
    expect(refusal(() => parseEmbeddingsBody({ ...base, user: 7 })).param).toBe('user');
    expect(refusal(() => parseEmbeddingsBody({ input: 'x' })).param).toBe('model');
    expect(refusal(() => parseEmbeddingsBody([])).param).toBe('body');
  });
});

describe('parseResponsesBody', () => {
  it('reads model, stream and max_output_tokens; the rest rides in raw', () => {
    const body = {
      model: 'gpt-4o',
      input: [{ role: 'user', content: 'x' }],
      stream: true,
      max_output_tokens: 50,
    };
    expect(parseResponsesBody(body)).toMatchObject({
      operation: 'responses',
      route: '/v1/responses',
      stream: true,
      maxTokens: 50,
      raw: body,
    });
    expect(refusal(() => parseResponsesBody({ model: 'm', stream: 'yes' })).param).toBe('stream');
  });
});

describe('parseImageGenerationBody: partial_images (OpenAI images API, 0 to 3)', () => {
  const body = (partial_images: unknown) => ({ prompt: 'a cat', stream: true, partial_images });
  it('accepts 0 to 3, and no value', () => {
    for (const v of [0, 1, 2, 3, undefined, null])
      expect(parseImageGenerationBody(body(v)).operation, String(v)).toBe('images');
  });
  it('refuses anything else with a 400 naming the field', () => {
    for (const v of [-1, 4, 1.5, '2', true, 1e9]) {
      let caught: unknown;
      try {
        parseImageGenerationBody(body(v));
      } catch (err) {
        caught = err;
      }
      expect(caught, String(v)).toBeInstanceOf(ServiceError);
      expect((caught as ServiceError).param).toBe('partial_images');
    }
  });
});

describe('checkPartialImages (multipart edits send text fields)', () => {
  it('takes digit strings 0 to 3 and refuses the rest', () => {
    for (const v of ['0', '3', undefined]) expect(() => checkPartialImages(v, 'multipart')).not.toThrow();
    for (const v of ['4', '-1', '1.0', ' 2', ''])
      expect(() => checkPartialImages(v, 'multipart'), v).toThrow(/partial_images/);
  });
});
