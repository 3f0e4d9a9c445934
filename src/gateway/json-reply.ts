import { ServiceError } from '../lib/errors.js';
import type { Operation as PricingOperation } from '../pricing/index.js';
import type { CanonicalRequest, Usage } from '../providers/contract.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import {
  type JsonOperation,
  type JsonReply,
  type RelayedEvent,
  unsupportedOperation,
} from '../providers/provider.js';
import { estimatedUsage } from './metering.js';
import type { AttemptCall } from './pipeline.js';
import { DONE_FRAME, frameOf, relayedErrorFrame } from './render/relayed.js';
import type { FrameSink, GatewayAnswer, RequestScope } from './scope.js';

/**
 * The primary dialect's JSON operations (SPEC 4.1: embeddings, responses): the upstream's own body,
 * or its SSE events relayed as they came, priced under the operation's meters.
 */

/** One attempt of the operation; a provider that does not serve it fails over to the next candidate. */
export const jsonCall = (
  canonical: CanonicalRequest,
  operation: JsonOperation,
): AttemptCall<JsonReply, RelayedEvent> => {
  return (adapter, target) => {
    const serve = adapter[operation];
    return serve
      ? serve.call(adapter, canonical, target)
      : Promise.resolve({ ok: false, failure: unsupportedOperation(adapter.id, operation) });
  };
};

/** The pricing engine's name of each JSON operation. */
export const PRICED_AS: Record<JsonOperation, PricingOperation> = {
  embeddings: 'embeddings',
  responses: 'responses',
  moderations: 'moderations',
  images: 'image_generation',
};

/** No image completed: nothing the gateway saw to price (a stream cut before its first image). */
const NO_IMAGES: Usage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  images: { input_image_tokens: 0, output_image_tokens: 0, image_count: 0 },
};

/** Usage the upstream reported, else an estimate from the body's size and the text generated. */
const priceJson = (
  scope: RequestScope,
  endpoint: RegistryEndpoint,
  operation: JsonOperation,
  usage: Usage | null,
  serviceTier: unknown,
  text: string,
): void => {
  scope.completed.usageEstimated = usage === null;
  const observed =
    usage ?? (operation === 'images' ? NO_IMAGES : estimatedUsage(scope.input.requestBytes, text));
  scope.price(endpoint, PRICED_AS[operation], observed, serviceTier);
};

/** A whole reply: the upstream's body as it came, priced, answered. */
export const answerJsonReply = (
  scope: RequestScope,
  endpoint: RegistryEndpoint,
  operation: JsonOperation,
  reply: JsonReply,
): GatewayAnswer => {
  priceJson(scope, endpoint, operation, reply.usage, reply.serviceTier, '');
  return scope.answer(JSON.stringify(reply.body));
};

/**
 * A relayed event stream, committed at its first event: later failures end it in band with the
 * operation's own error event and [DONE] (SPEC 4.1 rule 5, 7.6 rule 1).
 */
export class JsonEventStream {
  readonly sink: FrameSink;
  private readonly traced: string[] | null;
  private usage: Usage | null = null;
  private serviceTier: unknown;
  /** What was generated, for pricing a stream that ended without its completed event. */
  private text = '';
  private failure: ServiceError | undefined;

  constructor(
    private readonly scope: RequestScope,
    private readonly endpoint: RegistryEndpoint,
    private readonly operation: JsonOperation,
  ) {
    this.traced = scope.completed.tracing.full ? [] : null;
    this.sink = scope.input.client.openStream(this.traced);
  }

  readonly relay = async (e: RelayedEvent): Promise<void> => {
    const { completed, startedAt } = this.scope;
    if (completed.ttfbMs === null) completed.ttfbMs = Date.now() - startedAt.getTime();
    if (e.usage) this.usage = e.usage;
    if (e.serviceTier !== undefined) this.serviceTier = e.serviceTier;
    if (e.text) this.text += e.text;
    // The upstream's own terminal failure reaches the client as sent; the request is a failed stream.
    if (e.failure) this.failure = new ServiceError('upstream_stream_error', e.failure);
    await this.sink.write(frameOf(e));
  };

  /** Closes the stream, prices what was relayed and records the request. */
  end(failed: ServiceError | undefined): GatewayAnswer {
    const { scope } = this;
    if (failed) this.failure = failed;
    this.sink.end(failed ? [relayedErrorFrame(failed, scope.input.requestId), DONE_FRAME] : []);
    priceJson(scope, this.endpoint, this.operation, this.usage, this.serviceTier, this.text);
    return scope.endStream(this.sink, this.failure, this.traced);
  }
}
