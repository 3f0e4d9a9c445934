import { createHmac, timingSafeEqual } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { blake3Hex } from '../lib/blake3.js';
import { ServiceError } from '../lib/errors.js';
import { ObjectNotFoundError, type ObjectStore, ObjectStoreError } from '../objects/port.js';
import type { RawRow } from './requests.js';

/**
 * Artifact payloads (SPEC 2.3, 4.5 "a signed object URL when an object key exists and payload
 * access is authorized").
 *
 * Two kinds of object key: `request:<request_id>:req|res` names a gateway request's body, stored in
 * the request's body pack and served by the authenticated body route; `traces/...` names bytes the
 * trace-ingest stored under the org. For the latter the metadata route hands out a URL signed with
 * an HMAC of (org, trace, artifact, expiry): the signature is the authorization, so a browser or a
 * tool without the caller's bearer can fetch it until it expires, and it names exactly one
 * artifact of one org (nothing in it can be edited to reach another). When the object store signs
 * URLs of its own (S3), the URL is the store's instead (objectArtifactUrl).
 */

export const DEFAULT_ARTIFACT_URL_TTL_SECONDS = 300;

/** The signing key: derived from the deployment's master key, so no key is stored for it. */
export const artifactUrlKey = (masterKey: Buffer): Buffer =>
  createHmac('sha256', masterKey).update('svc trace artifact url v1').digest();

export interface ArtifactName {
  orgId: string;
  traceId: string;
  artifactId: string;
}

// JSON of the parts: unambiguous whatever characters an id holds.
const signature = (key: Buffer, n: ArtifactName, expires: number): Buffer =>
  createHmac('sha256', key)
    .update(JSON.stringify(['v1', n.orgId, n.traceId, n.artifactId, expires]))
    .digest();

const contentPath = (n: ArtifactName) =>
  `/api/traces/${encodeURIComponent(n.traceId)}/artifacts/${encodeURIComponent(n.artifactId)}/content`;

export const signedArtifactUrl = (
  key: Buffer,
  n: ArtifactName,
  now: Date,
  ttlSeconds = DEFAULT_ARTIFACT_URL_TTL_SECONDS,
): { url: string; expires_at: string } => {
  const expires = Math.floor(now.getTime() / 1000) + ttlSeconds;
  const q = new URLSearchParams({
    org_id: n.orgId,
    expires: String(expires),
    signature: signature(key, n, expires).toString('hex'),
  });
  return { url: `${contentPath(n)}?${q}`, expires_at: new Date(expires * 1000).toISOString() };
};

const isUncompressed = (compression: string): boolean =>
  compression === 'none' || compression === '' || compression === 'identity';

/**
 * The URL of a `traces/...` artifact. A store that presigns URLs (S3) serves the object itself,
 * so the bytes never pass through this process: its URL reads exactly that key of that org until it
 * expires. Only for an uncompressed object, whose stored bytes are the artifact; a compressed one,
 * or a store without presigning, gets the gateway's HMAC-signed content route, which decompresses.
 * The store does not check the bytes against the row as the content route does: a client that
 * must, compares them with the metadata's byte_count and blake3_hash.
 */
export const objectArtifactUrl = async (
  objects: ObjectStore | null,
  hmacKey: Buffer,
  n: ArtifactName,
  stored: { key: string; compression: string },
  now: Date,
  ttlSeconds = DEFAULT_ARTIFACT_URL_TTL_SECONDS,
): Promise<{ url: string; expires_at: string }> => {
  if (objects?.signedGetUrl && isUncompressed(stored.compression)) {
    try {
      return await objects.signedGetUrl(n.orgId, stored.key, ttlSeconds);
    } catch (err) {
      // A key the store refuses (a malformed row): the content route answers for it, with a 502.
      if (!(err instanceof ObjectStoreError)) throw err;
    }
  }
  return signedArtifactUrl(hmacKey, n, now, ttlSeconds);
};

export type SignatureCheck = 'ok' | 'invalid' | 'expired';

/** The signature first (it covers the expiry), then the expiry; constant-time comparison. */
export const checkArtifactSignature = (
  key: Buffer,
  n: ArtifactName,
  expires: string | undefined,
  given: string | undefined,
  now: Date,
): SignatureCheck => {
  if (!expires || !/^\d{1,12}$/.test(expires) || !given || !/^[0-9a-f]{64}$/i.test(given)) return 'invalid';
  const at = Number(expires);
  if (!timingSafeEqual(signature(key, n, at), Buffer.from(given, 'hex'))) return 'invalid';
  return at * 1000 < now.getTime() ? 'expired' : 'ok';
};

export type ArtifactLocation =
  | { kind: 'request_body'; requestId: string; side: 'request' | 'response' }
  | { kind: 'object'; key: string }
  | { kind: 'none' };

/** Where an artifact's bytes are, from its object key. */
export const locateArtifact = (objectKey: string): ArtifactLocation => {
  const body = /^request:(.+):(req|res)$/.exec(objectKey);
  if (body)
    return { kind: 'request_body', requestId: body[1]!, side: body[2] === 'req' ? 'request' : 'response' };
  if (objectKey.startsWith('traces/')) return { kind: 'object', key: objectKey };
  return { kind: 'none' };
};

/** The authenticated body route of a request's body (the same URL /api/requests/:id gives). */
export const requestBodyUrl = (orgId: string, requestId: string, side: 'request' | 'response'): string =>
  `/api/body/by-request/${encodeURIComponent(requestId)}?org_id=${encodeURIComponent(orgId)}&side=${side}`;

const integrityError = (what: string) =>
  new ServiceError('internal_error', `stored artifact failed integrity verification (${what})`, {
    status: 502,
    details: { integrity: what.replace(/ /g, '_') },
  });

/**
 * The artifact's original bytes: read under the row's org, decompressed as the row says, then
 * held to the row's byte count and blake3 before a byte is returned, so a truncated or altered
 * object yields an error and never partial or altered content.
 */
export const readVerifiedArtifact = async (objects: ObjectStore, row: RawRow): Promise<Buffer> => {
  const where = locateArtifact(String(row.object_key ?? ''));
  if (where.kind !== 'object') throw new ServiceError('not_found', 'this artifact has no stored object');
  let stored: Buffer;
  try {
    stored = await objects.get(String(row.org_id), where.key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError)
      throw new ServiceError('internal_error', 'the stored artifact is missing', { status: 502 });
    if (err instanceof ObjectStoreError)
      throw new ServiceError('internal_error', `stored artifact is unavailable (${err.code})`, {
        status: 502,
      });
    throw err;
  }
  const compression = String(row.compression ?? 'none');
  let bytes: Buffer;
  if (isUncompressed(compression)) bytes = stored;
  else if (compression === 'gzip') {
    try {
      bytes = gunzipSync(stored);
    } catch {
      throw integrityError('gzip undecodable');
    }
  } else
    throw new ServiceError('internal_error', `stored artifact uses unsupported compression ${compression}`, {
      status: 502,
    });
  const expected = String(row.blake3_hash ?? '');
  if (bytes.byteLength !== Number(row.byte_count)) throw integrityError('byte count mismatch');
  if (expected === '' || blake3Hex(bytes) !== expected.toLowerCase()) throw integrityError('blake3 mismatch');
  return bytes;
};
