import { hostLabel, isPlainObject, rejectUnknownKeys, requiredToken } from '../../lib/fields.js';
import { invalid, type Validated, valid } from '../../lib/validated.js';

/** SPEC 2.6: the only metadata of a managed-runtime connection. */
export type ManagedRuntimeMetadata = { region: string };

/** The decrypted managed-runtime secret; signing needs both halves. */
export type AccessKeyPair = { access_key_id: string; secret_access_key: string };

const METADATA_FIELDS = ['region'] as const;
const SECRET_FIELDS = ['access_key_id', 'secret_access_key'] as const;

export const validateManagedRuntimeMetadata = (
  provider: string,
  metadata: Record<string, unknown>,
): Validated<ManagedRuntimeMetadata> => {
  const unknown = rejectUnknownKeys('metadata', metadata, METADATA_FIELDS, `provider ${provider}`);
  if (!unknown.ok) return unknown;
  // The region is only a signing label; mapping it to a partition is left to the operator's lane.
  const region = hostLabel('metadata.region', metadata['region']);
  if (!region.ok) return region;
  return valid({ region: region.value });
};

/**
 * SPEC 2.6: the secret is one JSON object holding exactly the access key pair. Messages name the
 * field but never echo the text, since it is credential material.
 */
export const parseAccessKeyPair = (secret: unknown): Validated<AccessKeyPair> => {
  const shape = 'must be a JSON object with access_key_id and secret_access_key';
  if (typeof secret !== 'string') return invalid('secret', shape);
  let parsed: unknown;
  try {
    parsed = JSON.parse(secret);
  } catch {
    // The parser's own message quotes the input, so it is not passed on.
    return invalid('secret', shape);
  }
  if (!isPlainObject(parsed)) return invalid('secret', shape);
  const unknown = rejectUnknownKeys('secret', parsed, SECRET_FIELDS, 'a managed-runtime secret');
  if (!unknown.ok) return unknown;
  // Both halves end up in a signed header, where whitespace or a control character would break it.
  const accessKeyId = requiredToken('secret.access_key_id', parsed['access_key_id']);
  if (!accessKeyId.ok) return accessKeyId;
  const secretAccessKey = requiredToken('secret.secret_access_key', parsed['secret_access_key']);
  if (!secretAccessKey.ok) return secretAccessKey;
  return valid({ access_key_id: accessKeyId.value, secret_access_key: secretAccessKey.value });
};

/** The canonical text stored (encrypted): fixed key order, no whitespace. */
export const serializeAccessKeyPair = (pair: AccessKeyPair): string =>
  JSON.stringify({ access_key_id: pair.access_key_id, secret_access_key: pair.secret_access_key });
