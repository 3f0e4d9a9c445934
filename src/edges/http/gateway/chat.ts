import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Adapter } from '../../../commands/registry/events.js';
import type { ApiKeyIdentity } from '../../../gateway/auth/api-key-cache.js';
import type { CompletedRequest, CompletionSink } from '../../../gateway/completed.js';
import type { CanonicalChunk, CanonicalRequest, ChatMessage, Usage } from '../../../gateway/contract.js';
import { estimatedUsage, pricingUsageOf } from '../../../gateway/metering.js';
import { type PipelineBudget, runAttempts } from '../../../gateway/pipeline.js';
import { priceUsage } from '../../../gateway/pricing/index.js';
import type { RateLimiter } from '../../../gateway/rate-limit.js';
import type { RegistrySnapshot } from '../../../gateway/registry/snapshot.js';
import { failureError } from '../../../gateway/render/failures.js';
import { renderPrimaryChunk, renderPrimaryReply } from '../../../gateway/render/primary.js';
import { selectCandidates } from '../../../gateway/selector.js';
import type { TenancySnapshot } from '../../../gateway/tenancy.js';
import { ERROR_CATALOGUE, renderPrimaryError, ServiceError } from '../../../lib/errors.js';
import { newId } from '../../../lib/ids.js';
import { dataFrame } from '../../../lib/sse.js';
import type { AttemptTarget, ProviderAdapter } from '../../../providers/provider.js';
import { StreamFailure } from '../../../providers/provider.js';

export interface ChatDeps {
  registry: () => RegistrySnapshot;
  tenancy: () => TenancySnapshot;
  adapters: ReadonlyMap<Adapter, ProviderAdapter>;
  budget: PipelineBudget;
  limits: AttemptTarget['limits'];
  rateLimiter: RateLimiter;
  onAttempt: (provider: string, outcome: string) => void;
  onCompleted: CompletionSink;
  observe: (
    route: string,
    status: number,
    stream: boolean,
    seconds: number,
    ttfbSeconds: number | null,
  ) => void;
  bodyLimit: number;
}

const REQUEST_ID_HEADER = 'x-svc-request-id';

/** Reads the fields the gateway acts on; everything else passes through (STYLE.md rule 3). */
export const parseChatBody = (body: unknown): CanonicalRequest => {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServiceError('invalid_request_error', 'the request body must be a JSON object', {
      param: 'body',
    });
  }
  const raw = body as Record<string, unknown>;
  if (typeof raw.model !== 'string' || raw.model.trim() === '') {
    throw new ServiceError('invalid_request_error', 'model is required and must be a string', {
      param: 'model',
    });
  }
  if (!Array.isArray(raw.messages) || raw.messages.length === 0) {
    throw new ServiceError('invalid_request_error', 'messages must be a non-empty array', {
      param: 'messages',
    });
  }
  for (const [i, m] of raw.messages.entries()) {
    if (!m || typeof m !== 'object' || typeof (m as { role?: unknown }).role !== 'string') {
      throw new ServiceError('invalid_request_error', `messages[${i}] must be an object with a role`, {
        param: `messages[${i}]`,
      });
    }
  }
  if (raw.stream !== undefined && raw.stream !== null && typeof raw.stream !== 'boolean') {
    throw new ServiceError('invalid_request_error', 'stream must be a boolean', { param: 'stream' });
  }
  const streamOptions = raw.stream_options as { include_usage?: unknown } | undefined;
  return {
    operation: 'chat',
    route: '/v1/chat/completions',
    model: raw.model.trim(),
    messages: raw.messages as ChatMessage[],
    stream: raw.stream === true,
    includeUsage: streamOptions?.include_usage === true,
    ...(typeof raw.max_tokens === 'number'
      ? { maxTokens: raw.max_tokens }
      : typeof raw.max_completion_tokens === 'number'
        ? { maxTokens: raw.max_completion_tokens }
        : {}),
    ...(typeof raw.temperature === 'number' ? { temperature: raw.temperature } : {}),
    ...(typeof raw.top_p === 'number' ? { topP: raw.top_p } : {}),
    ...(raw.tools !== undefined ? { tools: raw.tools } : {}),
    ...(raw.n !== undefined ? { n: raw.n } : {}),
    ...(typeof raw.user === 'string' ? { endUserId: raw.user } : {}),
    raw,
  };
};

const toolSummaryOf = (
  calls: { function?: { name?: string } }[] | undefined,
  into: Record<string, number>,
) => {
  for (const c of calls ?? []) {
    const name = c.function?.name;
    if (name) into[name] = (into[name] ?? 0) + 1;
  }
};

const tracingOf = (
  request: FastifyRequest,
  key: ApiKeyIdentity,
  tenancy: TenancySnapshot,
): CompletedRequest['tracing'] => {
  if (request.headers['svc-enable-tracing'] === '1') return { full: true, source: 'header' };
  if (key.tracing) return { full: true, source: 'api_key' };
  if (tenancy.projectTracing(key.projectId)) return { full: true, source: 'project' };
  if (tenancy.org(key.orgId)?.tracing) return { full: true, source: 'org' };
  return { full: false, source: 'none' };
};

/** POST /v1/chat/completions: buffered and streamed (SPEC 4.1; issue 6). */
export const registerChatRoute = (v1: FastifyInstance, deps: ChatDeps): void => {
  v1.post(
    '/chat/completions',
    { bodyLimit: deps.bodyLimit },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const startedAt = new Date();
      const key = request.apiKey!;
      const chat = parseChatBody(request.body);
      const requestBytes = Number(request.headers['content-length'] ?? 0);

      // From here on every answer carries the request id (SPEC 7.4).
      const requestId = newId('req');
      reply.header(REQUEST_ID_HEADER, requestId);
      const tenancy = deps.tenancy();
      const tracing = tracingOf(request, key, tenancy);
      const completed: CompletedRequest = {
        requestId,
        key,
        request: chat,
        requestBytes,
        status: 'error',
        httpStatus: 500,
        errorCode: null,
        errorType: null,
        provider: null,
        modelServed: null,
        providerModelId: null,
        funding: null,
        startedAt,
        finishedAt: startedAt,
        ttfbMs: null,
        attempts: [],
        usage: null,
        usageEstimated: false,
        pricing: null,
        tracing,
        sessionId:
          typeof request.headers['x-svc-session-id'] === 'string'
            ? request.headers['x-svc-session-id']
            : null,
        toolSummary: {},
        bodies: null,
      };
      const finish = (status: number, error?: ServiceError, responseBody?: Buffer | null) => {
        completed.finishedAt = new Date();
        completed.httpStatus = status;
        completed.status = error ? 'error' : 'success';
        if (error) {
          completed.errorCode = error.code;
          completed.errorType = ERROR_CATALOGUE[error.code].primaryType;
        }
        if (tracing.full)
          completed.bodies = {
            request: Buffer.from(JSON.stringify(chat.raw)),
            response: responseBody ?? null,
          };
        const seconds = (completed.finishedAt.getTime() - startedAt.getTime()) / 1_000;
        deps.observe(
          chat.route,
          status,
          chat.stream,
          seconds,
          completed.ttfbMs === null ? null : completed.ttfbMs / 1_000,
        );
        // Off the critical path: the reply is already on its way.
        setImmediate(() => deps.onCompleted(completed));
      };
      const fail = (error: ServiceError) => {
        finish(error.status, error);
        return reply.code(error.status).send(renderPrimaryError(error, requestId));
      };

      const wait = deps.rateLimiter.take(key.apiKeyId);
      if (wait !== null) {
        reply.header('retry-after', String(wait));
        return fail(
          new ServiceError('rate_limit_error', `rate limit exceeded for this API key; retry in ${wait} s`),
        );
      }

      const registry = deps.registry();
      const selected = selectCandidates(registry, chat.model, {
        capability: 'chat',
        disallow: tenancy.org(key.orgId)?.disallow ?? new Set(),
        operation: 'chat completions',
        atMs: startedAt.getTime(),
      });
      if (!selected.ok) return fail(selected.error);

      const abort = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableFinished) abort.abort();
      };
      reply.raw.on('close', onClose);

      const result = await runAttempts(
        chat,
        selected.candidates,
        {
          adapters: deps.adapters,
          credentials: (endpoint) => tenancy.credentials(key.projectId, endpoint.adapter),
          limits: deps.limits,
          onAttempt: deps.onAttempt,
        },
        { requestId, signal: abort.signal, budget: deps.budget },
      );
      completed.attempts = result.attempts;
      if (!result.ok) {
        reply.raw.off('close', onClose);
        const last = result.attempts.at(-1);
        if (last) {
          completed.provider = last.provider;
          completed.modelServed = last.model;
          completed.providerModelId = last.provider_model_id;
        }
        if (abort.signal.aborted) {
          finish(499, new ServiceError('upstream_error', 'client closed the request', { status: 499 }));
          return reply;
        }
        return fail(failureError(result.attempts, result.failures));
      }

      const { endpoint, credentials } = result;
      completed.provider = endpoint.lane;
      completed.modelServed = endpoint.model;
      completed.providerModelId = endpoint.provider_model_id;
      completed.funding = credentials.funding;
      const identity = {
        id: `chatcmpl-${requestId.slice(4)}`,
        created: Math.floor(startedAt.getTime() / 1_000),
        model: endpoint.model,
      };
      const price = (usage: Usage | null, serviceTier: unknown) => {
        const used = usage ?? estimatedUsage(requestBytes, '');
        completed.usage = used;
        completed.pricing = priceUsage(
          registry.cardAt(endpoint, startedAt.getTime()),
          pricingUsageOf('chat', used, chat, serviceTier),
        );
      };

      if (result.reply) {
        reply.raw.off('close', onClose);
        const body = renderPrimaryReply(result.reply, identity);
        toolSummaryOf(result.reply.message.tool_calls, completed.toolSummary);
        price(result.reply.usage, result.reply.raw?.service_tier);
        const text = JSON.stringify(body);
        completed.ttfbMs = Date.now() - startedAt.getTime();
        finish(200, undefined, tracing.full ? Buffer.from(text) : null);
        return reply.code(200).type('application/json').send(text);
      }

      // Streamed: the first chunk arrived, so this candidate is committed (no fallback from here).
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        [REQUEST_ID_HEADER]: requestId,
      });
      const traced: string[] = [];
      const write = async (frame: string) => {
        if (tracing.full) traced.push(frame);
        if (!res.write(frame))
          await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
      };
      let usage: Usage | null = null;
      let serviceTier: unknown;
      let text = '';
      const toolCalls = new Map<number, string>();
      let streamError: ServiceError | undefined;
      const relay = async (chunk: CanonicalChunk) => {
        if (completed.ttfbMs === null) completed.ttfbMs = Date.now() - startedAt.getTime();
        if (chunk.usage) usage = chunk.usage;
        if (chunk.raw?.service_tier !== undefined) serviceTier = chunk.raw.service_tier;
        if (chunk.delta.content) text += chunk.delta.content;
        for (const t of chunk.delta.tool_calls ?? [])
          if (t.function?.name) toolCalls.set(t.index, t.function.name);
        const frame = renderPrimaryChunk(chunk, identity, chat.includeUsage);
        if (frame) await write(dataFrame(JSON.stringify(frame)));
      };
      try {
        if (result.first) await relay(result.first);
        for (;;) {
          if (res.destroyed) break;
          const next = await result.rest!.next();
          if (next.done) break;
          await relay(next.value);
        }
      } catch (err) {
        // A client that went away is not an upstream failure; the partial usage is still priced.
        if (!abort.signal.aborted) {
          const message = err instanceof StreamFailure ? err.message : 'upstream stream failed';
          streamError = new ServiceError('upstream_stream_error', message);
          if (!res.destroyed)
            await write(dataFrame(JSON.stringify(renderPrimaryError(streamError, requestId))));
        }
      } finally {
        reply.raw.off('close', onClose);
        if (res.destroyed) await result.rest!.return?.();
      }
      if (!res.destroyed) {
        await write('data: [DONE]\n\n');
        res.end();
      }
      for (const name of toolCalls.values())
        completed.toolSummary[name] = (completed.toolSummary[name] ?? 0) + 1;
      completed.usageEstimated = usage === null;
      price(usage ?? estimatedUsage(requestBytes, text), serviceTier);
      const disconnected = abort.signal.aborted || (res.destroyed && !res.writableFinished);
      finish(disconnected ? 499 : 200, streamError, tracing.full ? Buffer.from(traced.join('')) : null);
      return reply;
    },
  );
};
