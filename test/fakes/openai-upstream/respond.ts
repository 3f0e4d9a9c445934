import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeFormFile } from '../openai-upstream.js';
import type { Behaviour, ReplyOptions, StreamFault } from './behaviours.js';
import { responses } from './responses.js';
import {
  chatCompletions,
  embeddings,
  imageEdits,
  imageGenerations,
  imageVariations,
  jsonError,
  listModels,
  moderations,
  type RouteResult,
  retrieveModel,
} from './routes.js';
import { commonHeaders, isRecord, openAIError, renderError } from './wire.js';

/** One request in flight; `closed` fires when the client goes away, so pauses end early. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  closed: AbortSignal;
  method: string;
  path: string;
  apiKey: string | undefined;
  body: unknown;
  form?: { files: FakeFormFile[] };
}

const JSON_TYPE = 'application/json';

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * Writes and resolves once the bytes (and all before them) are handed to the socket; a client that
 * leaves releases the wait instead of hanging the fake.
 */
const write = (x: Exchange, chunk: string | Buffer): Promise<void> =>
  new Promise((resolve) => {
    if (x.closed.aborted) return resolve();
    const done = () => {
      x.closed.removeEventListener('abort', done);
      resolve();
    };
    x.closed.addEventListener('abort', done, { once: true });
    x.res.write(chunk, done);
  });

const drained = (x: Exchange): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      x.res.off('drain', done);
      x.closed.removeEventListener('abort', done);
      resolve();
    };
    x.res.once('drain', done);
    x.closed.addEventListener('abort', done, { once: true });
  });

const sendBody = (
  x: Exchange,
  status: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
): void => {
  const bytes = Buffer.from(body);
  x.res.writeHead(status, {
    ...commonHeaders(),
    'content-type': contentType,
    ...headers,
    'content-length': String(bytes.length),
  });
  x.res.end(bytes);
};

/** A buffered 200 broken the way a stream would be: at half its bytes. */
const sendBrokenBody = async (
  x: Exchange,
  body: string,
  fault: StreamFault,
  headers: Record<string, string>,
) => {
  if (fault.kind === 'error') {
    return sendBody(x, 200, JSON_TYPE, renderError({ error: fault.error }), headers);
  }
  const bytes = Buffer.from(body);
  x.res.writeHead(200, {
    ...commonHeaders(),
    'content-type': JSON_TYPE,
    ...headers,
    'content-length': String(bytes.length),
  });
  const half = Math.floor(bytes.length / 2);
  await write(x, bytes.subarray(0, half));
  if (fault.kind === 'cut') return void x.res.socket?.destroy();
  await sleep(fault.ms, x.closed);
  if (!x.closed.aborted) x.res.end(bytes.subarray(half));
};

const sendStream = async (
  x: Exchange,
  result: Extract<RouteResult, { kind: 'stream' }>,
  options: ReplyOptions,
): Promise<void> => {
  x.res.writeHead(200, {
    ...commonHeaders(),
    'content-type': 'text/event-stream; charset=utf-8',
    ...options.headers,
  });
  x.res.flushHeaders();
  const { fault } = options;
  const delay = options.chunkDelayMs ?? 0;
  for (let index = 0; index <= result.frames.length; index++) {
    if (x.closed.aborted) return;
    if (fault?.afterChunks === index) {
      if (fault.kind === 'cut') {
        // An empty write completes only after every earlier frame reached the socket, so the cut
        // lands exactly after `afterChunks` frames rather than wherever buffering left it.
        await write(x, '');
        return void x.res.socket?.destroy();
      }
      if (fault.kind === 'error') return void x.res.end(result.errorFrame(fault.error));
      await sleep(fault.ms, x.closed);
    }
    const frame = result.frames[index];
    if (frame === undefined) break;
    if (index > 0 && delay > 0) await sleep(delay, x.closed);
    if (x.closed.aborted) return;
    // Without a pause, frames go out back to back; wait only when the client pushes back.
    if (delay > 0) await write(x, frame);
    else if (!x.res.write(frame)) await drained(x);
  }
  x.res.end();
};

const POST_ROUTES: Record<string, (body: Record<string, unknown>, options: ReplyOptions) => RouteResult> = {
  '/v1/chat/completions': chatCompletions,
  '/v1/embeddings': embeddings,
  '/v1/responses': responses,
  '/v1/moderations': moderations,
  '/v1/images/generations': imageGenerations,
};

const FORM_ROUTES: Record<string, (fields: Record<string, unknown>, files: FakeFormFile[]) => RouteResult> = {
  '/v1/images/edits': imageEdits,
  '/v1/images/variations': imageVariations,
};

const PARSE_ERROR = openAIError(
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
);

const route = (x: Exchange, options: ReplyOptions): RouteResult => {
  const post = POST_ROUTES[x.path];
  if (x.method === 'POST' && post)
    return isRecord(x.body) ? post(x.body, options) : jsonError(400, PARSE_ERROR);
  const form = FORM_ROUTES[x.path];
  if (x.method === 'POST' && form)
    return x.form && isRecord(x.body)
      ? form(x.body, x.form.files)
      : jsonError(400, openAIError('Invalid Content-Type header, expected multipart/form-data.'));
  if (x.method === 'GET' && x.path === '/v1/models') return listModels(options);
  if (x.method === 'GET' && x.path.startsWith('/v1/models/')) {
    return retrieveModel(decodeURIComponent(x.path.slice('/v1/models/'.length)), options);
  }
  return jsonError(404, openAIError(`Invalid URL (${x.method} ${x.path})`));
};

const maskKey = (key: string): string =>
  key.length <= 8
    ? '*'.repeat(key.length)
    : `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}`;

const authFailure = (x: Exchange, requiredKey: string | undefined): RouteResult | undefined => {
  if (x.apiKey === undefined) {
    return jsonError(
      401,
      openAIError(
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (i.e. Authorization: Basic YOUR_KEY). You can obtain an API key from https://platform.openai.com/account/api-keys.",
      ),
    );
  }
  if (requiredKey !== undefined && x.apiKey !== requiredKey) {
    return jsonError(
      401,
      openAIError(
        `Incorrect API key provided: ${maskKey(x.apiKey)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        'invalid_request_error',
        'invalid_api_key',
      ),
    );
  }
  return undefined;
};

export const perform = async (
  x: Exchange,
  behaviour: Behaviour,
  fallback: Behaviour,
  serverKey: string | undefined,
): Promise<void> => {
  if (behaviour.kind === 'reset') return void x.req.socket.resetAndDestroy();
  if (behaviour.kind === 'stall') {
    await sleep(behaviour.ms, x.closed);
    if (x.closed.aborted) return;
    return perform(x, behaviour.then ?? fallback, fallback, serverKey);
  }
  const denied = authFailure(x, behaviour.requireKey ?? serverKey);
  if (denied?.kind === 'json') return sendBody(x, denied.status, JSON_TYPE, denied.body);
  switch (behaviour.kind) {
    case 'status':
      return sendBody(x, behaviour.status, JSON_TYPE, renderError(behaviour.body), behaviour.headers);
    case 'raw':
      return sendBody(x, behaviour.status, behaviour.contentType, behaviour.text, behaviour.headers);
    case 'reply': {
      const { options } = behaviour;
      const result = route(x, options);
      if (result.kind === 'stream') return sendStream(x, result, options);
      if (result.status === 200 && options.fault) {
        return sendBrokenBody(x, result.body, options.fault, options.headers ?? {});
      }
      return sendBody(x, result.status, JSON_TYPE, result.body, result.status === 200 ? options.headers : {});
    }
    default:
      return behaviour satisfies never;
  }
};
