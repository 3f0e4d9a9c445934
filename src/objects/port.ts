import type { Readable } from 'node:stream';

/**
 * Object-store port (ARCHITECTURE.md "Storage and the flow of data"): request
 * body packs, files and artifacts. Every object belongs to one organization: each method takes the
 * organization id and a key relative to it, and the store files the object under `<orgId>/<key>`,
 * so no key can name another organization's object. Adapters: files under the data dir
 * (`fs-store.ts`) and an S3-compatible bucket (`s3-store.ts`); `test/contract/objects.contract.ts`
 * holds both to the same behaviour, and `open.ts` picks one from the configuration.
 */

export type ObjectStoreAdapter = 'fs' | 's3';

export interface ObjectInfo {
  /** The key relative to the organization, as given to `put`. */
  key: string;
  size: number;
  modifiedAt: Date;
}

/** An object being read as a stream: its size when opened, and its bytes. */
export interface ObjectReadStream {
  size: number;
  /** One version of the object: a put or delete after the open does not change what it yields. */
  stream: Readable;
}

export interface ObjectStoreHealth {
  ok: boolean;
  adapter: ObjectStoreAdapter;
  error?: string;
}

/** A URL that reads one object without any other credential until `expires_at` (ISO 8601). */
export interface SignedObjectUrl {
  url: string;
  expires_at: string;
}

export interface ObjectStore {
  readonly adapter: ObjectStoreAdapter;
  /** Replaces the object atomically: a reader sees the old bytes or the new ones, never a mix. */
  put(orgId: string, key: string, data: Uint8Array | string): Promise<ObjectInfo>;
  /**
   * `put` for bytes that arrive over time (an upload): the object appears whole once `source` ends,
   * never before. When `source` throws, the error is rethrown and nothing is left at the key (a
   * previous object there is untouched). Nothing is held in memory beyond the chunk being written.
   */
  putStream(orgId: string, key: string, source: AsyncIterable<Uint8Array>): Promise<ObjectInfo>;
  /** Rejects with ObjectNotFoundError when absent. */
  get(orgId: string, key: string): Promise<Buffer>;
  /** The object as a stream, for objects too large to hold at once; ObjectNotFoundError when absent. */
  getStream(orgId: string, key: string): Promise<ObjectReadStream>;
  /**
   * Exactly `length` bytes from `offset`. A range reaching past the end is refused with
   * ObjectRangeError rather than cut short, so a caller never mistakes a partial read for a frame.
   */
  getRange(orgId: string, key: string, offset: number, length: number): Promise<Buffer>;
  /** Rejects with ObjectNotFoundError when absent. */
  stat(orgId: string, key: string): Promise<ObjectInfo>;
  /** True when something was deleted; deleting an absent key is not an error. */
  delete(orgId: string, key: string): Promise<boolean>;
  /** Objects whose key starts with `prefix` (a plain string prefix, as in S3), sorted by key. */
  list(orgId: string, prefix?: string): Promise<ObjectInfo[]>;
  health(): Promise<ObjectStoreHealth>;
  /**
   * A URL the backing store itself serves the object at, for `ttlSeconds`, so the bytes need not
   * pass through this process. Only stores that can sign such URLs have it (S3 presigning); the
   * object need not exist when the URL is made.
   */
  signedGetUrl?(orgId: string, key: string, ttlSeconds: number): Promise<SignedObjectUrl>;
}

/**
 * `unavailable`: the backing store refused the call or did not answer (an S3 403 or 5xx, a
 * network failure); the message says which, and never carries a credential.
 */
export type ObjectStoreErrorCode = 'not_found' | 'invalid_key' | 'out_of_range' | 'conflict' | 'unavailable';

export class ObjectStoreError extends Error {
  constructor(
    readonly code: ObjectStoreErrorCode,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ObjectStoreError';
  }
}

export class ObjectNotFoundError extends ObjectStoreError {
  constructor(
    readonly orgId: string,
    readonly key: string,
  ) {
    super('not_found', `no object ${key} for ${orgId}`);
    this.name = 'ObjectNotFoundError';
  }
}

export class InvalidObjectKeyError extends ObjectStoreError {
  constructor(message: string) {
    super('invalid_key', message);
    this.name = 'InvalidObjectKeyError';
  }
}

export class ObjectRangeError extends ObjectStoreError {
  constructor(message: string) {
    super('out_of_range', message);
    this.name = 'ObjectRangeError';
  }
}

/** An organization id becomes one path segment: letters, digits, `_` and `-` only. */
const ORG_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const MAX_KEY_LENGTH = 1024;
/** Temporary files of in-flight writes; no key may name one. */
export const TEMP_PREFIX = '.svc-tmp-';

/** An organization or tenant id the store can file objects under (the audit log's tenants too). */
export const isOrgId = (value: unknown): value is string =>
  typeof value === 'string' && ORG_ID_RE.test(value);

export const assertOrgId = (orgId: string): string => {
  if (!isOrgId(orgId)) {
    throw new InvalidObjectKeyError(`organization id ${JSON.stringify(orgId)} is not a plain identifier`);
  }
  return orgId;
};

const checkSegments = (key: string, what: string, allowPartialEnd: boolean): string[] => {
  if (typeof key !== 'string') throw new InvalidObjectKeyError(`${what} must be a string`);
  if (key.length > MAX_KEY_LENGTH)
    throw new InvalidObjectKeyError(`${what} is longer than ${MAX_KEY_LENGTH}`);
  if (key.includes('\0')) throw new InvalidObjectKeyError(`${what} contains a NUL byte`);
  if (key.includes('\\')) throw new InvalidObjectKeyError(`${what} contains a backslash`);
  if (key.startsWith('/')) throw new InvalidObjectKeyError(`${what} ${JSON.stringify(key)} is absolute`);
  const segments = key.split('/');
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '' && !(last && allowPartialEnd)) {
      throw new InvalidObjectKeyError(`${what} ${JSON.stringify(key)} has an empty segment`);
    }
    if (segment === '.' || segment === '..') {
      throw new InvalidObjectKeyError(`${what} ${JSON.stringify(key)} contains a '${segment}' segment`);
    }
    if (segment.startsWith(TEMP_PREFIX)) {
      throw new InvalidObjectKeyError(
        `${what} ${JSON.stringify(key)} uses the reserved prefix ${TEMP_PREFIX}`,
      );
    }
  });
  return segments;
};

/** A key: `/`-separated, relative, no empty, `.` or `..` segment, no NUL or backslash. */
export const assertObjectKey = (key: string): string[] => {
  if (key === '') throw new InvalidObjectKeyError('object key is empty');
  return checkSegments(key, 'object key', false);
};

/** A list prefix follows the key rules, except that it may be empty or end inside a segment. */
export const assertKeyPrefix = (prefix: string): string[] =>
  prefix === '' ? [''] : checkSegments(prefix, 'prefix', true);
