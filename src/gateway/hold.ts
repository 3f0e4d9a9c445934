import type { EscrowPort } from '../commands/wallet/ports.js';
import { ServiceError } from '../lib/errors.js';
import { formatUsd, maxUsd, type Usd } from '../lib/money.js';
import { type EscrowShape, escrowEstimate } from '../pricing/index.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import { embeddingsPromptTokens } from './embeddings-input.js';
import type { RequestScope } from './scope.js';

/**
 * What a request may cost on one endpoint, estimated before dispatch (SPEC 8 "escrow hold"): the
 * prompt from the body's size (embeddings: from the input itself, and no output), the output up to
 * the request's limit, else the endpoint's, else 4,096 tokens.
 */
const shapeOf = (scope: RequestScope, endpoint: RegistryEndpoint, embeddingsPrompt: number): EscrowShape => {
  const { canonical, requestBytes } = scope.input;
  switch (canonical.operation) {
    case 'embeddings':
      return { operation: 'embeddings', prompt_tokens: embeddingsPrompt, max_output_tokens: 0 };
    case 'responses':
      return {
        operation: 'responses',
        prompt_tokens: Math.max(1, Math.ceil(requestBytes / 4)),
        max_output_tokens: canonical.maxTokens ?? endpoint.max_output_tokens ?? 4_096,
      };
    default:
      return {
        operation: 'chat',
        prompt_tokens: Math.ceil(requestBytes / 4),
        max_output_tokens: canonical.maxTokens ?? endpoint.max_output_tokens ?? 4_096,
      };
  }
};

/**
 * Wallet-funded candidates hold the largest of their estimates before any upstream call (SPEC 1.4,
 * 8); candidates on the project's own key hold nothing. Returns why the request may not go on (402,
 * or 503 when funds cannot be checked: it fails closed), or null.
 */
export const holdEscrow = async (
  scope: RequestScope,
  candidates: readonly RegistryEndpoint[],
): Promise<ServiceError | null> => {
  const { tenancy, registry, startedAt, input } = scope;
  const { key, requestId, canonical } = input;
  const embeddingsPrompt =
    canonical.operation === 'embeddings' ? embeddingsPromptTokens(canonical.raw.input) : 0;
  let hold: Usd | null = null;
  for (const e of candidates) {
    if (tenancy.credentials(key.projectId, e)?.funding !== 'wallet') continue;
    const estimate = escrowEstimate(
      registry.cardAt(e, startedAt.getTime()),
      shapeOf(scope, e, embeddingsPrompt),
    );
    if (estimate.status === 'reserved')
      hold = hold === null ? estimate.amount : maxUsd(hold, estimate.amount);
  }
  if (hold === null) return null;
  let held: Awaited<ReturnType<EscrowPort['hold']>>;
  try {
    held = await scope.deps.escrow.hold({
      requestId,
      workspaceId: key.workspaceId,
      amountUsd: formatUsd(hold),
    });
  } catch {
    // Funds cannot be checked: fail closed, in the caller's envelope, and still record the request.
    return new ServiceError('service_unavailable', 'wallet funds could not be checked; retry shortly');
  }
  if (held.ok) return null;
  return new ServiceError(
    'insufficient_funds',
    held.reason === 'no_wallet'
      ? 'this workspace has no wallet funding platform-key traffic'
      : `insufficient wallet funds: this request holds up to ${formatUsd(hold)} USD${held.availableUsd ? `, ${held.availableUsd} USD available` : ''}`,
  );
};
