import { ServiceError } from '../lib/errors.js';
import { addUsd, compareUsd } from '../lib/money.js';
import { findRate } from '../pricing/index.js';
import type { Capability, RegistryEndpoint } from '../providers/endpoint.js';
import type { RegistrySnapshot } from './registry/snapshot.js';

export const AUTO_MODEL = 'svc/auto';

/**
 * `auto`: the candidates `svc/auto` brought, cheapest first, all of them: policy admission may
 * remove some before the request keeps the first one left (`keepCheapestAuto`).
 */
export type SelectResult =
  | { ok: true; candidates: RegistryEndpoint[]; auto?: ReadonlySet<RegistryEndpoint> }
  | { ok: false; error: ServiceError };

/**
 * `svc/auto` serves through the cheapest capable endpoint the request may use: of the candidates
 * it brought, only the first one left stays; the others named explicitly stay as they were.
 */
export const keepCheapestAuto = (
  candidates: RegistryEndpoint[],
  auto: ReadonlySet<RegistryEndpoint> | undefined,
): RegistryEndpoint[] => {
  if (!auto || auto.size === 0) return candidates;
  let kept = false;
  return candidates.filter((e) => {
    if (!auto.has(e)) return true;
    if (kept) return false;
    kept = true;
    return true;
  });
};

/**
 * One entry of a selector's fallback list: `svc/auto`; a model id or `lane/model` (SPEC 4.1 rule 1),
 * read by the registry; or `lane:connection/model`, the model on that lane through the project's
 * connection of that name (SPEC 5: names other than primary are routed only when a selector names
 * them). Lane names hold no ':' and connection names no '/' or ':', so the first '/' ends the prefix
 * and the first ':' in it ends the lane; the model id after it may hold either.
 */
export type SelectorPart =
  | { kind: 'auto' }
  | { kind: 'model'; text: string }
  | { kind: 'connection'; text: string; lane: string; connection: string; model: string };

export const parseSelectorPart = (text: string): SelectorPart => {
  if (text === AUTO_MODEL) return { kind: 'auto' };
  const slash = text.indexOf('/');
  const colon = slash > 0 ? text.slice(0, slash).indexOf(':') : -1;
  if (colon < 0) return { kind: 'model', text };
  return {
    kind: 'connection',
    text,
    lane: text.slice(0, colon).trim(),
    connection: text.slice(colon + 1, slash).trim(),
    model: text.slice(slash + 1).trim(),
  };
};

/** The comma-separated fallback list, blanks dropped. */
export const parseSelector = (selector: string): SelectorPart[] =>
  selector
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(parseSelectorPart);

const price = (snapshot: RegistrySnapshot, e: RegistryEndpoint, atMs: number) => {
  const card = snapshot.cardAt(e, atMs);
  const input = card && findRate(card, 'standard', 'input_token', 'text', 0);
  const output = card && findRate(card, 'standard', 'output_token', 'text', 0);
  return input && output ? addUsd(input.price, output.price) : undefined;
};

/** Endpoints advertising any of the capabilities qualify (responses: responses or chat models). */
const advertises = (e: RegistryEndpoint, capability: Capability | readonly Capability[]): boolean =>
  typeof capability === 'string' ? e.capabilities[capability] : capability.some((c) => e.capabilities[c]);

/**
 * Resolves a model selector (SPEC 4.1 rule 1) to ordered candidates: a model id, `lane/model`, a
 * comma-separated fallback list, or `svc/auto` (the cheapest capable endpoint by its standard text
 * input plus output token price; ties keep registry order); `lane:connection/model` pins a lane and
 * the project's connection of that name (SPEC 5), which must exist (`hasConnection`). Then capability
 * gating (rule 3) and the organization's provider disallow list. The errors tell the causes apart.
 */
export const selectCandidates = (
  snapshot: RegistrySnapshot,
  selector: string,
  options: {
    capability: Capability | readonly Capability[];
    disallow: ReadonlySet<string>;
    operation: string;
    /** Whether the project has a connection of this name serving the endpoint's lane (SPEC 5). */
    hasConnection: (endpoint: RegistryEndpoint, name: string) => boolean;
    atMs?: number;
  },
): SelectResult => {
  const atMs = options.atMs ?? Date.now();
  const parts = parseSelector(selector);
  if (parts.length === 0) {
    return {
      ok: false,
      error: new ServiceError('invalid_request_error', 'model is required', { param: 'model' }),
    };
  }
  const unknown: string[] = [];
  const seen = new Set<string>();
  const auto = new Set<RegistryEndpoint>();
  let candidates: RegistryEndpoint[] = [];
  for (const part of parts) {
    let found: RegistryEndpoint[];
    if (part.kind === 'auto') {
      found = snapshot
        .routable(atMs)
        .filter(
          (e) =>
            advertises(e, options.capability) &&
            !options.disallow.has(e.lane) &&
            !options.disallow.has(e.adapter),
        )
        .map((e) => ({ e, p: price(snapshot, e, atMs) }))
        .filter((x) => x.p !== undefined)
        .sort((a, b) => compareUsd(a.p!, b.p!))
        .map((x) => x.e);
      for (const e of found) if (!seen.has(`${e.connection ?? ''}:${e.lane}/${e.model}`)) auto.add(e);
    } else if (part.kind === 'model') {
      found = snapshot.candidates(part.text, atMs);
    } else {
      // A canonical id wins over a `lane:connection/model` reading of the same text.
      const canonical = snapshot.byModel(part.text, atMs);
      const targeted =
        canonical.length > 0 ? canonical : targetConnection(snapshot, part, options.hasConnection, atMs);
      if (targeted instanceof ServiceError) return { ok: false, error: targeted };
      found = targeted;
    }
    if (found.length === 0 && part.kind !== 'auto') unknown.push(part.text);
    for (const e of found) {
      const key = `${e.connection ?? ''}:${e.lane}/${e.model}`;
      if (!seen.has(key)) {
        seen.add(key);
        candidates.push(e);
      } else if (part.kind !== 'auto') {
        // Named explicitly as well: it stays whatever svc/auto keeps.
        const brought = candidates.find((c) => `${c.connection ?? ''}:${c.lane}/${c.model}` === key);
        if (brought) auto.delete(brought);
      }
    }
  }
  if (candidates.length === 0) {
    if (parts.length === 1 && parts[0]!.kind === 'auto') {
      return {
        ok: false,
        error: new ServiceError(
          'no_compatible_candidate',
          `svc/auto found no enabled, priced endpoint supporting ${options.operation}`,
        ),
      };
    }
    return {
      ok: false,
      error: new ServiceError(
        'unknown_model',
        `model ${unknown.join(', ')} is not available: no enabled, priced endpoint serves it`,
        { param: 'model' },
      ),
    };
  }
  const capable = candidates.filter((e) => advertises(e, options.capability));
  if (capable.length === 0) {
    return {
      ok: false,
      error: new ServiceError(
        'no_compatible_candidate',
        `no candidate for ${selector} supports ${options.operation}`,
        { param: 'model' },
      ),
    };
  }
  candidates = capable.filter((e) => !options.disallow.has(e.lane) && !options.disallow.has(e.adapter));
  if (candidates.length === 0) {
    return {
      ok: false,
      error: new ServiceError(
        'no_compatible_candidate',
        `the organization's provider disallow list excludes every endpoint for ${selector} (${[...new Set(capable.map((e) => e.lane))].join(', ')})`,
        { param: 'model' },
      ),
    };
  }
  return auto.size > 0 ? { ok: true, candidates, auto } : { ok: true, candidates };
};

/**
 * `lane:connection/model`: the routable endpoint of the lane for the model, bound to the named
 * connection; nothing when the lane does not serve the model (an unknown model); a 404 naming the
 * connection when the project has none of that name for the lane. A platform key never stands in
 * for a connection the caller named.
 */
const targetConnection = (
  snapshot: RegistrySnapshot,
  part: Extract<SelectorPart, { kind: 'connection' }>,
  hasConnection: (endpoint: RegistryEndpoint, name: string) => boolean,
  atMs: number,
): RegistryEndpoint[] | ServiceError => {
  const { lane, connection, model } = part;
  if (connection === '') {
    return new ServiceError(
      'invalid_request_error',
      `model ${part.text} names no connection: write lane:connection/model, e.g. ${lane}:primary/${model}`,
      { param: 'model' },
    );
  }
  const endpoint = snapshot.byLaneModel(lane, model, atMs);
  if (endpoint === undefined) return [];
  if (!hasConnection(endpoint, connection)) {
    return new ServiceError(
      'unknown_connection',
      `model ${part.text} names connection ${connection}, which this project does not have for lane ${lane} (${endpoint.adapter})`,
      { param: 'model' },
    );
  }
  return [Object.freeze({ ...endpoint, connection })];
};
