import { describe, expect, it } from 'vitest';
import { documentedStatus, exceptionFailure, exceptionName, redactMessage } from './exceptions.js';

describe('SPEC 7.5 exception mapping', () => {
  it.each([
    ['ThrottlingException', 429, { status: 429, code: 'rate_limit_error' }, true, true, undefined],
    ['TooManyRequestsException', 429, { status: 429, code: 'rate_limit_error' }, true, true, undefined],
    ['ServiceQuotaExceededException', 400, { status: 429, code: 'rate_limit_error' }, false, true, true],
    ['ValidationException', 400, { status: 400, code: 'invalid_request_error' }, false, false, undefined],
    ['AccessDeniedException', 403, { status: 502, code: 'upstream_error' }, false, true, undefined],
    ['UnrecognizedClientException', 403, { status: 502, code: 'upstream_error' }, false, true, undefined],
    ['InvalidSignatureException', 403, { status: 502, code: 'upstream_error' }, false, true, undefined],
    ['ExpiredTokenException', 403, { status: 502, code: 'upstream_error' }, false, true, undefined],
    ['InternalServerException', 500, { status: 500, code: 'upstream_error' }, true, true, undefined],
    ['ServiceUnavailableException', 503, { status: 503, code: 'upstream_error' }, true, true, undefined],
    ['ResourceNotFoundException', 404, { status: 404, code: 'upstream_error' }, false, true, undefined],
    ['ModelErrorException', 424, { status: 424, code: 'upstream_error' }, false, false, undefined],
  ])('%s (HTTP %i)', (name, status, surface, retryable, fallback, skipRetry) => {
    const f = exceptionFailure(name, status, 'why');
    expect(f.surface).toEqual({ ...surface, displayCode: name });
    expect(f.retryable).toBe(retryable);
    expect(f.fallback).toBe(fallback);
    expect(f.skipRetry).toBe(skipRetry);
    expect(f).toMatchObject({
      kind: 'UpstreamStatus',
      status_code: status,
      providerCode: name,
      providerMessage: 'why',
    });
    expect(f.message).toBe(`${name}: why`);
  });

  it('no exception name: the upstream status, upstream_error, no display code, a fixed message', () => {
    const f = exceptionFailure(null, 503, undefined);
    expect(f.surface).toEqual({ status: 503, code: 'upstream_error' });
    expect(f.providerMessage).toBe('the managed runtime answered HTTP 503');
    expect(f.retryable).toBe(true);
  });

  it('exception frames without a status use the documented one', () => {
    expect(documentedStatus('ThrottlingException')).toBe(429);
    expect(documentedStatus('ValidationException')).toBe(400);
    expect(documentedStatus('SomethingNew')).toBe(502);
  });
});

describe('exception names', () => {
  it.each([
    [
      'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/',
      undefined,
      'ValidationException',
    ],
    ['ThrottlingException', undefined, 'ThrottlingException'],
    [undefined, { __type: 'com.amazon.coral.validate#ValidationException' }, 'ValidationException'],
    [undefined, { __type: 'com.amazon.bedrock#AccessDeniedException:http://x/' }, 'AccessDeniedException'],
    ['throttlingException', undefined, 'ThrottlingException'],
    [undefined, { message: 'x' }, null],
    ['not a name!', undefined, null],
  ])('%s / %j -> %s', (header, body, name) => {
    expect(exceptionName(header, body)).toBe(name);
  });
});

describe('message redaction (SPEC 7.3)', () => {
  it('no account ids, ARNs, URLs, hosts or access key ids survive', () => {
    const raw =
      'User: arn:aws:iam::123456789012:user/alice is not authorized to perform: bedrock:InvokeModel on resource: ' +
      'arn:aws-us-gov:bedrock:us-gov-west-1::foundation-model/x (see https://docs.aws.amazon.com/a?b=c, ' +
      'host bedrock-runtime.us-east-1.amazonaws.com, key AKIAIOSFODNN7EXAMPLE, account 210987654321)';
    const out = redactMessage(raw);
    expect(out).toBe(
      'User: <arn> is not authorized to perform: bedrock:InvokeModel on resource: <arn> (see <url> ' +
        'host <host>, key <access-key-id>, account <account-id>)',
    );
    expect(out).not.toMatch(/\d{12}|arn:|https?:|amazonaws/);
  });

  it('whitespace collapses and a long message is cut and marked', () => {
    expect(redactMessage('a\n\n  b\tc')).toBe('a b c');
    const long = redactMessage('x'.repeat(5_000), 100);
    expect(long.startsWith('x'.repeat(100))).toBe(true);
    expect(long.endsWith('(truncated by the service)')).toBe(true);
  });
});
