import type { IncomingHttpHeaders } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * Verifies a request's SigV4 signature with the AWS SDK's own signer, independent of the
 * implementation under test: the request is re-signed from the headers it claims to have signed,
 * over the bytes that actually arrived, and the two signatures must be equal.
 */

export interface FakeCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export type Verdict =
  | { ok: true; signedHeaders: string[] }
  | {
      ok: false;
      exception: 'InvalidSignatureException' | 'UnrecognizedClientException' | 'IncompleteSignatureException';
      reason: string;
    };

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

const dateOf = (amzDate: string): Date | null => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : null;
};

export const verifySigV4 = async (
  request: { method: string; url: string; headers: IncomingHttpHeaders; body: Buffer },
  expected: { credentials: FakeCredentials; region: string; service: string },
): Promise<Verdict> => {
  const auth = AUTH.exec(single(request.headers.authorization) ?? '');
  if (!auth)
    return { ok: false, exception: 'IncompleteSignatureException', reason: 'no SigV4 authorization' };
  const [, accessKeyId, day, region, service, signedList, signature] = auth as unknown as string[];
  if (accessKeyId !== expected.credentials.accessKeyId)
    return { ok: false, exception: 'UnrecognizedClientException', reason: 'unknown access key id' };
  if (region !== expected.region || service !== expected.service) {
    return {
      ok: false,
      exception: 'InvalidSignatureException',
      reason: `credential scope ${region}/${service}, expected ${expected.region}/${expected.service}`,
    };
  }
  const amzDate = single(request.headers['x-amz-date']) ?? '';
  const signingDate = dateOf(amzDate);
  if (!signingDate || amzDate.slice(0, 8) !== day)
    return {
      ok: false,
      exception: 'IncompleteSignatureException',
      reason: 'x-amz-date missing or off-scope',
    };
  const signedHeaders = signedList!.split(';');
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = single(request.headers[name]);
    if (value === undefined)
      return { ok: false, exception: 'InvalidSignatureException', reason: `signed header ${name} not sent` };
    headers[name] = value;
  }
  const [path, search = ''] = request.url.split('?', 2) as [string, string?];
  const query: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(search)) query[k] = v;
  const host = headers.host ?? single(request.headers.host) ?? '';
  const signer = new SignatureV4({
    credentials: expected.credentials,
    region: expected.region,
    service: expected.service,
    sha256: Sha256,
    uriEscapePath: true,
    applyChecksum: false,
  });
  const resigned = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: host.replace(/:\d+$/, ''),
      path,
      query,
      headers,
      body: request.body,
    },
    { signingDate, signableHeaders: new Set(signedHeaders) },
  );
  const expectedAuth = AUTH.exec(resigned.headers.authorization ?? '');
  if (!expectedAuth || expectedAuth[6] !== signature) {
    return {
      ok: false,
      exception: 'InvalidSignatureException',
      reason:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    };
  }
  if (expectedAuth[5] !== signedList)
    return { ok: false, exception: 'InvalidSignatureException', reason: 'SignedHeaders differ' };
  return { ok: true, signedHeaders };
};
