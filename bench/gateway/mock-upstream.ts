import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';

/**
 * The fastest OpenAI-compatible upstream we can write with node:http, for bench/gateway. Every
 * reply is prebuilt so the mock costs as little CPU as possible on a machine it shares with the
 * gateway and the load generator (test/fakes is built for fidelity and would be the bottleneck).
 *
 * The model `bench-upstream-slow` streams its content chunks 100 ms apart, for the relay check.
 * Run this file directly (the bench forks it) and it reports `{ origin }` over IPC.
 */

export const SLOW_MODEL = 'bench-upstream-slow';
export const SLOW_CHUNK_INTERVAL_MS = 100;

const CREATED = 1_767_225_600;
const WORDS = ['Hello', ' from', ' the', ' bench', ' upstream', ',', ' all', ' good.'];
const USAGE = { prompt_tokens: 12, completion_tokens: WORDS.length, total_tokens: 12 + WORDS.length };

const COMPLETION = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: CREATED,
    model: 'bench-upstream',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: WORDS.join('') },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: USAGE,
  }),
);

const frame = (choices: unknown[], usage: unknown = null): Buffer =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: CREATED, model: 'bench-upstream', choices, usage })}\n\n`,
  );

const ROLE_FRAME = frame([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
const CONTENT_FRAMES = WORDS.map((w) => frame([{ index: 0, delta: { content: w }, finish_reason: null }]));
const FINISH_FRAME = frame([{ index: 0, delta: {}, finish_reason: 'stop' }]);
const USAGE_FRAME = frame([], USAGE);
const DONE_FRAME = Buffer.from('data: [DONE]\n\n');

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

interface ChatBody {
  model?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown } | null;
}

const tail = (res: ServerResponse, usage: boolean): void => {
  res.write(FINISH_FRAME);
  if (usage) res.write(USAGE_FRAME);
  res.end(DONE_FRAME);
};

const streamNow = (res: ServerResponse, usage: boolean): void => {
  res.writeHead(200, SSE_HEADERS);
  // Corked: one socket write for the whole reply keeps the mock cheap; the frames stay separate
  // chunked-encoding chunks, so the gateway still parses every one of them.
  res.cork();
  res.write(ROLE_FRAME);
  for (const f of CONTENT_FRAMES) res.write(f);
  tail(res, usage);
};

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
export const wallClockMs = (): number => performance.timeOrigin + performance.now();

/**
 * Each content chunk carries the moment the mock wrote it (`<word>@<ms>`), so the client measures
 * the relay delay itself, not the mock's timer drift on a busy machine.
 */
const streamSlowly = (res: ServerResponse, usage: boolean): void => {
  res.writeHead(200, SSE_HEADERS);
  res.write(ROLE_FRAME);
  let next = 0;
  const timer = setInterval(() => {
    const content = `${WORDS[next]}@${wallClockMs().toFixed(3)}`;
    res.write(frame([{ index: 0, delta: { content }, finish_reason: null }]));
    next++;
    if (next < WORDS.length) return;
    clearInterval(timer);
    tail(res, usage);
  }, SLOW_CHUNK_INTERVAL_MS);
  res.on('close', () => clearInterval(timer));
};

const answer = (res: ServerResponse, raw: Buffer): void => {
  let body: ChatBody;
  try {
    body = JSON.parse(raw.toString('utf8')) as ChatBody;
  } catch {
    res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
    return;
  }
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': COMPLETION.length });
    res.end(COMPLETION);
    return;
  }
  const usage = body.stream_options?.include_usage === true;
  if (body.model === SLOW_MODEL) streamSlowly(res, usage);
  else streamNow(res, usage);
};

export const startMockUpstream = (port = 0): Promise<{ server: Server; origin: string }> =>
  new Promise((resolve, reject) => {
    const server = createServer({ keepAliveTimeout: 120_000, requestTimeout: 0 }, (req, res) => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        req.resume();
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => answer(res, parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
    });
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as AddressInfo;
      resolve({ server, origin: `http://127.0.0.1:${bound}` });
    });
  });

const isEntry = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntry && process.send) {
  const { server, origin } = await startMockUpstream();
  process.send({ origin });
  // The bench owns this process: it goes when the bench disconnects, whatever way the bench ends.
  process.on('disconnect', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
