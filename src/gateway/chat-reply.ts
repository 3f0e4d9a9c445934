import type { ServiceError } from '../lib/errors.js';
import type { CanonicalChunk, CanonicalReply, Usage } from '../providers/contract.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import { estimatedUsage, observedUsage } from './metering.js';
import type { StreamRenderer } from './render/dialect.js';
import type { ReplyIdentity } from './render/primary.js';
import type { FrameSink, GatewayAnswer, RequestScope } from './scope.js';

/**
 * A served chat request rendered in the caller's dialect, whichever provider served it (SPEC 1.2,
 * 4.1 rules 5 and 7, 4.2 rules 3 to 6), and metered: the tools it called (names only, SPEC 1.10)
 * and its usage, reported or else estimated from what was sent and relayed.
 */

const identityOf = (scope: RequestScope, endpoint: RegistryEndpoint): ReplyIdentity => {
  const { dialect, requestId } = scope.input;
  return {
    id: dialect.replyId(requestId),
    created: Math.floor(scope.startedAt.getTime() / 1_000),
    model: endpoint.model,
    requestId,
  };
};

/** A whole reply: rendered, priced, answered. */
export const answerChat = (
  scope: RequestScope,
  endpoint: RegistryEndpoint,
  reply: CanonicalReply,
): GatewayAnswer => {
  const { completed, input } = scope;
  const identity = identityOf(scope, endpoint);
  for (const c of reply.message.tool_calls ?? []) {
    const name = c.function?.name;
    if (name) completed.toolSummary[name] = (completed.toolSummary[name] ?? 0) + 1;
  }
  completed.usageEstimated = reply.usage === null;
  scope.price(
    endpoint,
    'chat',
    reply.usage ?? estimatedUsage(input.requestBytes, ''),
    reply.serviceTier ?? reply.raw?.service_tier,
  );
  return scope.answer(JSON.stringify(input.dialect.reply(reply, identity)));
};

/**
 * A streamed reply, committed at its first chunk (no fallback from here): each canonical chunk
 * becomes the dialect's frames as it arrives; the end is the dialect's closing frames, or its
 * in-band error (SPEC 7.6 rule 1).
 */
export class ChatStream {
  readonly sink: FrameSink;
  private readonly renderer: StreamRenderer;
  private readonly traced: string[] | null;
  private usage: Usage | null = null;
  private opening: Usage | null = null;
  private serviceTier: unknown;
  /** Everything the client was sent, for pricing a stream that ended without its usage report. */
  private text = '';
  private readonly toolCalls = new Map<number, string>();

  constructor(
    private readonly scope: RequestScope,
    private readonly endpoint: RegistryEndpoint,
  ) {
    const { input, completed } = scope;
    const identity = identityOf(scope, endpoint);
    this.traced = completed.tracing.full ? [] : null;
    this.sink = input.client.openStream(this.traced);
    this.renderer = input.dialect.stream(identity, { includeUsage: input.canonical.includeUsage });
  }

  readonly relay = async (chunk: CanonicalChunk): Promise<void> => {
    const { completed, startedAt } = this.scope;
    if (completed.ttfbMs === null) completed.ttfbMs = Date.now() - startedAt.getTime();
    if (chunk.usage) this.usage = chunk.usage;
    if (chunk.openingUsage) this.opening = chunk.openingUsage;
    if (chunk.raw?.service_tier !== undefined) this.serviceTier = chunk.raw.service_tier;
    if (chunk.serviceTier !== undefined) this.serviceTier = chunk.serviceTier;
    if (chunk.delta.content) this.text += chunk.delta.content;
    if (chunk.delta.reasoning_content) this.text += chunk.delta.reasoning_content;
    for (const t of chunk.delta.tool_calls ?? []) {
      if (t.function?.name) this.toolCalls.set(t.index, t.function.name);
      if (t.function?.arguments) this.text += t.function.arguments;
    }
    await this.sink.write(this.renderer.chunk(chunk));
  };

  /** Closes the stream, meters what was relayed and records the request. */
  end(failure: ServiceError | undefined): GatewayAnswer {
    const { scope, renderer, usage } = this;
    const { completed } = scope;
    this.sink.end(failure ? renderer.error(failure) : renderer.end(usage));
    for (const name of this.toolCalls.values())
      completed.toolSummary[name] = (completed.toolSummary[name] ?? 0) + 1;
    completed.usageEstimated = usage === null;
    scope.price(
      this.endpoint,
      'chat',
      usage ?? observedUsage(this.opening, scope.input.requestBytes, this.text),
      this.serviceTier,
    );
    return scope.endStream(this.sink, failure, this.traced);
  }
}
