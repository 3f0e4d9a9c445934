import { ServiceError } from '../lib/errors.js';
import { addUsd, compareUsd } from '../lib/money.js';
import { findRate } from '../pricing/index.js';
import type { Capability, RegistryEndpoint } from '../providers/endpoint.js';
import type { RegistrySnapshot } from './registry/snapshot.js';

export const AUTO_MODEL = 'svc/auto';

export type SelectResult = { ok: true; candidates: RegistryEndpoint[] } | { ok: false; error: ServiceError };

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
 * input plus output token price; ties keep registry order). Then capability gating (rule 3) and the
 * organization's provider disallow list. The errors tell the causes apart.
 */
export const selectCandidates = (
  snapshot: RegistrySnapshot,
  selector: string,
  options: {
    capability: Capability | readonly Capability[];
    disallow: ReadonlySet<string>;
    operation: string;
    atMs?: number;
  },
): SelectResult => {
  const atMs = options.atMs ?? Date.now();
  const parts = selector
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0) {
    return {
      ok: false,
      error: new ServiceError('invalid_request_error', 'model is required', { param: 'model' }),
    };
  }
  const unknown: string[] = [];
  const seen = new Set<string>();
  let candidates: RegistryEndpoint[] = [];
  for (const part of parts) {
    let found: RegistryEndpoint[];
    if (part === AUTO_MODEL) {
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
        .map((x) => x.e)
        .slice(0, 1);
    } else {
      found = snapshot.candidates(part, atMs);
    }
    if (found.length === 0 && part !== AUTO_MODEL) unknown.push(part);
    for (const e of found) {
      const key = `${e.lane}/${e.model}`;
      if (!seen.has(key)) {
        seen.add(key);
        candidates.push(e);
      }
    }
  }
  if (candidates.length === 0) {
    if (parts.length === 1 && parts[0] === AUTO_MODEL) {
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
  return { ok: true, candidates };
};
