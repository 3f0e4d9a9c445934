import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AwsV4Signer } from 'aws4fetch';
import { type Dispatcher, request } from 'undici';
import { ObjectStoreError, type SignedObjectUrl } from './port.js';
import { describeS3Error } from './s3-xml.js';

/** The longest X-Amz-Expires S3 accepts: seven days. */
export const MAX_SIGNED_URL_SECONDS = 604_800;
/** Attempts of an idempotent call that meets a 5xx, a 429 or a network failure. */
const ATTEMPTS = 3;
/** The most of an error answer read to describe it. */
const MAX_ERROR_BYTES = 64 * 1024;

export interface S3ClientOptions {
  /** The S3 API, `http(s)://host[:port][/path]`. */
  endpoint: string;
  bucket: string;
  /** The signing region. */
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `path`: `endpoint/bucket/key` (the default); `virtual`: `bucket.endpoint/key`. */
  addressing?: 'path' | 'virtual';
  /** Milliseconds to wait for an answer's headers, and between its body's bytes. Default 30 s. */
  timeoutMs?: number;
}

type Method = 'GET' | 'HEAD' | 'PUT' | 'POST' | 'DELETE';
export type S3Answer = Dispatcher.ResponseData;
type Answer = S3Answer;

/** A URL path segment or query value, encoded as SigV4 canonicalizes it (RFC 3986). */
const encode = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const sha256Hex = (body: Buffer | undefined): string =>
  createHash('sha256')
    .update(body ?? '')
    .digest('hex');

export const headerOf = (answer: Answer, name: string): string | undefined => {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * One bucket of an S3-compatible API: calls signed with SigV4 (aws4fetch) and sent with undici,
 * bounded retries, S3's errors described. The secret access key lives in a private field: it feeds
 * the signatures only, and no message, error or inspection of the client shows it.
 */
export class S3Client {
  readonly bucket: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly #secretAccessKey: string;
  /** aws4fetch's cache of daily signing keys; its map keys hold the secret, so it is private too. */
  readonly #signingKeys = new Map<string, ArrayBuffer>();
  private readonly base: URL;
  private readonly addressing: 'path' | 'virtual';
  private readonly timeoutMs: number;

  constructor(options: S3ClientOptions) {
    this.base = new URL(options.endpoint);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:')
      throw new Error(`the S3 endpoint must be an http(s) URL, not ${this.base.protocol}`);
    if (options.bucket === '') throw new Error('the S3 bucket name is empty');
    this.bucket = options.bucket;
    this.region = options.region;
    this.accessKeyId = options.accessKeyId;
    this.#secretAccessKey = options.secretAccessKey;
    this.addressing = options.addressing ?? 'path';
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /**
   * Signs and sends one call. An idempotent one (every method but POST) is tried again, twice at
   * most, when the store answers 5xx or 429 or does not answer; any other answer is returned.
   */
  async send(
    method: Method,
    name: string | null,
    call: {
      query?: Record<string, string>;
      headers?: Record<string, string>;
      body?: Buffer;
      /** One attempt with this bound on the whole call (a health check: never piles up). */
      onceWithinMs?: number;
    } = {},
  ): Promise<Answer> {
    const attempts = method === 'POST' || call.onceWithinMs !== undefined ? 1 : ATTEMPTS;
    for (let attempt = 1; ; attempt++) {
      const last = attempt === attempts;
      let answer: Answer;
      try {
        // The body's SHA-256 is signed, not UNSIGNED-PAYLOAD: S3 refuses bytes that are not the ones
        // signed, so a 200 to a PUT means exactly these bytes were stored.
        const signer = new AwsV4Signer({
          method,
          url: this.urlOf(name, call.query ?? {}),
          headers: { ...call.headers, 'x-amz-content-sha256': sha256Hex(call.body) },
          ...this.credentials(),
        });
        const signed = await signer.sign();
        answer = await request(signed.url, {
          method,
          headers: Object.fromEntries(signed.headers),
          body: call.body ?? null,
          headersTimeout: call.onceWithinMs ?? this.timeoutMs,
          bodyTimeout: call.onceWithinMs ?? this.timeoutMs,
          ...(call.onceWithinMs === undefined ? {} : { signal: AbortSignal.timeout(call.onceWithinMs) }),
        });
      } catch (err) {
        if (!last) {
          await sleep(100 * 2 ** attempt);
          continue;
        }
        const code = (err as { code?: unknown }).code;
        throw this.unavailable(
          `S3 ${method} of ${name ?? '(the bucket)'} got no answer from ${this.base.host} (${typeof code === 'string' ? code : err instanceof Error ? err.message : 'failure'})`,
          err,
        );
      }
      if (last || (answer.statusCode < 500 && answer.statusCode !== 429)) return answer;
      await answer.body.dump();
      await sleep(100 * 2 ** attempt);
    }
  }

  /** The error an unexpected answer means, with S3's code and message when it sent them. */
  async failure(what: string, name: string, answer: Answer): Promise<ObjectStoreError> {
    const chunks: Buffer[] = [];
    let read = 0;
    try {
      for await (const chunk of answer.body as AsyncIterable<Buffer>) {
        if (read < MAX_ERROR_BYTES) chunks.push(chunk);
        read += chunk.byteLength;
      }
    } catch {}
    const said = describeS3Error(Buffer.concat(chunks).toString('utf8'));
    return this.unavailable(
      `S3 ${what} of ${name} in bucket ${this.bucket} answered ${answer.statusCode}${said ? ` ${said.slice(0, 300)}` : ''}`,
    );
  }

  unavailable(message: string, cause?: unknown): ObjectStoreError {
    return new ObjectStoreError('unavailable', message, cause === undefined ? {} : { cause });
  }

  private credentials() {
    return {
      accessKeyId: this.accessKeyId,
      secretAccessKey: this.#secretAccessKey,
      service: 's3',
      region: this.region,
      cache: this.#signingKeys,
    };
  }

  /** A SigV4 presigned GET of a bucket key (query-string signing, X-Amz-Expires). */
  async presignGet(name: string, ttlSeconds: number): Promise<SignedObjectUrl> {
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_SIGNED_URL_SECONDS)
      throw new RangeError(`a signed URL lives 1 to ${MAX_SIGNED_URL_SECONDS} seconds, not ${ttlSeconds}`);
    // Whole seconds: X-Amz-Date has no finer unit, and expires_at must be the instant S3 enforces.
    const signedAt = Math.floor(Date.now() / 1000) * 1000;
    const signer = new AwsV4Signer({
      method: 'GET',
      url: this.urlOf(name, { 'X-Amz-Expires': String(ttlSeconds) }),
      ...this.credentials(),
      datetime: new Date(signedAt).toISOString().replace(/[:-]|\.\d{3}/g, ''),
      signQuery: true,
    });
    const signed = await signer.sign();
    return { url: signed.url.toString(), expires_at: new Date(signedAt + ttlSeconds * 1000).toISOString() };
  }

  /** The URL of a bucket key (or of the bucket itself, for `null`), in the configured addressing. */
  private urlOf(name: string | null, query: Record<string, string>): string {
    const basePath = this.base.pathname.replace(/\/+$/, '');
    const keyPath = name === null ? '' : `/${name.split('/').map(encode).join('/')}`;
    const origin =
      this.addressing === 'path'
        ? `${this.base.origin}${basePath}/${encode(this.bucket)}`
        : `${this.base.protocol}//${this.bucket}.${this.base.host}${basePath}`;
    const search = Object.entries(query)
      .map(([k, v]) => (v === '' ? encode(k) : `${encode(k)}=${encode(v)}`))
      .join('&');
    const path = keyPath === '' && this.addressing === 'virtual' ? '/' : keyPath;
    return `${origin}${path}${search === '' ? '' : `?${search}`}`;
  }
}
