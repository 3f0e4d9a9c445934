import {
  assertKeyPrefix,
  assertObjectKey,
  assertOrgId,
  type ObjectInfo,
  ObjectNotFoundError,
  ObjectRangeError,
  type ObjectReadStream,
  type ObjectStore,
  type ObjectStoreHealth,
  type SignedObjectUrl,
} from './port.js';
import { type S3Answer as Answer, headerOf, S3Client, type S3ClientOptions } from './s3-client.js';
import { completeUploadXml, describeS3Error, parseListPage, xmlField } from './s3-xml.js';

/** Below the health registry's own bound (2 s), so a check never outlives the probe that asked. */
const HEALTH_TIMEOUT_MS = 1_500;

const MiB = 1024 * 1024;
/** S3's smallest part of a multipart upload, the last one excepted. */
export const MIN_PART_SIZE = 5 * MiB;

export interface S3ObjectStoreOptions extends S3ClientOptions {
  /** Keys live under `<prefix>/` in the bucket (a bucket shared with other data); none when empty. */
  prefix?: string;
  /** Bytes of each part of a multipart putStream; at least 5 MiB. Default 8 MiB. */
  partSize?: number;
}

/** Sorted as the filesystem store sorts, so both adapters list in one order. */
const byKey = (a: ObjectInfo, b: ObjectInfo): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

const isObjectKey = (key: string): boolean => {
  try {
    assertObjectKey(key);
    return true;
  } catch {
    return false;
  }
};

interface Upload {
  /** The bucket key. */
  name: string;
  id: string;
  etags: string[];
  size: number;
}

/**
 * The S3-compatible adapter: the object `<orgId>/<key>` is the bucket key
 * `<prefix>/<orgId>/<key>`. S3 replaces a key atomically on a PUT or a completed multipart upload,
 * and a GET reads one version, which is what the port asks. The wire (signing, retries, errors,
 * the secret) is the S3Client's.
 */
export class S3ObjectStore implements ObjectStore {
  readonly adapter = 's3' as const;
  private readonly client: S3Client;
  /** `<prefix>/`, or empty. */
  private readonly root: string;
  private readonly partSize: number;

  constructor(options: S3ObjectStoreOptions) {
    this.client = new S3Client(options);
    const prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.root = prefix === '' ? '' : `${assertObjectKey(prefix).join('/')}/`;
    this.partSize = options.partSize ?? 8 * MiB;
    if (!Number.isSafeInteger(this.partSize) || this.partSize < MIN_PART_SIZE)
      throw new Error(`the multipart part size must be at least ${MIN_PART_SIZE} bytes`);
  }

  get bucket(): string {
    return this.client.bucket;
  }

  get region(): string {
    return this.client.region;
  }

  async put(orgId: string, key: string, data: Uint8Array | string): Promise<ObjectInfo> {
    const name = this.nameOf(orgId, key);
    const body =
      typeof data === 'string'
        ? Buffer.from(data, 'utf8')
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    return this.putWhole(name, key, body);
  }

  /**
   * Holds at most one part (plus the chunk that fills it): a part goes out once more than a part is
   * held, so a stream that fits in one part is a single PUT, and a longer one a multipart upload
   * that appears at the key only when completed (S3 takes 10,000 parts: 78 GiB at 8 MiB). A failure
   * aborts the upload, leaving no object.
   */
  async putStream(orgId: string, key: string, source: AsyncIterable<Uint8Array>): Promise<ObjectInfo> {
    const name = this.nameOf(orgId, key);
    let held: Buffer[] = [];
    let heldBytes = 0;
    let upload: Upload | null = null;
    try {
      for await (const chunk of source) {
        // A copy: a source may reuse its buffer once it is asked for the next chunk.
        held.push(Buffer.from(chunk));
        heldBytes += chunk.byteLength;
        if (heldBytes <= this.partSize) continue;
        let rest = Buffer.concat(held, heldBytes);
        while (rest.byteLength > this.partSize) {
          upload ??= await this.startUpload(name);
          await this.uploadPart(upload, rest.subarray(0, this.partSize));
          rest = rest.subarray(this.partSize);
        }
        held = [rest];
        heldBytes = rest.byteLength;
      }
      const last = Buffer.concat(held, heldBytes);
      if (upload === null) return await this.putWhole(name, key, last);
      await this.uploadPart(upload, last);
      return await this.completeUpload(upload, key);
    } catch (err) {
      if (upload !== null) await this.abortUpload(upload);
      throw err;
    }
  }

  async get(orgId: string, key: string): Promise<Buffer> {
    const answer = await this.readObject(orgId, key, {});
    return Buffer.from(await answer.body.arrayBuffer());
  }

  async getStream(orgId: string, key: string): Promise<ObjectReadStream> {
    // One GET is one version of the object, whatever is put or deleted while it is read.
    const answer = await this.readObject(orgId, key, {});
    return { size: Number(headerOf(answer, 'content-length') ?? 0), stream: answer.body };
  }

  /**
   * One ranged GET; the answer's Content-Range names the object's size, so a range past the end is
   * refused from it (S3 would otherwise cut the range short, or answer 416 when it starts past).
   */
  async getRange(orgId: string, key: string, offset: number, length: number): Promise<Buffer> {
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
      throw new ObjectRangeError(
        `range offset ${offset} length ${length} is not a pair of non-negative integers`,
      );
    }
    if (length === 0) {
      // HTTP has no empty range; the size alone says whether offset is inside the object.
      const { size } = await this.stat(orgId, key);
      if (offset > size)
        throw new ObjectRangeError(`offset ${offset} is past the end of ${key} (${size} bytes)`);
      return Buffer.alloc(0);
    }
    const range = `bytes=${offset}-${offset + length - 1}`;
    const name = this.nameOf(orgId, key);
    // 200: a store that ignores Range sends the whole object.
    const answer = await this.readObject(orgId, key, { range }, [200, 206, 416]);
    // "bytes 10-19/256", or "bytes */256" with a 416: the first byte sent and the object's size.
    const sent = /^bytes (?:(\d+)-\d+|\*)\/(\d+)$/.exec(headerOf(answer, 'content-range') ?? '');
    const whole = answer.statusCode === 200;
    const start = whole ? 0 : Number(sent?.[1] ?? Number.NaN);
    const size = Number((whole ? headerOf(answer, 'content-length') : sent?.[2]) ?? Number.NaN);
    if (answer.statusCode === 416 || offset + length > size) {
      // Not read whole: the answer may be the rest of a large object.
      await answer.body.dump();
      throw new ObjectRangeError(
        `range ${offset}+${length} is past the end of ${key}${Number.isNaN(size) ? '' : ` (${size} bytes)`}`,
      );
    }
    // A store may send more than asked (s3rver answers bytes=0-0 with the whole object), never less.
    if (!(start <= offset && offset + length <= size)) {
      await answer.body.dump();
      throw this.client.unavailable(
        `S3 GET ${range} of ${name} answered Content-Range ${sent?.[0] ?? 'none'}`,
      );
    }
    const part = Buffer.from(await answer.body.arrayBuffer()).subarray(
      offset - start,
      offset - start + length,
    );
    if (part.byteLength !== length)
      throw this.client.unavailable(`S3 GET ${range} of ${name} answered ${part.byteLength} bytes`);
    return part;
  }

  async stat(orgId: string, key: string): Promise<ObjectInfo> {
    const answer = await this.head(this.nameOf(orgId, key));
    if (answer === null) throw new ObjectNotFoundError(orgId, key);
    return {
      key,
      size: Number(headerOf(answer, 'content-length') ?? 0),
      modifiedAt: this.dateOf(answer, 'last-modified'),
    };
  }

  /** S3's DELETE answers alike whether or not the key existed; a HEAD first tells which. */
  async delete(orgId: string, key: string): Promise<boolean> {
    const name = this.nameOf(orgId, key);
    if ((await this.head(name)) === null) return false;
    const answer = await this.client.send('DELETE', name);
    await answer.body.dump();
    if (answer.statusCode !== 204 && answer.statusCode !== 200)
      throw await this.client.failure('DELETE', name, answer);
    return true;
  }

  async list(orgId: string, prefix = ''): Promise<ObjectInfo[]> {
    const orgRoot = `${this.root}${assertOrgId(orgId)}/`;
    assertKeyPrefix(prefix);
    const found: ObjectInfo[] = [];
    let token: string | undefined;
    do {
      const query: Record<string, string> = {
        'list-type': '2',
        prefix: orgRoot + prefix,
        'encoding-type': 'url',
      };
      if (token !== undefined) query['continuation-token'] = token;
      const answer = await this.client.send('GET', null, { query });
      if (answer.statusCode !== 200) throw await this.client.failure('GET (list)', orgRoot + prefix, answer);
      const page = parseListPage(await answer.body.text());
      for (const o of page.objects) {
        const key = o.key.slice(orgRoot.length);
        // Keys written past this store (a console's `dir/` marker, say) are not objects of the port.
        if (o.key.startsWith(orgRoot) && isObjectKey(key))
          found.push({ key, size: o.size, modifiedAt: o.modifiedAt });
      }
      token = page.nextToken;
    } while (token !== undefined);
    return found.sort(byKey);
  }

  /**
   * A HEAD of the bucket: one attempt within HEALTH_TIMEOUT_MS, and checks asked for while one is
   * in flight share it, so probes against a store that hangs hold one connection, not one each.
   */
  health(): Promise<ObjectStoreHealth> {
    this.checking ??= this.checkHealth().finally(() => {
      this.checking = null;
    });
    return this.checking;
  }

  private checking: Promise<ObjectStoreHealth> | null = null;

  private async checkHealth(): Promise<ObjectStoreHealth> {
    try {
      const answer = await this.client.send('HEAD', null, { onceWithinMs: HEALTH_TIMEOUT_MS });
      if (answer.statusCode !== 200) throw await this.client.failure('HEAD', '(the bucket)', answer);
      await answer.body.dump();
      return { ok: true, adapter: 's3' };
    } catch (err) {
      return { ok: false, adapter: 's3', error: err instanceof Error ? err.message : String(err) };
    }
  }

  /** A SigV4 presigned GET (query-string signing, X-Amz-Expires); the secret signs it, never travels. */
  async signedGetUrl(orgId: string, key: string, ttlSeconds: number): Promise<SignedObjectUrl> {
    return this.client.presignGet(this.nameOf(orgId, key), ttlSeconds);
  }

  private async putWhole(name: string, key: string, body: Buffer): Promise<ObjectInfo> {
    const answer = await this.client.send('PUT', name, {
      body,
      headers: { 'content-type': 'application/octet-stream' },
    });
    await answer.body.dump();
    if (answer.statusCode !== 200) throw await this.client.failure('PUT', name, answer);
    return { key, size: body.byteLength, modifiedAt: this.dateOf(answer, 'date') };
  }

  private async startUpload(name: string): Promise<Upload> {
    const answer = await this.client.send('POST', name, {
      query: { uploads: '' },
      headers: { 'content-type': 'application/octet-stream' },
    });
    if (answer.statusCode !== 200) throw await this.client.failure('POST (start upload)', name, answer);
    const id = xmlField(await answer.body.text(), 'UploadId');
    if (!id) throw this.client.unavailable(`POST (start upload) of ${name} answered no upload id`);
    return { name, id, etags: [], size: 0 };
  }

  private async uploadPart(upload: Upload, body: Buffer): Promise<void> {
    const partNumber = String(upload.etags.length + 1);
    const answer = await this.client.send('PUT', upload.name, {
      query: { partNumber, uploadId: upload.id },
      body,
    });
    await answer.body.dump();
    const etag = headerOf(answer, 'etag');
    if (answer.statusCode !== 200 || !etag)
      throw await this.client.failure(`PUT (part ${partNumber})`, upload.name, answer);
    upload.etags.push(etag);
    upload.size += body.byteLength;
  }

  private async completeUpload(upload: Upload, key: string): Promise<ObjectInfo> {
    const answer = await this.client.send('POST', upload.name, {
      query: { uploadId: upload.id },
      body: Buffer.from(completeUploadXml(upload.etags)),
      headers: { 'content-type': 'application/xml' },
    });
    const text = await answer.body.text();
    // S3 may answer 200 and still have failed: the error is then the body.
    const error = describeS3Error(text);
    if (answer.statusCode !== 200 || error !== null)
      throw this.client.unavailable(
        `POST (complete upload) of ${upload.name} answered ${answer.statusCode} ${error ?? ''}`,
      );
    return { key, size: upload.size, modifiedAt: this.dateOf(answer, 'date') };
  }

  /**
   * Best effort: the source's error is the one to report. An upload left behind holds parts, never
   * an object at the key; a bucket lifecycle rule (AbortIncompleteMultipartUpload) reclaims them.
   */
  private async abortUpload(upload: Upload): Promise<void> {
    try {
      const answer = await this.client.send('DELETE', upload.name, { query: { uploadId: upload.id } });
      await answer.body.dump();
    } catch {}
  }

  /** The HEAD of a bucket key; null when there is no object there. */
  private async head(name: string): Promise<Answer | null> {
    const answer = await this.client.send('HEAD', name);
    if (answer.statusCode === 404) {
      await answer.body.dump();
      return null;
    }
    if (answer.statusCode !== 200) throw await this.client.failure('HEAD', name, answer);
    await answer.body.dump();
    return answer;
  }

  /** A GET of the object that answered one of `expected` (200 unless told), or the error it means. */
  private async readObject(
    orgId: string,
    key: string,
    headers: Record<string, string>,
    expected: readonly number[] = [200],
  ): Promise<Answer> {
    const name = this.nameOf(orgId, key);
    const answer = await this.client.send('GET', name, { headers });
    if (expected.includes(answer.statusCode)) return answer;
    const failure = await this.client.failure('GET', name, answer);
    // A missing bucket is the store's trouble, not a missing object.
    if (answer.statusCode === 404 && !/NoSuchBucket/.test(failure.message))
      throw new ObjectNotFoundError(orgId, key);
    throw failure;
  }

  /** The bucket key of an object, after the port's rules on the organization and the key. */
  private nameOf(orgId: string, key: string): string {
    return `${this.root}${assertOrgId(orgId)}/${assertObjectKey(key).join('/')}`;
  }

  private dateOf(answer: Answer, header: 'date' | 'last-modified'): Date {
    const at = new Date(headerOf(answer, header) ?? Number.NaN);
    return Number.isNaN(at.getTime()) ? new Date() : at;
  }
}
