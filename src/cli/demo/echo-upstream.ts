import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local OpenAI-compatible upstream for `svc demo`: it answers `POST /v1/chat/completions`
 * (buffered, and streamed with `stream_options.include_usage`) by echoing the last user message,
 * and `GET /v1/models` with the one model it serves. Usage is counted at one token per four
 * characters (at least one), so a request through the gateway has a real, small, exact cost.
 * It is a teaching aid, not a test fake: it calls nothing and stores nothing.
 */

export interface EchoUpstream {
  /** Origin, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Chat requests answered so far. */
  readonly served: number;
  close(): Promise<void>;
}

export const ECHO_MODEL = 'echo-1';
/** The largest request body it reads; past it, a 413 in the OpenAI envelope. */
const MAX_BODY = 1024 * 1024;

const tokensOf = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) =>
        typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string'
          ? (part as { text: string }).text
          : '',
      )
      .join('');
  return '';
};

const sendJson = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

const error = (res: ServerResponse, status: number, message: string, type = 'invalid_request_error') =>
  sendJson(res, status, { error: { message, type, param: null, code: null } });

const readBody = async (req: IncomingMessage): Promise<Buffer | null> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
};

interface ChatRequest {
  model?: unknown;
  messages?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
}

const chat = async (req: IncomingMessage, res: ServerResponse, counter: { served: number }) => {
  const raw = await readBody(req);
  if (raw === null) return error(res, 413, `the request body is larger than ${MAX_BODY} bytes`);
  let body: ChatRequest;
  try {
    body = JSON.parse(raw.toString('utf8')) as ChatRequest;
  } catch {
    return error(res, 400, 'the request body is not JSON');
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return error(res, 400, 'messages must be a non-empty array');
  const messages = body.messages as { role?: unknown; content?: unknown }[];
  const prompt = messages.map((m) => textOf(m?.content)).join('\n');
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const answer = `echo: ${textOf(lastUser?.content)}`;
  const usage = {
    prompt_tokens: tokensOf(prompt),
    completion_tokens: tokensOf(answer),
    total_tokens: tokensOf(prompt) + tokensOf(answer),
  };
  const id = `chatcmpl-echo${Date.now().toString(36)}${counter.served.toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body.model === 'string' ? body.model : ECHO_MODEL;
  counter.served++;
  if (body.stream !== true)
    return sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
      usage,
    });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`,
    );
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  for (const word of answer.split(/(?<= )/))
    chunk([{ index: 0, delta: { content: word }, finish_reason: null }]);
  chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]);
  if (body.stream_options?.include_usage === true) chunk([], { usage });
  res.end('data: [DONE]\n\n');
};

export const startEchoUpstream = async (
  options: { port?: number; host?: string } = {},
): Promise<EchoUpstream> => {
  const counter = { served: 0 };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://echo').pathname;
    const handle = async () => {
      if (req.method === 'POST' && path === '/v1/chat/completions') return chat(req, res, counter);
      if (req.method === 'GET' && path === '/v1/models')
        return sendJson(res, 200, {
          object: 'list',
          data: [{ id: ECHO_MODEL, object: 'model', created: 0, owned_by: 'svc-demo' }],
        });
      return error(
        res,
        404,
        `the echo upstream serves POST /v1/chat/completions and GET /v1/models, not ${req.method} ${path}`,
      );
    };
    handle().catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      error(res, 500, `the echo upstream failed: ${String(err)}`, 'server_error');
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    get served() {
      return counter.served;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
};
