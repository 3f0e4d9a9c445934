import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Behaviour, reply } from './openai-upstream/behaviours.js';
import { type Exchange, perform } from './openai-upstream/respond.js';

/**
 * A fake api.openai.com for end-to-end tests and the gateway benchmark: the real wire (bodies,
 * headers, SSE framing, error shapes) on 127.0.0.1, scriptable per request for fault injection.
 * Queued behaviours are consumed first in, first out, each by the first request whose path it
 * accepts; when none applies, the default answers.
 *
 * ```ts
 * const fake = await startFakeOpenAI();
 * fake.enqueue(rateLimited({ retryAfterSeconds: 1 }), cutStream(3));
 * const client = new OpenAI({ apiKey: 'sk-test', baseURL: fake.baseUrl, maxRetries: 0 });
 * ```
 */

export type { Behaviour, ReplyOptions, StreamFault, ToolCallSpec } from './openai-upstream/behaviours.js';
export {
  cutStream,
  inBandError,
  onPath,
  oversized,
  rateLimited,
  rawBody,
  reply,
  reset,
  stall,
  stallMidStream,
  status,
  toolCalls,
  withKey,
} from './openai-upstream/behaviours.js';
export type { OpenAIErrorObject, TokenCounts } from './openai-upstream/wire.js';
export { embeddingVector, openAIError } from './openai-upstream/wire.js';

export interface RecordedRequest {
  method: string;
  /** Without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** The bearer token of `Authorization`, if any. */
  apiKey: string | undefined;
  /**
   * The parsed JSON body; undefined when the body was empty or not JSON. A multipart/form-data body
   * (image edits and variations) is read by the platform's own FormData parser (undici's, not the
   * gateway's) into its text fields, as strings, and `form.files`.
   */
  body: unknown;
  form?: { files: FakeFormFile[] };
  rawBody: Buffer;
  /** `Date.now()` when the body had been read. */
  receivedAt: number;
  /** The client's port: equal ports on two requests mean a reused keep-alive connection. */
  remotePort: number | undefined;
}

export interface FakeFormFile {
  field: string;
  filename: string;
  type: string;
  bytes: Buffer;
}

export interface FakeOpenAIOptions {
  /** What answers when the queue has nothing for a request; `reply()` unless given. */
  default?: Behaviour;
  /** Applies to every behaviour that names no key of its own. */
  requireKey?: string;
  /** 0 (any free port) unless given, e.g. for a benchmark that needs a stable address. */
  port?: number;
}

export interface FakeOpenAI {
  /** Origin, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** `url + '/v1'`, what OpenAI clients take as baseURL. */
  readonly baseUrl: string;
  /** Every request received so far, in arrival order (the array is live). */
  readonly requests: readonly RecordedRequest[];
  /**
   * The headers of every request as they arrived, before its body was read: a request cut mid-body
   * (its client killed) is here and not in `requests` (the array is live).
   */
  readonly arrivals: readonly IncomingHttpHeaders[];
  /** Behaviours still waiting in the queue. */
  readonly queued: number;
  enqueue(...behaviours: Behaviour[]): void;
  setDefault(behaviour: Behaviour): void;
  /** Empties the queue and the recorded requests and restores the initial default. */
  reset(): void;
  close(): Promise<void>;
}

const bearer = (header: string | undefined): string | undefined =>
  /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];

/** A multipart body as the platform's FormData parser reads it; undefined when it is not one. */
export const parseForm = async (
  raw: Buffer,
  contentType: string | undefined,
): Promise<{ fields: Record<string, string>; files: FakeFormFile[] } | undefined> => {
  if (!contentType?.startsWith('multipart/form-data')) return undefined;
  try {
    const form = await new Response(new Uint8Array(raw), {
      headers: { 'content-type': contentType },
    }).formData();
    const fields: Record<string, string> = {};
    const files: FakeFormFile[] = [];
    for (const [field, value] of form.entries()) {
      if (typeof value === 'string') fields[field] = value;
      else
        files.push({
          field,
          filename: value.name,
          type: value.type,
          bytes: Buffer.from(await value.arrayBuffer()),
        });
    }
    return { fields, files };
  } catch {
    return undefined;
  }
};

const parseJson = (raw: Buffer): unknown => {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
};

export const startFakeOpenAI = async (options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> => {
  const initialDefault = options.default ?? reply();
  let fallback = initialDefault;
  const queue: Behaviour[] = [];
  const requests: RecordedRequest[] = [];
  const arrivals: IncomingHttpHeaders[] = [];

  const server = createServer({ noDelay: true }, (req, res) => {
    arrivals.push(req.headers);
    const closed = new AbortController();
    res.on('close', () => closed.abort());
    const handle = async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const rawBody = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://fake');
      const form = await parseForm(rawBody, req.headers['content-type']);
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        apiKey: bearer(req.headers.authorization),
        body: form ? { ...form.fields } : parseJson(rawBody),
        ...(form ? { form: { files: form.files } } : {}),
        rawBody,
        receivedAt: Date.now(),
        remotePort: req.socket.remotePort,
      };
      requests.push(recorded);
      const index = queue.findIndex((b) => b.path === undefined || b.path === recorded.path);
      const behaviour = index >= 0 ? (queue.splice(index, 1)[0] ?? fallback) : fallback;
      const exchange: Exchange = { req, res, closed: closed.signal, ...recorded };
      await perform(exchange, behaviour, fallback, options.requireKey);
    };
    handle().catch((error: unknown) => {
      // A bug in the fake must fail the test that hit it loudly, not leave the client hanging.
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`fake upstream failed: ${String(error)}`);
    });
  });
  // Longer than undici's 4 s default, so the client, not the fake, decides when a pooled socket ends.
  server.keepAliveTimeout = 65_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    baseUrl: `${url}/v1`,
    requests,
    arrivals,
    get queued() {
      return queue.length;
    },
    enqueue: (...behaviours) => {
      queue.push(...behaviours);
    },
    setDefault: (behaviour) => {
      fallback = behaviour;
    },
    reset: () => {
      queue.length = 0;
      requests.length = 0;
      arrivals.length = 0;
      fallback = initialDefault;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
};
