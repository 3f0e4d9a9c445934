import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AnthropicErrorBody,
  anthropicError,
  bufferedMessage,
  type MessageSpec,
  promptTokens,
  randomId,
  resolve,
  STATUS_ERROR_TYPES,
  sseFrame,
  streamFrames,
} from './anthropic-upstream-wire.js';

/**
 * A fake api.anthropic.com Messages server for end-to-end tests: the real wire (bodies, headers,
 * SSE event sequence, error envelope) on 127.0.0.1, scriptable per request for thinking, redacted
 * thinking, tool use, cache usage, server tools, error statuses, cut streams and in-band errors.
 * Every request is recorded with its headers (x-api-key, anthropic-version, anthropic-beta).
 *
 * ```ts
 * const fake = await startFakeAnthropic();
 * fake.enqueue(message({ blocks: [{ type: 'thinking', thinking: 'hm', signature: 'sig' }] }));
 * const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: fake.url, maxRetries: 0 });
 * ```
 */

export type {
  AnthropicErrorBody,
  BlockSpec,
  MessageSpec,
  StopReason,
  UsageSpec,
} from './anthropic-upstream-wire.js';
export { anthropicError } from './anthropic-upstream-wire.js';

export type Behaviour =
  | {
      kind: 'message';
      spec: MessageSpec;
      fault?: { kind: 'cut' | 'error'; afterEvents: number; error?: AnthropicErrorBody };
    }
  | { kind: 'status'; status: number; body: AnthropicErrorBody | string }
  | { kind: 'count'; inputTokens: number }
  | { kind: 'stall'; ms: number };

/** A reply per the script: buffered JSON or the event stream, whichever the request asked for. */
export const message = (spec: MessageSpec = {}): Behaviour => ({ kind: 'message', spec });

/** An error status in Anthropic's envelope; the error type follows the status unless given. */
export const status = (code: number, message = 'fake upstream error', type?: string): Behaviour => ({
  kind: 'status',
  status: code,
  body: anthropicError(type ?? STATUS_ERROR_TYPES[code] ?? 'api_error', message),
});

/** A non-JSON error body (a proxy's HTML page, say). */
export const rawStatus = (code: number, text: string): Behaviour => ({
  kind: 'status',
  status: code,
  body: text,
});

/** Destroys the socket after `afterEvents` SSE events: no message_delta, no message_stop. */
export const cutStream = (afterEvents: number, spec: MessageSpec = {}): Behaviour => ({
  kind: 'message',
  spec,
  fault: { kind: 'cut', afterEvents },
});

/** Sends `event: error` after `afterEvents` events of a 200 stream, then ends it. */
export const inBandError = (
  afterEvents: number,
  error: AnthropicErrorBody = anthropicError('overloaded_error', 'Overloaded'),
  spec: MessageSpec = {},
): Behaviour => ({ kind: 'message', spec, fault: { kind: 'error', afterEvents, error } });

/** The count_tokens answer; by default ceil(bytes of system + messages / 4). */
export const count = (inputTokens: number): Behaviour => ({ kind: 'count', inputTokens });

/** Holds the request before any header, then answers with the default. */
export const stall = (ms: number): Behaviour => ({ kind: 'stall', ms });

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** x-api-key, or the bearer token that SDK 1.x sends its apiKey as. */
  apiKey: string | undefined;
  version: string | undefined;
  beta: string | undefined;
  body: unknown;
  rawBody: Buffer;
}

export interface FakeAnthropic {
  /** Origin, e.g. `http://127.0.0.1:41234`: what the SDK takes as baseURL and the registry as base URL. */
  readonly url: string;
  readonly requests: readonly RecordedRequest[];
  readonly queued: number;
  enqueue(...behaviours: Behaviour[]): void;
  reset(): void;
  close(): Promise<void>;
}

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(',') : v;
};

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const sendJson = (res: ServerResponse, code: number, body: unknown) => {
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  res.writeHead(code, {
    'content-type': typeof body === 'string' ? 'text/html' : 'application/json',
    'content-length': String(bytes.length),
    'request-id': randomId('req_'),
  });
  res.end(bytes);
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      r();
    });
  });

/** The checks the real API makes before reading a request. */
const refusal = (r: RecordedRequest, requireKey: string | undefined): [number, AnthropicErrorBody] | null => {
  if (!r.apiKey) return [401, anthropicError('authentication_error', 'x-api-key header is required')];
  if (requireKey !== undefined && r.apiKey !== requireKey)
    return [401, anthropicError('authentication_error', 'invalid x-api-key')];
  if (!r.version)
    return [400, anthropicError('invalid_request_error', 'anthropic-version: header is required')];
  if (!isRecord(r.body))
    return [400, anthropicError('invalid_request_error', 'There was an error parsing the body')];
  if (r.path === '/v1/messages' && typeof r.body.max_tokens !== 'number')
    return [400, anthropicError('invalid_request_error', 'max_tokens: Field required')];
  if (r.path === '/v1/messages/count_tokens')
    for (const extra of ['max_tokens', 'stream'])
      if (extra in r.body)
        return [400, anthropicError('invalid_request_error', `${extra}: Extra inputs are not permitted`)];
  return null;
};

const stream = async (
  res: ServerResponse,
  frames: string[],
  fault: Extract<Behaviour, { kind: 'message' }>['fault'],
) => {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'request-id': randomId('req_') });
  res.flushHeaders();
  for (const [i, frame] of frames.entries()) {
    if (fault?.afterEvents === i) {
      if (fault.kind === 'cut') {
        await new Promise<void>((r) => res.write('', () => r()));
        return void res.socket?.destroy();
      }
      return void res.end(sseFrame('error', fault.error));
    }
    res.write(frame);
  }
  res.end();
};

export const startFakeAnthropic = async (options: { requireKey?: string } = {}): Promise<FakeAnthropic> => {
  const queue: Behaviour[] = [];
  const requests: RecordedRequest[] = [];
  const server = createServer({ noDelay: true }, (req, res) => {
    const closed = new AbortController();
    res.on('close', () => closed.abort());
    const handle = async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const rawBody = Buffer.concat(chunks);
      let body: unknown;
      try {
        body = rawBody.length > 0 ? JSON.parse(rawBody.toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path,
        headers: req.headers,
        apiKey:
          header(req.headers, 'x-api-key') ??
          /^Bearer\s+(\S+)$/i.exec(header(req.headers, 'authorization') ?? '')?.[1],
        version: header(req.headers, 'anthropic-version'),
        beta: header(req.headers, 'anthropic-beta'),
        body,
        rawBody,
      };
      requests.push(recorded);
      if (req.method !== 'POST' || (path !== '/v1/messages' && path !== '/v1/messages/count_tokens'))
        return sendJson(res, 404, anthropicError('not_found_error', 'Not Found'));
      let behaviour = queue.shift();
      if (behaviour?.kind === 'stall') {
        await sleep(behaviour.ms, closed.signal);
        if (closed.signal.aborted) return;
        behaviour = undefined;
      }
      const refused = refusal(recorded, options.requireKey);
      if (refused) return sendJson(res, refused[0], refused[1]);
      const json = body as Record<string, unknown>;
      if (behaviour?.kind === 'status') return sendJson(res, behaviour.status, behaviour.body);
      if (path === '/v1/messages/count_tokens')
        return sendJson(res, 200, {
          input_tokens: behaviour?.kind === 'count' ? behaviour.inputTokens : promptTokens(json),
        });
      const scripted = behaviour?.kind === 'message' ? behaviour : { kind: 'message' as const, spec: {} };
      const resolved = resolve(scripted.spec, json);
      if (json.stream === true) return stream(res, streamFrames(resolved), scripted.fault);
      if (scripted.fault) return void res.socket?.destroy();
      return sendJson(res, 200, bufferedMessage(resolved));
    };
    handle().catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`fake upstream failed: ${String(error)}`);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve_, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve_());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get queued() {
      return queue.length;
    },
    enqueue: (...b) => {
      queue.push(...b);
    },
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve_, reject) => {
        server.close((e) => (e ? reject(e) : resolve_()));
        server.closeAllConnections();
      }),
  };
};
