import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { primaryDialect } from '../../../gateway/render/dialect.js';
import type { CanonicalRequest, ChatMessage, ToolChoice } from '../../../providers/contract.js';
import { checkMessages, invalid, largestOutputLimit, modelOf, objectBody } from './body-rules.js';
import { callGateway, type GatewayEdgeDeps } from './client.js';

/** Reads the fields the gateway acts on; everything else passes through (STYLE.md rule 3). */
export const parseChatBody = (body: unknown): CanonicalRequest => {
  const raw = objectBody(body);
  const model = modelOf(raw);
  checkMessages(raw.messages);
  if (raw.stream !== undefined && raw.stream !== null && typeof raw.stream !== 'boolean') {
    throw invalid('stream', 'stream must be a boolean');
  }
  const streamOptions = raw.stream_options as { include_usage?: unknown } | undefined;
  const stop = typeof raw.stop === 'string' ? [raw.stop] : Array.isArray(raw.stop) ? raw.stop : undefined;
  const format = raw.response_format;
  // Both limits may be stated; the larger is the most the upstream may be asked to write (SPEC 8).
  const maxTokens = largestOutputLimit(raw, ['max_tokens', 'max_completion_tokens']);
  return {
    operation: 'chat',
    route: '/v1/chat/completions',
    model,
    messages: raw.messages as ChatMessage[],
    stream: raw.stream === true,
    includeUsage: streamOptions?.include_usage === true,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(typeof raw.temperature === 'number' ? { temperature: raw.temperature } : {}),
    ...(typeof raw.top_p === 'number' ? { topP: raw.top_p } : {}),
    ...(raw.tools !== undefined ? { tools: raw.tools } : {}),
    // Read for translation to other wires only; reference-shaped upstreams get `raw` as it came.
    ...(raw.tool_choice !== undefined && raw.tool_choice !== null
      ? { toolChoice: raw.tool_choice as ToolChoice }
      : {}),
    ...(typeof raw.parallel_tool_calls === 'boolean' ? { parallelToolCalls: raw.parallel_tool_calls } : {}),
    ...(stop ? { stop: stop.filter((x): x is string => typeof x === 'string') } : {}),
    ...(format && typeof format === 'object' && !Array.isArray(format)
      ? { responseFormat: format as Record<string, unknown> }
      : {}),
    ...(raw.n !== undefined ? { n: raw.n } : {}),
    ...(typeof raw.user === 'string' ? { endUserId: raw.user } : {}),
    raw,
  };
};

/** POST /v1/chat/completions, buffered and streamed (SPEC 4.1). */
export function registerChatRoute(v1: FastifyInstance, deps: GatewayEdgeDeps): void {
  v1.post('/chat/completions', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    chatCompletions(deps, request, reply),
  );
}

/** The primary dialect in, one request through the gateway, its answer out. */
export function chatCompletions(
  deps: GatewayEdgeDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const canonical = parseChatBody(request.body);
  return callGateway(deps, request, reply, canonical, primaryDialect);
}
