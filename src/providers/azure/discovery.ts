import type { ListedDeployment } from './listing.js';

/**
 * SPEC 4.6 deployment discovery, the pure part: each listed deployment classified against the
 * connection's deployments map and the registry, and the map an apply would store.
 */

export type Classification = 'mapped' | 'mappable' | 'unsupported';

/** An enabled, live registry endpoint served by the connection's adapter. */
export interface RegistryFact {
  lane: string;
  model: string;
  provider_model_id: string;
  base_url: string | null;
}

export interface ClassifiedDeployment {
  name: string;
  identifiers: string[];
  model: string | null;
  model_version: string | null;
  status: string | null;
  classification: Classification;
  /** mapped: the model ids whose mapping names it; mappable: the model ids it would serve. */
  models: string[];
}

export interface DiscoveryCounts {
  listed: number;
  mapped: number;
  mappable: number;
  unsupported: number;
  added: number;
  pruned: number;
  rewritten: number;
  kept: number;
}

export interface DiscoveryPlan {
  deployments: Record<string, string>;
  added: { model: string; deployment: string }[];
  pruned: { model: string; deployment: string }[];
  rewritten: { model: string; from: string; to: string }[];
  kept: number;
}

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The listed deployment a stored mapping names, under any identifier the listing reported. */
const holderOf = (stored: string, listed: readonly ListedDeployment[]) =>
  listed.find((d) => d.identifiers.includes(stored));

export const classify = (
  listed: readonly ListedDeployment[],
  mappings: Readonly<Record<string, string>>,
  registry: readonly RegistryFact[],
): ClassifiedDeployment[] =>
  [...listed].sort(byName).map((d) => {
    const base = {
      name: d.name,
      identifiers: d.identifiers,
      model: d.model,
      model_version: d.modelVersion,
      status: d.status,
    };
    const mappedBy = Object.keys(mappings)
      .filter((model) => d.identifiers.includes(mappings[model] ?? ''))
      .sort();
    if (mappedBy.length > 0) return { ...base, classification: 'mapped', models: mappedBy };
    const serves =
      d.model === null
        ? []
        : [
            ...new Set(
              registry
                .filter((e) => e.provider_model_id === d.model || e.model === d.model)
                .map((e) => e.model),
            ),
          ].sort();
    return serves.length > 0
      ? { ...base, classification: 'mappable', models: serves }
      : { ...base, classification: 'unsupported', models: [] };
  });

/**
 * What apply stores: mappings whose deployment is still listed, under its short name (a mapping
 * stored as a path is rewritten); mappings whose deployment is gone are pruned; each mappable
 * deployment fills the models that still have no mapping, first by name winning.
 */
export const planApply = (
  listed: readonly ListedDeployment[],
  classified: readonly ClassifiedDeployment[],
  mappings: Readonly<Record<string, string>>,
): DiscoveryPlan => {
  const entries: [string, string][] = [];
  const plan: DiscoveryPlan = { deployments: {}, added: [], pruned: [], rewritten: [], kept: 0 };
  const taken = new Set<string>();
  for (const [model, stored] of Object.entries(mappings)) {
    const holder = holderOf(stored, listed);
    if (holder === undefined) {
      plan.pruned.push({ model, deployment: stored });
      continue;
    }
    if (holder.name !== stored) plan.rewritten.push({ model, from: stored, to: holder.name });
    else plan.kept += 1;
    entries.push([model, holder.name]);
    taken.add(model);
  }
  for (const d of classified) {
    if (d.classification !== 'mappable') continue;
    for (const model of d.models) {
      if (taken.has(model)) continue;
      taken.add(model);
      entries.push([model, d.name]);
      plan.added.push({ model, deployment: d.name });
    }
  }
  // fromEntries defines own properties, so a model id such as `__proto__` stays data.
  plan.deployments = Object.fromEntries(entries);
  return plan;
};

export const countsOf = (
  classified: readonly ClassifiedDeployment[],
  plan: DiscoveryPlan,
): DiscoveryCounts => ({
  listed: classified.length,
  mapped: classified.filter((d) => d.classification === 'mapped').length,
  mappable: classified.filter((d) => d.classification === 'mappable').length,
  unsupported: classified.filter((d) => d.classification === 'unsupported').length,
  added: plan.added.length,
  pruned: plan.pruned.length,
  rewritten: plan.rewritten.length,
  kept: plan.kept,
});
