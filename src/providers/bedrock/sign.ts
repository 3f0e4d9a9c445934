import { AwsV4Signer } from 'aws4fetch';
import type { AccessKeyPair } from './credentials.js';

/** The signing name of both the runtime and the control plane (not the `bedrock-runtime` host label). */
export const SIGNING_SERVICE = 'bedrock';

export interface SignInput {
  method: 'GET' | 'POST';
  url: string;
  /** Exactly the bytes that will be sent; the payload hash is taken over them. */
  body: string | null;
  headers: Record<string, string>;
  credentials: AccessKeyPair;
  /** metadata.region, never derived from the host dialled (SPEC 4.7). */
  region: string;
}

/**
 * SigV4 headers for one request: the given headers plus `authorization` and `x-amz-date`. Callers
 * add unsigned headers (such as x-svc-request-id) to the result afterwards, which keeps them out of
 * SignedHeaders. The secret only ever feeds the HMAC; the access key id appears in the credential
 * scope as the scheme requires, and nothing else of the pair travels.
 */
export const signRequest = async (input: SignInput): Promise<Record<string, string>> => {
  const signer = new AwsV4Signer({
    method: input.method,
    url: input.url,
    headers: input.headers,
    body: input.body,
    accessKeyId: input.credentials.access_key_id,
    secretAccessKey: input.credentials.secret_access_key,
    service: SIGNING_SERVICE,
    region: input.region,
  });
  const signed = await signer.sign();
  const out: Record<string, string> = {};
  signed.headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
};
