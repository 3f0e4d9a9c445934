import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ControlPlaneListing, controlPlaneAnswer } from './bedrock-runtime-control-plane.js';
import {
  corruptFrame,
  exceptionFrame,
  replyEvents,
  type ScriptedBlock,
  seededRandom,
  splitRandomly,
} from './bedrock-runtime-frames.js';
import { type FakeCredentials, verifySigV4 } from './bedrock-runtime-sigv4.js';

/**
 * A fake managed runtime (Converse, ConverseStream, and InvokeModel for Titan text embeddings) and
 * its control-plane listings on 127.0.0.1.
 * Every request's SigV4 signature is verified with the AWS SDK signer; a bad one is refused 403
 * InvalidSignatureException as the real service does. Runtime requests must carry
 * x-svc-request-id outside SignedHeaders, or they are refused and the violation recorded.
 * Behaviours queue first in, first out; without one, the reply echoes the last user text.
 */

export type { ScriptedBlock } from './bedrock-runtime-frames.js';

export interface ReplyBehaviour {
  kind: 'reply';
  blocks?: ScriptedBlock[];
  stopReason?: string;
  usage?: { inputTokens: number; outputTokens: number };
  /** Stream only: cut the bytes at random boundaries from this seed. */
  splitSeed?: number;
  inputPieces?: number;
  /** Stream only: after this many event frames, an exception frame ends the stream. */
  exceptionAfter?: { events: number; name: string; message: string };
  /** Stream only: flip a CRC bit in frame number `frame`. */
  corrupt?: { frame: number; where: 'prelude' | 'message' };
}

export interface ExceptionBehaviour {
  kind: 'exception';
  status: number;
  name: string;
  message: string;
  /** Where the name travels: x-amzn-errortype (the default) or a body __type. */
  via?: 'header' | 'body';
}

export type RuntimeBehaviour = ReplyBehaviour | ExceptionBehaviour;

export const reply = (options: Omit<ReplyBehaviour, 'kind'> = {}): ReplyBehaviour => ({
  kind: 'reply',
  ...options,
});

export const exception = (
  name: string,
  status: number,
  message: string,
  via: 'header' | 'body' = 'header',
): ExceptionBehaviour => ({ kind: 'exception', name, status, message, via });

export interface RecordedRuntimeRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  rawBody: Buffer;
  signedHeaders: string[];
}

export interface FakeBedrock {
  readonly url: string;
  readonly region: string;
  readonly credentials: FakeCredentials;
  readonly requests: readonly RecordedRuntimeRequest[];
  /** Requests refused by the fake's own checks (signature, request id), with the reason. */
  readonly violations: readonly string[];
  enqueue(...behaviours: RuntimeBehaviour[]): void;
  reset(): void;
  close(): Promise<void>;
}

const wordCount = (text: string): number => text.split(/\s+/).filter(Boolean).length;

const lastUserText = (body: unknown): string => {
  const messages = (body as { messages?: { role: string; content: { text?: string }[] }[] })?.messages ?? [];
  const user = [...messages].reverse().find((m) => m.role === 'user' && m.content.some((c) => c.text));
  return user?.content.map((c) => c.text ?? '').join('') ?? 'hello';
};

const sendException = (res: ServerResponse, b: ExceptionBehaviour) => {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-amzn-requestid': 'fake-rid',
  };
  const body: Record<string, string> = { message: b.message };
  if (b.via === 'body') body.__type = `com.amazon.bedrock#${b.name}`;
  else headers['x-amzn-errortype'] = `${b.name}:http://internal.amazon.com/coral/com.amazon.bedrock/`;
  res.writeHead(b.status, headers).end(JSON.stringify(body));
};

const sendBuffered = (
  res: ServerResponse,
  b: ReplyBehaviour,
  blocks: ScriptedBlock[],
  usage: ReplyBehaviour['usage'],
) => {
  const u = usage!;
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      output: { message: { role: 'assistant', content: blocks } },
      stopReason: b.stopReason ?? (blocks.some((x) => x.toolUse) ? 'tool_use' : 'end_turn'),
      usage: { ...u, totalTokens: u.inputTokens + u.outputTokens },
      metrics: { latencyMs: 12 },
    }),
  );
};

const sendStream = async (
  res: ServerResponse,
  b: ReplyBehaviour,
  blocks: ScriptedBlock[],
  usage: ReplyBehaviour['usage'],
) => {
  const stopReason = b.stopReason ?? (blocks.some((x) => x.toolUse) ? 'tool_use' : 'end_turn');
  let frames = replyEvents(blocks, stopReason, usage!, { inputPieces: b.inputPieces });
  if (b.exceptionAfter) {
    const { events, name, message } = b.exceptionAfter;
    frames = [...frames.slice(0, events), exceptionFrame(name, message)];
  }
  if (b.corrupt) frames[b.corrupt.frame] = corruptFrame(frames[b.corrupt.frame]!, b.corrupt.where);
  const bytes = Buffer.concat(frames);
  const pieces = b.splitSeed === undefined ? frames : splitRandomly(bytes, seededRandom(b.splitSeed), 48);
  res.writeHead(200, {
    'content-type': 'application/vnd.amazon.eventstream',
    'x-amzn-requestid': 'fake-rid',
  });
  for (const piece of pieces) {
    if (res.destroyed) return;
    res.write(piece);
    await new Promise((r) => setImmediate(r));
  }
  res.end();
};

/** Titan text embeddings: `{inputText, dimensions?}` to `{embedding, inputTextTokenCount}`. */
const sendEmbedding = (res: ServerResponse, b: ReplyBehaviour, body: unknown) => {
  const { inputText, dimensions } = (body ?? {}) as { inputText?: unknown; dimensions?: unknown };
  if (typeof inputText !== 'string' || inputText === '') {
    sendException(res, {
      kind: 'exception',
      status: 400,
      name: 'ValidationException',
      message: 'Malformed input request: required key [inputText] not found',
    });
    return;
  }
  const size = typeof dimensions === 'number' ? dimensions : 4;
  const embedding = Array.from(
    { length: size },
    (_, i) => ((inputText.charCodeAt(i % inputText.length) % 17) - 8) / 8,
  );
  res
    .writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': 'fake-rid' })
    .end(JSON.stringify({ embedding, inputTextTokenCount: b.usage?.inputTokens ?? wordCount(inputText) }));
};

export const startFakeBedrock = async (
  options: { region?: string; credentials?: FakeCredentials; listing?: ControlPlaneListing } = {},
): Promise<FakeBedrock> => {
  const region = options.region ?? 'us-east-1';
  const credentials = options.credentials ?? {
    accessKeyId: 'AKIAFAKEFAKEFAKE0001',
    secretAccessKey: 'fake/secret+access/key/for/tests/only',
  };
  const requests: RecordedRuntimeRequest[] = [];
  const violations: string[] = [];
  let queue: RuntimeBehaviour[] = [];

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBody = Buffer.concat(chunks);
    const url = req.url ?? '/';
    const path = url.split('?')[0]!;
    const verdict = await verifySigV4(
      { method: req.method ?? 'GET', url, headers: req.headers, body: rawBody },
      { credentials, region, service: 'bedrock' },
    );
    if (!verdict.ok) {
      violations.push(`${path}: ${verdict.reason}`);
      sendException(res, {
        kind: 'exception',
        status: 403,
        name: verdict.exception,
        message: verdict.reason,
      });
      return;
    }
    if (Object.values(req.headers).some((v) => String(v).includes(credentials.secretAccessKey))) {
      violations.push(`${path}: the secret access key travelled in a header`);
      sendException(res, {
        kind: 'exception',
        status: 400,
        name: 'ValidationException',
        message: 'secret in header',
      });
      return;
    }
    if (req.method === 'GET') {
      const answer = controlPlaneAnswer(options.listing ?? {}, url);
      res.writeHead(answer.status, answer.headers).end(JSON.stringify(answer.body));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch {
      body = undefined;
    }
    requests.push({
      method: req.method ?? '',
      path,
      headers: req.headers,
      body,
      rawBody,
      signedHeaders: verdict.signedHeaders,
    });
    const requestId = req.headers['x-svc-request-id'];
    if (typeof requestId !== 'string' || verdict.signedHeaders.includes('x-svc-request-id')) {
      violations.push(`${path}: x-svc-request-id missing or signed`);
      sendException(res, {
        kind: 'exception',
        status: 400,
        name: 'ValidationException',
        message: 'request id check',
      });
      return;
    }
    const op = /^\/model\/[^/]+\/(converse|converse-stream|invoke)$/.exec(path)?.[1];
    if (!op) {
      sendException(res, {
        kind: 'exception',
        status: 404,
        name: 'UnknownOperationException',
        message: path,
      });
      return;
    }
    const behaviour = queue.shift() ?? reply();
    if (behaviour.kind === 'exception') {
      sendException(res, behaviour);
      return;
    }
    if (op === 'invoke') return sendEmbedding(res, behaviour, body);
    const text = lastUserText(body);
    const blocks = behaviour.blocks ?? [{ text }];
    const outText = blocks.map((x) => x.text ?? '').join(' ');
    const usage = behaviour.usage ?? {
      inputTokens: wordCount(JSON.stringify((body as { messages?: unknown })?.messages ?? '')),
      outputTokens: Math.max(1, wordCount(outText)),
    };
    if (op === 'converse') sendBuffered(res, behaviour, blocks, usage);
    else await sendStream(res, behaviour, blocks, usage);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    region,
    credentials,
    requests,
    violations,
    enqueue: (...b) => {
      queue.push(...b);
    },
    reset: () => {
      queue = [];
      requests.length = 0;
      violations.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
