import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { exception, reply } from '../fakes/bedrock-runtime.js';
import { type BedrockGateway, MODEL_A, MODEL_B, startBedrockGateway } from '../fakes/bedrock-runtime-env.js';
import { type ServeProcess, startServe } from '../helpers/svc-process.js';

// Every row of the SPEC 7.5 table end to end, stream failures in band
// (SPEC 4.7 rule 6), and a real signature refusal by the fake's independent verifier.

let env: BedrockGateway;
/** A second gateway on the same database with no retry budget at all. */
let noRetries: ServeProcess;

beforeAll(async () => {
  env = await startBedrockGateway({ SVC_GATEWAY_RETRIES: '1' });
  noRetries = await startServe(
    { ...env.gw.env, SVC_GATEWAY_RETRIES: '0', SVC_GATEWAY_RETRY_BACKOFF_MS: '5' },
    ['--roles', 'gateway'],
  );
});
afterAll(async () => {
  await noRetries?.stop();
  await env?.stop();
});
beforeEach(() => env.fake.reset());

const BOTH = `${MODEL_A.model},${MODEL_B.lane}/${MODEL_B.model}`;
const called = () =>
  env.fake.requests.map((r) => (r.path.includes(encodeURIComponent(MODEL_A.id)) ? 'A' : 'B'));
const ask = async (model = MODEL_A.model, extra: Record<string, unknown> = {}) => {
  const r = await env.post({ model, messages: [{ role: 'user', content: 'x' }], ...extra });
  const error =
    r.status === 200 ? undefined : (JSON.parse(r.text) as { error: Record<string, unknown> }).error;
  return { ...r, error };
};

describe('SPEC 7.5: ThrottlingException and TooManyRequestsException (429, retryable, fallback-eligible)', () => {
  it.each(['ThrottlingException', 'TooManyRequestsException'])(
    '%s is retried on the same candidate',
    async (name) => {
      env.fake.enqueue(exception(name, 429, 'Too many requests, please wait before trying again.'));
      expect((await ask()).status).toBe(200);
      expect(called()).toEqual(['A', 'A']);
    },
  );

  it('once the retry budget is spent it falls back to the next candidate', async () => {
    env.fake.enqueue(
      exception('ThrottlingException', 429, 'slow'),
      exception('ThrottlingException', 429, 'slow'),
    );
    const r = await ask(BOTH);
    expect(r.status).toBe(200);
    expect(called()).toEqual(['A', 'A', 'B']);
  });

  it.each([
    ['ThrottlingException', 'header'],
    ['TooManyRequestsException', 'body'],
  ] as const)(
    '%s when nothing is left: 429 rate_limit_error, the exception name in error.code (named by %s)',
    async (name, via) => {
      env.fake.enqueue(exception(name, 429, 'slow down', via), exception(name, 429, 'slow down', via));
      const r = await ask();
      expect(r.status).toBe(429);
      expect(r.error).toMatchObject({ type: 'rate_limit_error', code: name });
      expect(r.headers.get('retry-after')).toBeNull();
    },
  );
});

describe('SPEC 7.5: ServiceQuotaExceededException (429, non-retryable, falls forward without consuming a retry)', () => {
  it('with SVC_GATEWAY_RETRIES=0 it still falls forward to the second candidate', async () => {
    env.fake.enqueue(exception('ServiceQuotaExceededException', 400, 'quota exceeded'));
    const res = await fetch(`${noRetries.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.gw.boot.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: BOTH, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe(MODEL_B.model);
    expect(called()).toEqual(['A', 'B']);
  });

  it('the one retry of the budget is still there for the next candidate', async () => {
    env.fake.enqueue(
      exception('ServiceQuotaExceededException', 400, 'quota exceeded'),
      exception('ThrottlingException', 429, 'slow'),
    );
    expect((await ask(BOTH)).status).toBe(200);
    expect(called()).toEqual(['A', 'B', 'B']);
  });

  it('alone it is not retried: 429 rate_limit_error', async () => {
    env.fake.enqueue(exception('ServiceQuotaExceededException', 400, 'quota exceeded'));
    const r = await ask();
    expect(r.status).toBe(429);
    expect(r.error).toMatchObject({ type: 'rate_limit_error' });
    expect(called()).toEqual(['A']);
  });
});

describe('SPEC 7.5: ValidationException (400, non-retryable, no fallback)', () => {
  it('400 invalid_request_error with the runtime message, one call, the second candidate untouched', async () => {
    env.fake.enqueue(exception('ValidationException', 400, 'This model does not support tool use.'));
    const r = await ask(BOTH);
    expect(r.status).toBe(400);
    expect(r.error).toMatchObject({
      type: 'invalid_request_error',
      message: 'This model does not support tool use.',
    });
    expect(called()).toEqual(['A']);
  });
});

describe('SPEC 7.5: AccessDenied, UnrecognizedClient, InvalidSignature, ExpiredToken (502, non-retryable)', () => {
  it.each([
    'AccessDeniedException',
    'UnrecognizedClientException',
    'InvalidSignatureException',
    'ExpiredTokenException',
  ])('%s: 502 upstream_error, not retried, message redacted', async (name) => {
    env.fake.enqueue(
      exception(
        name,
        403,
        'User: arn:aws:iam::123456789012:user/ci is not authorized to perform: bedrock:InvokeModel on https://bedrock-runtime.us-east-1.amazonaws.com',
      ),
    );
    const r = await ask();
    expect(r.status).toBe(502);
    expect(r.error).toMatchObject({ type: 'upstream_error' });
    expect(String(r.error!.message)).toBe(
      'User: <arn> is not authorized to perform: bedrock:InvokeModel on <url>',
    );
    expect(called()).toEqual(['A']);
  });

  it('a wrong secret is refused by the independent verifier: InvalidSignatureException, 502', async () => {
    const bad = await env.projectWithSecret('Wrong Secret', {
      access_key_id: env.fake.credentials.accessKeyId,
      secret_access_key: 'not-the-secret',
    });
    const err = (await bad.chat.completions
      .create({ model: MODEL_A.model, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/signature we calculated does not match/);
    expect(env.fake.violations.some((v) => v.includes('does not match'))).toBe(true);
  });

  it('an unknown access key id: UnrecognizedClientException, 502', async () => {
    const unknown = await env.projectWithSecret('Unknown Key', {
      access_key_id: 'AKIAUNKNOWNUNKNOWN00',
      secret_access_key: env.fake.credentials.secretAccessKey,
    });
    const err = (await unknown.chat.completions
      .create({ model: MODEL_A.model, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(502);
  });
});

describe('SPEC 7.5: anything else keeps the upstream status as upstream_error', () => {
  it('InternalServerException 500 is retried, then surfaces as 500 with its name', async () => {
    env.fake.enqueue(
      exception('InternalServerException', 500, 'boom'),
      exception('InternalServerException', 500, 'boom'),
    );
    const r = await ask();
    expect(r.status).toBe(500);
    expect(r.error).toMatchObject({ type: 'upstream_error', code: 'InternalServerException' });
    expect(called()).toEqual(['A', 'A']);
  });

  it('ModelErrorException 424 surfaces as 424 upstream_error', async () => {
    env.fake.enqueue(exception('ModelErrorException', 424, 'the model failed'));
    const r = await ask();
    expect(r.status).toBe(424);
    expect(r.error).toMatchObject({ type: 'upstream_error' });
  });
});

describe('single-attempt rendering (needs the shared failures.ts change in the report)', () => {
  it('error.code is the exception name and a refused n names param n', async () => {
    env.fake.enqueue(exception('ValidationException', 400, 'bad'));
    expect((await ask()).error).toMatchObject({ code: 'ValidationException' });
    env.fake.enqueue(exception('ServiceQuotaExceededException', 400, 'quota'));
    expect((await ask()).error).toMatchObject({ code: 'ServiceQuotaExceededException' });
    env.fake.enqueue(exception('AccessDeniedException', 403, 'denied'));
    expect((await ask()).error).toMatchObject({ code: 'AccessDeniedException' });
    expect((await ask(MODEL_A.model, { n: 2 })).error).toMatchObject({
      type: 'invalid_request_error',
      param: 'n',
    });
  });
});

describe('stream failures (SPEC 4.7 rule 6)', () => {
  const frames = (text: string) => text.split('\n\n').filter(Boolean);

  it('an exception frame mid-stream: terminal upstream_stream_error frame with its name, then [DONE]; no fallback', async () => {
    env.fake.enqueue(
      reply({
        blocks: [{ text: 'one two three four' }],
        exceptionAfter: {
          events: 3,
          name: 'ModelStreamErrorException',
          message: 'The model arn:aws:bedrock:us-east-1:123456789012:x failed',
        },
      }),
    );
    const r = await ask(BOTH, { stream: true });
    expect(r.status).toBe(200);
    const f = frames(r.text);
    expect(f.at(-1)).toBe('data: [DONE]');
    const error = JSON.parse(f.at(-2)!.slice(6)) as { error: { type: string; message: string } };
    expect(error.error.type).toBe('upstream_stream_error');
    expect(error.error.message).toBe('ModelStreamErrorException: The model <arn> failed');
    expect(
      f
        .slice(0, -2)
        .map((x) => JSON.parse(x.slice(6)).choices[0].delta.content ?? '')
        .join(''),
    ).toBe('one two ');
    expect(called()).toEqual(['A']);
  });

  it.each(['prelude', 'message'] as const)(
    'a corrupted %s CRC mid-stream ends the same way',
    async (where) => {
      env.fake.enqueue(
        reply({ blocks: [{ text: 'a b c d e' }], corrupt: { frame: 3, where }, splitSeed: 5 }),
      );
      const r = await ask(BOTH, { stream: true });
      const f = frames(r.text);
      expect(f.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(f.at(-2)!.slice(6)).error.type).toBe('upstream_stream_error');
      expect(called()).toEqual(['A']);
    },
  );

  it('an exception frame before any event is an ordinary attempt failure: throttling is retried', async () => {
    env.fake.enqueue(reply({ exceptionAfter: { events: 0, name: 'ThrottlingException', message: 'slow' } }));
    const r = await ask(MODEL_A.model, { stream: true });
    expect(r.status).toBe(200);
    expect(frames(r.text).at(-1)).toBe('data: [DONE]');
    expect(r.text).not.toContain('upstream_stream_error');
    expect(called()).toEqual(['A', 'A']);
  });
});
