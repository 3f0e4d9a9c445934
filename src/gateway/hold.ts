import type { EscrowPort } from '../commands/wallet/ports.js';
import { ServiceError } from '../lib/errors.js';
import { formatUsd, maxUsd, type Usd } from '../lib/money.js';
import { type EscrowShape, escrowEstimate } from '../pricing/index.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import { embeddingsPromptTokens } from './embeddings-input.js';
import type { RequestScope } from './scope.js';

/** What a messages-style request gets when neither the caller nor the registry states a ceiling. */
const UNSTATED_OUTPUT_TOKENS = 4_096;

/**
 * The most output the endpoint can bill for (SPEC 8 "escrow hold"): the request's limit, never
 * above the model's ceiling in the registry (a messages-style target is clamped to it, SPEC 4.2
 * rule 8; a reference upstream refuses a limit above it); with no limit, the ceiling itself.
 */
export const worstCaseOutput = (
  maxTokens: number | undefined,
  endpoint: Pick<RegistryEndpoint, 'max_output_tokens' | 'context_length'>,
): number => {
  const ceiling = endpoint.max_output_tokens ?? endpoint.context_length ?? null;
  if (maxTokens === undefined) return ceiling ?? UNSTATED_OUTPUT_TOKENS;
  return ceiling === null ? maxTokens : Math.min(maxTokens, ceiling);
};

/**
 * How many completions the upstream may write: each choice bills its own output. `n` passes to
 * reference-shaped upstreams as it came (SPEC 4.1 rule 6 refuses other values only on
 * messages-style routes); null when it is neither absent, null nor a positive safe integer, which
 * no hold can size (an upstream that coerced "5" would write five).
 */
const choicesOf = (n: unknown): number | null => {
  if (n === undefined || n === null) return 1;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 1 ? n : null;
};

/**
 * What a request may cost on one endpoint, estimated before dispatch (SPEC 8 "escrow hold"): the
 * prompt from the body's size (embeddings: from the input itself, and no output), the output at
 * its worst case on that endpoint, once per choice the request asks for.
 */
const IMAGE_OUTPUT_TOKENS_WORST = 6_240;
/**
 * An input image of an edit or variation, in tokens, at its worst: token-priced image models read
 * an input image at high fidelity in a few thousand tokens (the file's bytes say nothing of it).
 */
const IMAGE_INPUT_TOKENS_WORST = 8_000;

const shapeOf = (
  scope: RequestScope,
  endpoint: RegistryEndpoint,
  embeddingsPrompt: number,
  choices: number,
): EscrowShape => {
  const { canonical, requestBytes } = scope.input;
  switch (canonical.operation) {
    case 'embeddings':
      return { operation: 'embeddings', prompt_tokens: embeddingsPrompt, max_output_tokens: 0 };
    case 'images': {
      // Token-priced image models bill the output in image tokens: the largest a generated image
      // takes (a high-quality 1536x1024 image, 6,240 tokens) per image asked for.
      const images = Math.max(1, choices);
      const uploads = canonical.uploads ?? [];
      // An edit's text is its form fields; its files are images, counted as such, not by bytes.
      const textBytes = uploads.length > 0 ? Buffer.byteLength(JSON.stringify(canonical.raw)) : requestBytes;
      return {
        operation: 'image_generation',
        prompt_tokens: Math.max(1, Math.ceil(textBytes / 4)) + IMAGE_INPUT_TOKENS_WORST * uploads.length,
        max_output_tokens: IMAGE_OUTPUT_TOKENS_WORST * images,
        image_count: images,
      };
    }
    case 'responses':
      return {
        operation: 'responses',
        prompt_tokens: Math.max(1, Math.ceil(requestBytes / 4)),
        max_output_tokens: worstCaseOutput(canonical.maxTokens, endpoint),
      };
    default:
      return {
        operation: 'chat',
        prompt_tokens: Math.ceil(requestBytes / 4),
        max_output_tokens: worstCaseOutput(canonical.maxTokens, endpoint) * choices,
      };
  }
};

/**
 * Responses API fields that bring in context the upstream holds (an earlier response, a
 * conversation, a stored prompt): the upstream bills it as prompt, and the gateway cannot see its
 * size, so no hold sized from the body covers it. Other routes' fields of the same names mean
 * something else (an image request's `prompt` is its text).
 */
const UPSTREAM_STATE = ['previous_response_id', 'conversation', 'prompt'] as const;

/** Why no wallet-funded candidate can be held for this request, whatever its card; undefined: it can. */
export const unholdable = (canonical: RequestScope['input']['canonical']): string | undefined => {
  const state =
    canonical.operation === 'responses'
      ? UPSTREAM_STATE.find((f) => canonical.raw[f] !== undefined && canonical.raw[f] !== null)
      : undefined;
  if (state !== undefined)
    return `${state} brings in context the upstream holds, whose size no hold can cover; send the whole context, or use the project's own key`;
  if (choicesOf(canonical.n) === null)
    return `n=${JSON.stringify(canonical.n)} is not a positive integer, so no hold can cover what the upstream may write`;
  return undefined;
};

/**
 * Wallet-funded candidates hold the largest of their estimates before any upstream call (SPEC 1.4,
 * 8); candidates on the project's own key hold nothing. A wallet-funded candidate that cannot be
 * estimated is not dispatched at all: funded traffic never reaches an upstream without a hold.
 * Returns the candidates that may be dispatched, or why the request may not go on (402; 503 when
 * funds cannot be checked: it fails closed; 400 when no candidate can be held for).
 */
export const holdEscrow = async (
  scope: RequestScope,
  candidates: readonly RegistryEndpoint[],
): Promise<{ ok: true; candidates: readonly RegistryEndpoint[] } | { ok: false; error: ServiceError }> => {
  const { tenancy, registry, startedAt, input } = scope;
  const { key, requestId, canonical } = input;
  // Read only for a wallet-funded embeddings candidate: the edge has already checked the input.
  let embeddingsPrompt: number | undefined;
  const promptOf = () => {
    embeddingsPrompt ??=
      canonical.operation === 'embeddings' ? embeddingsPromptTokens(canonical.raw.input) : 0;
    return embeddingsPrompt;
  };
  let hold: Usd | null = null;
  const holdable: RegistryEndpoint[] = [];
  const unpriced: string[] = [];
  const refusal = unholdable(canonical);
  const choices = choicesOf(canonical.n) ?? 1;
  for (const e of candidates) {
    if (tenancy.credentials(key.projectId, e)?.funding !== 'wallet') {
      holdable.push(e);
      continue;
    }
    if (refusal !== undefined) {
      unpriced.push(`${e.lane}/${e.model}: ${refusal}`);
      continue;
    }
    const estimate = escrowEstimate(
      registry.cardAt(e, startedAt.getTime()),
      shapeOf(scope, e, promptOf(), choices),
    );
    if (estimate.status !== 'reserved') {
      unpriced.push(`${e.lane}/${e.model}: ${estimate.detail}`);
      continue;
    }
    holdable.push(e);
    hold = hold === null ? estimate.amount : maxUsd(hold, estimate.amount);
  }
  if (holdable.length === 0)
    return {
      ok: false,
      error: new ServiceError(
        'no_compatible_candidate',
        `no candidate can hold escrow for this request (${unpriced.join('; ')})`,
      ),
    };
  if (hold === null) return { ok: true, candidates: holdable };
  let held: Awaited<ReturnType<EscrowPort['hold']>>;
  try {
    held = await scope.deps.escrow.hold({
      requestId,
      workspaceId: key.workspaceId,
      amountUsd: formatUsd(hold),
    });
  } catch {
    // Funds cannot be checked: fail closed, in the caller's envelope, and still record the request.
    const error = new ServiceError('service_unavailable', 'wallet funds could not be checked; retry shortly');
    return { ok: false, error };
  }
  if (held.ok) return { ok: true, candidates: holdable };
  const error = new ServiceError(
    'insufficient_funds',
    held.reason === 'no_wallet'
      ? 'this workspace has no wallet funding platform-key traffic'
      : `insufficient wallet funds: this request holds up to ${formatUsd(hold)} USD${held.availableUsd ? `, ${held.availableUsd} USD available` : ''}`,
  );
  return { ok: false, error };
};
