import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { type Dispatcher, request } from 'undici';

/**
 * An S3-compatible server for the tests: s3rver behind a front that checks SigV4 signatures
 * (header and presigned), aborts multipart uploads, pages listings and answers ranges of empty
 * objects as S3 does (what s3rver lacks; test/contract/objects.contract.ts runs the contract on it).
 */

/** The one key pair the test S3 server accepts; the secret must never show in a message. */
export const TEST_S3_CREDENTIALS = {
  accessKeyId: 'svc-test-access-key',
  secretAccessKey: 'svc-test-secret-NEVER-SHOWN-3f9a',
};
export const TEST_S3_REGION = 'us-east-1';

export interface TestS3Server {
  /** `http://127.0.0.1:<port>`, path-style. */
  endpoint: string;
  bucket: string;
  /**
   * The bucket keys under `prefix`, less the prefix, as s3rver keeps them on disk: objects, and
   * `(unfinished upload) <key>` for each multipart upload begun and neither completed nor aborted.
   */
  keysOnDisk(prefix: string): Promise<string[]>;
  /** The upload ids of the AbortMultipartUpload calls answered. */
  aborted: string[];
  close(): Promise<void>;
}

interface S3rver {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  configureBuckets: { name: string }[];
}) => S3rver;

const OBJECT_SUFFIX = '._S3rver_object';
const UPLOADS = '._S3rver_uploads';
const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const QUERY_AUTH = new Set([
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
]);

const single = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
const rfc3986 = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const amzDate = (value: string): Date | null => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : null;
};

interface Refusal {
  status: number;
  code: string;
  message: string;
}
const SIGNATURE_MISMATCH: Refusal = {
  status: 403,
  code: 'SignatureDoesNotMatch',
  message: 'The request signature we calculated does not match the signature you provided.',
};

/**
 * Checks a request's SigV4 signature as S3 does, with the AWS SDK's own signer (independent of the
 * store under test): an Authorization header over the headers it names and the payload hash it
 * claims (which must be the body's), or a presigned query string and its expiry. Anything else is
 * refused: the bucket is private.
 */
const verifySigV4 = async (
  method: string,
  url: URL,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<Refusal | null> => {
  const signer = new SignatureV4({
    credentials: TEST_S3_CREDENTIALS,
    region: TEST_S3_REGION,
    service: 's3',
    sha256: Sha256,
    // S3 signs the key encoded once; the canonical form of what arrived is re-encoded here.
    uriEscapePath: false,
    applyChecksum: false,
  });
  const path = url.pathname
    .split('/')
    .map((s) => rfc3986(decodeURIComponent(s)))
    .join('/');
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const host = single(headers.host);
  const request = { method, protocol: 'http:', hostname: host.replace(/:\d+$/, ''), path };
  const unknownKey = (id: string | undefined): Refusal | null =>
    id === TEST_S3_CREDENTIALS.accessKeyId
      ? null
      : {
          status: 403,
          code: 'InvalidAccessKeyId',
          message: 'The AWS Access Key Id you provided does not exist.',
        };

  const authorization = single(headers.authorization);
  if (authorization !== '') {
    const auth = AUTH.exec(authorization);
    if (!auth) return { status: 400, code: 'AuthorizationHeaderMalformed', message: 'malformed' };
    const [, keyId, , , signedList, signature] = auth as unknown as string[];
    const signingDate = amzDate(single(headers['x-amz-date']));
    if (!signingDate || Math.abs(Date.now() - signingDate.getTime()) > 15 * 60_000)
      return { status: 403, code: 'RequestTimeTooSkewed', message: 'x-amz-date is missing or too far off' };
    const claimed = single(headers['x-amz-content-sha256']);
    if (claimed !== 'UNSIGNED-PAYLOAD' && claimed !== createHash('sha256').update(body).digest('hex'))
      return { status: 400, code: 'XAmzContentSHA256Mismatch', message: 'the body is not the one signed' };
    const names = signedList!.split(';');
    const signed = Object.fromEntries(names.map((n) => [n, single(headers[n])]));
    const resigned = await signer.sign(
      { ...request, query, headers: signed },
      { signingDate, signableHeaders: new Set(names) },
    );
    return (
      unknownKey(keyId) ??
      (AUTH.exec(resigned.headers.authorization ?? '')?.[5] === signature ? null : SIGNATURE_MISMATCH)
    );
  }
  if (query['X-Amz-Signature'] !== undefined) {
    const refused = unknownKey(query['X-Amz-Credential']?.split('/')[0]);
    if (refused) return refused;
    const signingDate = amzDate(query['X-Amz-Date'] ?? '');
    const expiresIn = Number(query['X-Amz-Expires']);
    if (!signingDate || !Number.isSafeInteger(expiresIn))
      return {
        status: 400,
        code: 'AuthorizationQueryParametersError',
        message: 'bad X-Amz-Date or X-Amz-Expires',
      };
    const rest = Object.fromEntries(Object.entries(query).filter(([k]) => !QUERY_AUTH.has(k)));
    const unsigned = new Set(['x-amz-content-sha256']);
    const presigned = await signer.presign(
      { ...request, query: rest, headers: { host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } },
      { signingDate, expiresIn, unsignableHeaders: unsigned, unhoistableHeaders: unsigned },
    );
    if (presigned.query?.['X-Amz-Signature'] !== query['X-Amz-Signature']) return SIGNATURE_MISMATCH;
    if (Date.now() > signingDate.getTime() + expiresIn * 1000)
      return { status: 403, code: 'AccessDenied', message: 'Request has expired' };
    return null;
  }
  return { status: 403, code: 'AccessDenied', message: 'Access Denied' };
};

/** s3rver escapes XML text with the `he` package: named and hexadecimal references. */
const unescapeXml = (text: string): string =>
  text.replace(/&(#x[0-9a-fA-F]+|amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e.startsWith('#x')
      ? String.fromCodePoint(Number.parseInt(e.slice(2), 16))
      : ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[e]!,
  );

/** Hop-by-hop and framing headers, set again by whoever sends the next hop. */
const NOT_FORWARDED = new Set([
  'host',
  'authorization',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
]);

/**
 * A private S3 bucket for one test file: s3rver (an S3 API over a directory, from npm) on a free
 * port of 127.0.0.1 over a temporary directory, behind a front on another free port that adds what
 * s3rver lacks and a real bucket has. s3rver skips SigV4 signatures and serves anyone; the front
 * verifies every request's signature (verifySigV4) and refuses the rest. s3rver has no
 * AbortMultipartUpload (it answers 405); the front does it as S3 does, dropping the upload's parts.
 */
export const startS3Server = async ({
  bucket = 'svc-test',
  listPageSize = 1000,
}: {
  bucket?: string;
  listPageSize?: number;
} = {}): Promise<TestS3Server> => {
  const S3rverServer = createRequire(import.meta.url)('s3rver') as S3rverClass;
  const directory = await mkdtemp(join(tmpdir(), 'svc-s3rver-'));
  const s3rver = new S3rverServer({
    address: '127.0.0.1',
    port: 0,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket }],
  });
  const inner = await s3rver.run();
  const aborted: string[] = [];

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://front');
    const method = req.method ?? 'GET';
    const refusal = await verifySigV4(method, url, req.headers, body);
    if (refusal) {
      res.writeHead(refusal.status, { 'content-type': 'application/xml' });
      res.end(
        `<?xml version="1.0"?><Error><Code>${refusal.code}</Code><Message>${refusal.message}</Message></Error>`,
      );
      return;
    }
    const uploadId = url.searchParams.get('uploadId');
    if (method === 'DELETE' && uploadId !== null) {
      // s3rver names an upload's directory by its id: 32 hex digits.
      if (!/^[0-9a-f]{32}$/.test(uploadId)) {
        res.writeHead(404).end();
        return;
      }
      aborted.push(uploadId);
      await rm(join(directory, bucket, UPLOADS, uploadId), { recursive: true, force: true });
      res.writeHead(204).end();
      return;
    }
    for (const name of QUERY_AUTH) url.searchParams.delete(name);
    const listing =
      method === 'GET' &&
      url.pathname.replace(/\/$/, '') === `/${bucket}` &&
      url.searchParams.get('list-type') === '2';
    if (listing) {
      // s3rver's continuation tokens are DES-encrypted, which OpenSSL 3 (Node 17 on) no longer has:
      // a truncated page fails with 500. Its version-1 listing pages by the last key instead; the
      // token here is that key, and the page is at most `listPageSize` keys, as S3 may choose.
      const token = url.searchParams.get('continuation-token');
      url.searchParams.delete('list-type');
      url.searchParams.delete('continuation-token');
      if (token) url.searchParams.set('marker', Buffer.from(token, 'base64url').toString('utf8'));
      url.searchParams.set(
        'max-keys',
        String(Math.min(Number(url.searchParams.get('max-keys') ?? 1000), listPageSize)),
      );
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (!NOT_FORWARDED.has(name)) headers[name] = single(value);
    const target = `http://127.0.0.1:${inner.port}${url.pathname}${url.search}`;
    if (method === 'GET' && headers.range !== undefined) {
      // s3rver answers a ranged GET of an empty object with a promised byte it never sends; S3 says 416.
      const head = await request(target, { method: 'HEAD' });
      await head.body.dump();
      if (head.statusCode === 200 && head.headers['content-length'] === '0') {
        res.writeHead(416, { 'content-type': 'application/xml', 'content-range': 'bytes */0' });
        res.end(
          '<?xml version="1.0"?><Error><Code>InvalidRange</Code><Message>The requested range is not satisfiable</Message></Error>',
        );
        return;
      }
    }
    const answer = await request(target, {
      method: method as Dispatcher.HttpMethod,
      headers,
      body: method === 'GET' || method === 'HEAD' ? null : body,
    });
    const back: Record<string, string> = {};
    for (const [name, value] of Object.entries(answer.headers))
      if (!NOT_FORWARDED.has(name) || name === 'content-length') back[name] = single(value);
    if (!listing || answer.statusCode !== 200) {
      res.writeHead(answer.statusCode, back);
      await pipeline(answer.body, res);
      return;
    }
    let page = await answer.body.text();
    const keys = [...page.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => unescapeXml(m[1]!));
    if (page.includes('<IsTruncated>true</IsTruncated>') && keys.length > 0)
      page = page.replace(
        '</ListBucketResult>',
        `<NextContinuationToken>${Buffer.from(keys.at(-1)!).toString('base64url')}</NextContinuationToken></ListBucketResult>`,
      );
    back['content-length'] = String(Buffer.byteLength(page));
    res.writeHead(200, back);
    res.end(page);
  };
  const front = createServer((req, res) => {
    serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const { port } = front.address() as AddressInfo;

  const walk = async (dir: string, under: string): Promise<string[]> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const found: string[] = [];
    for (const e of entries) {
      if (e.isDirectory() && e.name !== UPLOADS)
        found.push(...(await walk(join(dir, e.name), `${under}${e.name}/`)));
      else if (e.name.endsWith(OBJECT_SUFFIX))
        found.push(`${under}${e.name.slice(0, -OBJECT_SUFFIX.length)}`);
    }
    return found;
  };
  let closed = false;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    aborted,
    keysOnDisk: async (prefix) => {
      const objects = await walk(join(directory, bucket), '');
      const uploads = join(directory, bucket, UPLOADS);
      const pending = await Promise.all(
        (await readdir(uploads).catch(() => [])).map((id) => readFile(join(uploads, id, 'key'), 'utf8')),
      );
      const under = (keys: string[]) =>
        keys.filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
      return [...under(objects), ...under(pending).map((k) => `(unfinished upload) ${k}`)].sort();
    },
    // Idempotent: a test that takes the store away and its afterAll both close it.
    close: async () => {
      if (closed) return;
      closed = true;
      front.closeAllConnections();
      await new Promise((resolve) => front.close(resolve));
      await s3rver.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
};
