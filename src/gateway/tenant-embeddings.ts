import { newId } from '../lib/ids.js';
import type { CanonicalRequest } from '../providers/contract.js';
import type { ApiKeyIdentity } from './auth/api-key-cache.js';
import { primaryDialect } from './render/dialect.js';
import { type ClientPort, type GatewayDeps, serveRequest } from './request.js';

/**
 * Embeddings the service computes for a tenant (vector store chunks, SPEC 4.1): one embeddings
 * request through the same request path as a client's (selection, policy, limits, escrow, retries
 * and fallback, the tenant's credentials), priced and recorded as an embeddings request of the key
 * that asked for the work. The answer comes back here instead of to a connection.
 */
export type TenantEmbeddings =
  | { ok: true; requestId: string; vectors: number[][] }
  | { ok: false; requestId: string; status: number; code: string; message: string };

/**
 * Nobody is waiting on a connection: an embeddings answer is never streamed, and the only way to
 * walk away from one is the caller's `signal` (a worker that stops), which cancels like a client
 * that disconnects.
 */
const noClient = (signal: AbortSignal | undefined): ClientPort => {
  let stop: (() => void) | null = null;
  return {
    watch: (abort) => {
      if (!signal) return;
      if (signal.aborted) return abort.abort();
      stop = () => abort.abort();
      signal.addEventListener('abort', stop, { once: true });
    },
    release: () => {
      if (stop) signal?.removeEventListener('abort', stop);
      stop = null;
    },
    openStream: () => {
      throw new Error('a tenant embeddings request is never streamed');
    },
  };
};

export const embedForTenant = async (
  deps: GatewayDeps,
  key: ApiKeyIdentity,
  model: string,
  inputs: readonly string[],
  options: { dimensions?: number; signal?: AbortSignal } = {},
): Promise<TenantEmbeddings> => {
  const raw: Record<string, unknown> = {
    model,
    input: [...inputs],
    encoding_format: 'float',
    ...(options.dimensions !== undefined ? { dimensions: options.dimensions } : {}),
  };
  const canonical: CanonicalRequest = {
    operation: 'embeddings',
    route: '/v1/embeddings',
    model,
    messages: [],
    stream: false,
    includeUsage: false,
    raw,
  };
  const requestId = newId('req');
  const answer = await serveRequest(deps, {
    canonical,
    dialect: primaryDialect,
    key,
    requestId,
    requestBytes: Buffer.byteLength(JSON.stringify(raw)),
    tracingHeader: undefined,
    sessionHeader: undefined,
    client: noClient(options.signal),
  });
  if (answer.kind !== 'json')
    return {
      ok: false,
      requestId,
      status: 499,
      code: 'cancelled',
      message: 'the embeddings request was cancelled before it was answered',
    };
  const body = JSON.parse(answer.body) as {
    data?: { index: number; embedding: number[] }[];
    error?: { code?: string | null; type?: string; message?: string };
  };
  if (answer.status !== 200 || !Array.isArray(body.data))
    return {
      ok: false,
      requestId,
      status: answer.status,
      code: body.error?.code ?? body.error?.type ?? 'server_error',
      message: body.error?.message ?? `embeddings answered ${answer.status}`,
    };
  const problem = vectorsProblem(body.data, inputs.length);
  if (typeof problem === 'string')
    return {
      ok: false,
      requestId,
      status: 502,
      code: 'bad_upstream_reply',
      message: `embeddings answered ${problem}`,
    };
  const vectors = problem;
  return { ok: true, requestId, vectors };
};

/**
 * The vectors of an embeddings answer in input order, or what is wrong with it: one vector for each
 * input index exactly once, every vector a non-empty array of finite numbers, all of one length.
 */
export const vectorsProblem = (data: readonly unknown[], inputs: number): number[][] | string => {
  if (data.length !== inputs) return `${data.length} vectors for ${inputs} inputs`;
  const vectors: (number[] | undefined)[] = new Array(inputs).fill(undefined);
  let dimensions = -1;
  for (const d of data) {
    const { index, embedding } = (d ?? {}) as { index?: unknown; embedding?: unknown };
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= inputs)
      return `a vector with index ${JSON.stringify(index)} for ${inputs} inputs`;
    if (vectors[index] !== undefined) return `two vectors for input ${index}`;
    if (
      !Array.isArray(embedding) ||
      embedding.length === 0 ||
      !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))
    )
      return `a vector for input ${index} that is not a non-empty array of finite numbers`;
    if (dimensions !== -1 && embedding.length !== dimensions)
      return `vectors of ${dimensions} and ${embedding.length} dimensions in one answer`;
    dimensions = embedding.length;
    vectors[index] = embedding as number[];
  }
  return vectors as number[][];
};
