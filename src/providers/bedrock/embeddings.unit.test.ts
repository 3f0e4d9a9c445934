import { describe, expect, it } from 'vitest';
import { attemptTarget, azureEndpoint } from '../../../test/fixtures/azure/azure.fixtures.js';
import type { CanonicalRequest } from '../contract.js';
import type { AttemptFailure } from '../provider.js';
import {
  embeddingsList,
  fanOut,
  type InvokeOutcome,
  invokeReply,
  isTextEmbeddingModel,
  runtimeEmbeddings,
  translateEmbeddings,
} from './embeddings.js';

// SPEC 4.1 rule 4: the runtime's text-embedding translation and its fan-out.

const throttled: AttemptFailure = {
  kind: 'UpstreamStatus',
  status_code: 429,
  message: 'ThrottlingException: Rate exceeded',
  providerMessage: 'Rate exceeded',
  retryable: true,
  fallback: true,
  surface: { status: 429, code: 'rate_limit_error', displayCode: 'ThrottlingException' },
};

const ok = (tokens: number): InvokeOutcome => ({ ok: true, value: { embedding: [tokens], tokens } });

describe('translateEmbeddings', () => {
  it('the Titan text family only, also behind a regional profile prefix', () => {
    expect(isTextEmbeddingModel('amazon.titan-embed-text-v2:0')).toBe(true);
    expect(isTextEmbeddingModel('us.amazon.titan-embed-text-v1')).toBe(true);
    expect(isTextEmbeddingModel('amazon.titan-embed-image-v1')).toBe(false);
    expect(isTextEmbeddingModel('cohere.embed-english-v3')).toBe(false);
    expect(translateEmbeddings({ input: 'x' }, 'cohere.embed-english-v3')).toMatchObject({
      ok: false,
      unsupported: true,
    });
  });

  it('one inputText body per input; dimensions carried', () => {
    expect(
      translateEmbeddings({ input: ['a', 'b'], dimensions: 256 }, 'amazon.titan-embed-text-v2:0'),
    ).toEqual({
      ok: true,
      bodies: ['{"inputText":"a","dimensions":256}', '{"inputText":"b","dimensions":256}'],
    });
    expect(
      translateEmbeddings({ input: 'a', encoding_format: 'float' }, 'amazon.titan-embed-text-v1'),
    ).toEqual({
      ok: true,
      bodies: ['{"inputText":"a"}'],
    });
  });

  it('token ids and encoding formats other than float are refused by name', () => {
    const id = 'amazon.titan-embed-text-v2:0';
    expect(translateEmbeddings({ input: [1, 2] }, id)).toMatchObject({ ok: false, param: 'input' });
    expect(translateEmbeddings({ input: [[1, 2]] }, id)).toMatchObject({ ok: false, param: 'input' });
    expect(translateEmbeddings({ input: 'x', encoding_format: 'base64' }, id)).toMatchObject({
      ok: false,
      param: 'encoding_format',
    });
  });
});

describe('invoke replies', () => {
  it('reads {embedding, inputTextTokenCount} and renders the primary list in input order', () => {
    expect(invokeReply({ embedding: [0.5, -1], inputTextTokenCount: 3 })).toEqual({
      embedding: [0.5, -1],
      tokens: 3,
    });
    expect(invokeReply({ embedding: 'no' })).toBeUndefined();
    expect(
      embeddingsList(
        [
          { embedding: [1], tokens: 2 },
          { embedding: [2], tokens: 3 },
        ],
        'titan',
      ),
    ).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [1] },
        { object: 'embedding', index: 1, embedding: [2] },
      ],
      model: 'titan',
      usage: { prompt_tokens: 5, total_tokens: 5 },
    });
  });
});

describe('fanOut', () => {
  it('a failure of the first call is returned unchanged: retry and fallback still apply', async () => {
    const calls: number[] = [];
    const r = await fanOut(
      3,
      async (i) => {
        calls.push(i);
        return { ok: false, failure: throttled };
      },
      { timeoutMs: 60_000 },
    );
    expect(r).toEqual({ ok: false, failure: throttled });
    expect(calls).toEqual([0]);
  });

  it('a failure after a completed call is terminal and carries the usage of every call that succeeded', async () => {
    const outcomes = [ok(5), ok(7), { ok: false, failure: throttled } as InvokeOutcome, ok(11)];
    const r = await fanOut(4, async (i) => outcomes[i]!, { timeoutMs: 60_000 });
    if (r.ok) throw new Error('expected a failure');
    expect(r.failure).toMatchObject({
      retryable: false,
      fallback: false,
      surface: throttled.surface,
      consumed: { prompt_tokens: expect.any(Number), completion_tokens: 0 },
    });
    // Calls already in flight when the failure came back still count; none start after it.
    expect([12, 23]).toContain(r.failure.consumed!.prompt_tokens);
    expect(r.failure.providerMessage).toMatch(
      /^Rate exceeded \(input 2 failed after \d of 4 embeddings completed/,
    );
  });

  it('one deadline for the attempt: each call gets what remains, none starts after it, the completed ones are charged', async () => {
    // A fake clock: every invoke takes 40 ms of it, so the calls cannot all fit in 100 ms.
    let clock = 1_000;
    const budgets: number[] = [];
    const r = await fanOut(
      10,
      async (i, remainingMs) => {
        budgets.push(remainingMs);
        clock += 40;
        return ok(i + 1);
      },
      { timeoutMs: 100, now: () => clock },
    );
    expect(budgets).toEqual([100, 60, 20]);
    if (r.ok) throw new Error('expected a timeout');
    expect(r.failure).toMatchObject({
      kind: 'Timeout',
      retryable: false,
      fallback: false,
      consumed: { prompt_tokens: 1 + 2 + 3, completion_tokens: 0 },
    });
    expect(r.failure.message).toMatch(/after 3 of 10 embeddings completed/);
  });

  it('all calls succeed: results in input order', async () => {
    const r = await fanOut(
      6,
      async (i) => {
        await new Promise((resolve) => setImmediate(resolve));
        return ok(i + 1);
      },
      { timeoutMs: 60_000 },
    );
    expect(r.ok && r.results.map((x) => x.tokens)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe('runtimeEmbeddings', () => {
  const request = (raw: Record<string, unknown>): CanonicalRequest => ({
    operation: 'embeddings',
    route: '/v1/embeddings',
    model: 'titan',
    messages: [],
    stream: false,
    includeUsage: false,
    raw,
  });
  const target = (id: string) =>
    attemptTarget(
      azureEndpoint({ adapter: 'bedrock', lane: 'bedrock', model: 'titan', provider_model_id: id }),
      {
        secret: '{}',
        baseUrl: null,
        metadata: { region: 'us-east-1' },
        funding: 'byok',
        connectionId: null,
      },
    );
  const never = async (): Promise<never> => {
    throw new Error('no invoke expected');
  };

  it('a request this candidate cannot take is a 400 naming the param, yet another candidate may serve it', async () => {
    const out = await runtimeEmbeddings(
      'bedrock',
      request({ input: [1, 2] }),
      target('amazon.titan-embed-text-v2:0'),
      never,
    );
    expect(out).toMatchObject({
      ok: false,
      failure: {
        retryable: false,
        fallback: true,
        surface: { status: 400, code: 'invalid_request_error', param: 'input' },
      },
    });
  });

  it('another model family: the structured unsupported error', async () => {
    const out = await runtimeEmbeddings(
      'bedrock',
      request({ input: 'x' }),
      target('cohere.embed-english-v3'),
      never,
    );
    expect(out).toMatchObject({
      ok: false,
      failure: { fallback: true, surface: { status: 400, displayCode: 'unsupported_operation' } },
    });
  });
});
