import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RegistrySnapshot } from '../../../gateway/registry/snapshot.js';
import type { TenancySnapshot } from '../../../gateway/tenancy.js';
import { ServiceError } from '../../../lib/errors.js';
import type { RegistryEndpoint } from '../../../providers/endpoint.js';

interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  capabilities: Record<string, boolean>;
  /** The `lane/model` ids a canonical entry routes to. */
  endpoints?: string[];
}

const createdOf = (e: RegistryEndpoint) => {
  const t = e.release_date ? Date.parse(e.release_date) : Number.NaN;
  return Number.isNaN(t) ? 0 : Math.floor(t / 1_000);
};

/** Endpoints the caller's organization may route to: routable and not on its disallow list. */
const visible = (registry: RegistrySnapshot, tenancy: TenancySnapshot, orgId: string) => {
  const disallow = tenancy.org(orgId)?.disallow ?? new Set<string>();
  return registry.routable().filter((e) => !disallow.has(e.lane) && !disallow.has(e.adapter));
};

/** SPEC 4.7: a deployment-host endpoint reports responses false whatever its catalog row says. */
const capabilitiesOf = (e: RegistryEndpoint): Record<string, boolean> =>
  e.adapter === 'azure' || e.adapter === 'azure-gov'
    ? { ...e.capabilities, responses: false }
    : { ...e.capabilities };

/**
 * The tenant-visible catalog (SPEC 4.1): every canonical model id, then every provider-pinned
 * `lane/model` id, in the OpenAI list shape. Capabilities ride along so clients can tell, e.g.,
 * that a deployment-host endpoint has no responses support.
 */
export const catalogOf = (endpoints: readonly RegistryEndpoint[]): ModelObject[] => {
  const canonical = new Map<string, RegistryEndpoint[]>();
  for (const e of endpoints) canonical.set(e.model, [...(canonical.get(e.model) ?? []), e]);
  const models: ModelObject[] = [];
  for (const [id, list] of canonical) {
    const capabilities: Record<string, boolean> = {};
    for (const e of list)
      for (const [k, v] of Object.entries(capabilitiesOf(e)))
        capabilities[k] = (capabilities[k] ?? false) || v;
    models.push({
      id,
      object: 'model',
      created: Math.max(...list.map(createdOf)),
      owned_by: 'svc',
      capabilities,
      endpoints: list.map((e) => `${e.lane}/${e.model}`),
    });
  }
  for (const e of endpoints) {
    models.push({
      id: `${e.lane}/${e.model}`,
      object: 'model',
      created: createdOf(e),
      owned_by: e.lane,
      capabilities: capabilitiesOf(e),
    });
  }
  return models;
};

export const registerModelRoutes = (
  v1: FastifyInstance,
  deps: { registry: () => RegistrySnapshot; tenancy: () => TenancySnapshot },
): void => {
  const catalog = (request: FastifyRequest) =>
    catalogOf(visible(deps.registry(), deps.tenancy(), request.apiKey!.orgId));
  v1.get('/models', async (request) => ({ object: 'list', data: catalog(request) }));
  // Provider-pinned ids hold a '/', so the id is the rest of the path.
  v1.get('/models/*', async (request) => {
    const id = decodeURIComponent((request.params as { '*': string })['*']);
    const found = catalog(request).find((m) => m.id === id);
    if (!found) throw new ServiceError('not_found', `model ${id} is not in this catalog`, { param: 'model' });
    return found;
  });
};
