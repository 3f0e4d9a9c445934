import { ServiceError } from '../lib/errors.js';
import { isPlainObject } from '../lib/fields.js';
import type { CanonicalRequest, Route } from '../providers/contract.js';
import type { Adapter, Capability, RegistryEndpoint } from '../providers/endpoint.js';

/** Adapters speaking the messages-style wire (ARCHITECTURE.md: provider id `anthropic`). */
export const MESSAGES_STYLE: ReadonlySet<Adapter> = new Set<Adapter>(['anthropic']);

/** The candidates a request may go to after route-level rules, or why none may (decided before any attempt). */
export type RouteVerdict = { ok: true; candidates: RegistryEndpoint[] } | { ok: false; error: ServiceError };

const named = (list: readonly RegistryEndpoint[]) => list.map((e) => `${e.lane}/${e.model}`).join(', ');

const others = (list: readonly RegistryEndpoint[], what: string) =>
  list.length > 0
    ? `; the route's other candidates (${named(list)}) can serve it: name one of them as model`
    : `; no other candidate of this route can serve ${what}`;

/**
 * SPEC 4.1 rule 6: n other than absent, null or 1 is refused once for the whole route when any
 * candidate is messages-style, even if another candidate could serve it; the message names those.
 */
export const refuseN = (
  request: CanonicalRequest,
  candidates: readonly RegistryEndpoint[],
): ServiceError | null => {
  const n = request.n;
  if (n === undefined || n === null || n === 1) return null;
  const messages = candidates.filter((e) => MESSAGES_STYLE.has(e.adapter));
  if (messages.length === 0) return null;
  return new ServiceError(
    'invalid_request_error',
    `n=${JSON.stringify(n)} is not supported by messages-style candidates (${named(messages)}), which accept only n absent, null or 1${others(
      candidates.filter((e) => !MESSAGES_STYLE.has(e.adapter)),
      `n=${JSON.stringify(n)}`,
    )}`,
    { param: 'n' },
  );
};

/** Families of paid hosted tools, matched by prefix so preview and dated revisions match too. */
const HOSTED_FAMILIES = ['web_search', 'computer_use', 'code_interpreter', 'image_generation'];

const hostedTools = (request: CanonicalRequest): string[] => {
  const found: string[] = [];
  if (Array.isArray(request.tools))
    for (const t of request.tools)
      if (
        isPlainObject(t) &&
        typeof t.type === 'string' &&
        HOSTED_FAMILIES.some((f) => (t.type as string).startsWith(f))
      )
        found.push(t.type);
  if (isPlainObject(request.raw.web_search_options)) found.push('web_search_options');
  return found;
};

/**
 * SPEC 4.1 rule 8: paid hosted tools cannot be metered on the reference provider, so a route that
 * includes one of its candidates refuses them whole, naming the candidates that could serve them.
 */
export const refuseHostedTools = (
  request: CanonicalRequest,
  candidates: readonly RegistryEndpoint[],
): ServiceError | null => {
  const tools = hostedTools(request);
  if (tools.length === 0) return null;
  const reference = candidates.filter((e) => e.adapter === 'openai');
  if (reference.length === 0) return null;
  return new ServiceError(
    'bad_request',
    `paid hosted tools (${[...new Set(tools)].join(', ')}) cannot be metered on ${named(reference)}${others(
      candidates.filter((e) => e.adapter !== 'openai'),
      'them',
    )}`,
    { param: 'tools' },
  );
};

/**
 * SPEC 4.2 rule 8 and 4.1 rule 3: extended thinking pins the route to messages-style endpoints that
 * advertise reasoning; none left is a 400 with no upstream call and no attempt.
 */
export const pinForThinking = (
  request: CanonicalRequest,
  candidates: readonly RegistryEndpoint[],
): RouteVerdict => {
  if (!request.preserved?.thinking) return { ok: true, candidates: [...candidates] };
  const pinned = candidates.filter((e) => MESSAGES_STYLE.has(e.adapter) && e.capabilities.reasoning);
  if (pinned.length > 0) return { ok: true, candidates: pinned };
  return {
    ok: false,
    error: new ServiceError(
      'no_compatible_candidate',
      `extended thinking needs a messages-style endpoint advertising reasoning; none of ${named(candidates)} is one`,
      { param: 'thinking' },
    ),
  };
};

/** Every route-level rule of SPEC 4.1 and 4.2 for chat-shaped requests, in order. */
export const routeRules = (
  request: CanonicalRequest,
  candidates: readonly RegistryEndpoint[],
): RouteVerdict => {
  const pinned = pinForThinking(request, candidates);
  if (!pinned.ok) return pinned;
  const refusal = refuseN(request, pinned.candidates) ?? refuseHostedTools(request, pinned.candidates);
  return refusal ? { ok: false, error: refusal } : pinned;
};

/** The one model family that makes image variations (SPEC 4.1 route table). */
export const VARIATIONS_FAMILY = 'dall-e-2';

const isVariationsFamily = (e: RegistryEndpoint) =>
  [e.model, e.provider_model_id].some(
    (id) =>
      id === VARIATIONS_FAMILY ||
      id.startsWith(`${VARIATIONS_FAMILY}-`) ||
      id.endsWith(`/${VARIATIONS_FAMILY}`),
  );

/** SPEC 4.1: image variations are served by one model family; other candidates are filtered out. */
const variationsRule = (_request: CanonicalRequest, candidates: RegistryEndpoint[]): RouteVerdict => {
  const family = candidates.filter(isVariationsFamily);
  if (family.length > 0) return { ok: true, candidates: family };
  return {
    ok: false,
    error: new ServiceError(
      'no_compatible_candidate',
      `image variations are made by the ${VARIATIONS_FAMILY} model family only; none of ${named(candidates)} is one`,
      { param: 'model' },
    ),
  };
};

/** SPEC 4.1 rule 8 for the responses route: the paid hosted tools rule alone. */
const hostedToolsRule = (request: CanonicalRequest, candidates: RegistryEndpoint[]): RouteVerdict => {
  const refusal = refuseHostedTools(request, candidates);
  if (refusal) return { ok: false, error: refusal };
  return hasFileSearch(request) ? pinForFileSearch(candidates) : { ok: true, candidates };
};

const hasFileSearch = (request: CanonicalRequest) =>
  Array.isArray(request.raw.tools) &&
  request.raw.tools.some((t) => isPlainObject(t) && t.type === 'file_search');

/**
 * SPEC 4.1 hosted file_search: the service retrieves, and the rewritten request is a responses call
 * to the reference provider, so only its endpoints may serve it.
 */
const pinForFileSearch = (candidates: RegistryEndpoint[]): RouteVerdict => {
  const reference = candidates.filter((e) => e.adapter === 'openai');
  if (reference.length > 0) return { ok: true, candidates: reference };
  return {
    ok: false,
    error: new ServiceError(
      'no_compatible_candidate',
      `hosted file_search is dispatched to the reference provider only; none of ${named(candidates)} is one (POST /v1/vector_stores/{id}/search works with any provider)`,
      { param: 'tools' },
    ),
  };
};

/** How a route admits a request: whom it may go to, and what is decided once for the whole route. */
export interface RoutePolicy {
  /** SPEC 4.1 rule 3: candidates advertising none of these are filtered out before dispatch. */
  capability: Capability | readonly Capability[];
  /** Named in errors: "no candidate for X supports <describe>". */
  describe: string;
  /** Decided once for the whole route, before escrow and before any attempt. */
  rules?: (request: CanonicalRequest, candidates: RegistryEndpoint[]) => RouteVerdict;
  /** Spends nothing (token counting, SPEC 4.2 rule 9), so a spend cap does not refuse it. */
  zeroRated?: boolean;
}

export const ROUTE_POLICY: Readonly<Record<Route, RoutePolicy>> = {
  '/v1/chat/completions': { capability: 'chat', describe: 'chat completions', rules: routeRules },
  '/alt/v1/messages': { capability: 'chat', describe: 'messages', rules: routeRules },
  '/alt/v1/messages/count_tokens': {
    capability: 'chat',
    describe: 'token counting',
    rules: routeRules,
    zeroRated: true,
  },
  '/v1/embeddings': { capability: 'embeddings', describe: 'embeddings' },
  // SPEC 4.1: reference-provider upstreams only (no other adapter serves it), priced at zero.
  '/v1/moderations': { capability: 'moderations', describe: 'moderations', zeroRated: true },
  '/v1/images/generations': { capability: 'images', describe: 'image generation' },
  '/v1/images/edits': { capability: 'images', describe: 'image edits' },
  // SPEC 4.1: one model family only.
  '/v1/images/variations': { capability: 'images', describe: 'image variations', rules: variationsRule },
  // Not gated on the responses flag alone (SPEC 4.1 rule 3 names embeddings, not responses): a
  // chat model may take a responses call, as deployment hosts do although /v1/models reports
  // responses false for them (SPEC 4.7), and a provider that cannot answers with the structured
  // unsupported error, leaving the next candidate free to serve.
  '/v1/responses': { capability: ['responses', 'chat'], describe: 'responses', rules: hostedToolsRule },
};
