import { validateOrigin } from '../../lib/origin.js';
import type { Validated } from '../../lib/validated.js';
import type { OriginSource } from '../destinations.js';
import { NO_BASE_URL } from '../endpoint.js';
import { type DeploymentHostMetadata, validateDeploymentHostMetadata } from './credentials.js';

/** The deployment-host lanes: one commercial, one government (ARCHITECTURE.md provider ids). */
export type DeploymentHostAdapter = 'azure' | 'azure-gov';

/** SPEC 2.7: an absent metadata.domain means the lane's default host suffix. */
export const DEFAULT_DOMAIN: Readonly<Record<DeploymentHostAdapter, string>> = {
  azure: 'openai.azure.com',
  'azure-gov': 'openai.azure.us',
};

export type ResolvedOrigin =
  | { ok: true; origin: string; source: OriginSource }
  | { ok: false; message: string };

/** https://{resource}.{domain}: where the responses call always goes, and the last origin candidate. */
export const derivedHost = (metadata: DeploymentHostMetadata, adapter: DeploymentHostAdapter): string =>
  new URL(`https://${metadata.resource}.${metadata.domain ?? DEFAULT_DOMAIN[adapter]}`).origin;

/**
 * SPEC 4.7 origin resolution, first usable wins: the connection's base_url column, the lane default
 * from the catalog (the placeholder https://unused.invalid means none), then the derived host. Each
 * candidate must be a bare origin; plain HTTP only for a loopback host.
 */
export const resolveOrigin = (input: {
  connectionBaseUrl: string | null;
  laneBaseUrl: string | null;
  metadata: DeploymentHostMetadata;
  adapter: DeploymentHostAdapter;
}): ResolvedOrigin => {
  const candidates: [OriginSource, string | null][] = [
    ['connection', input.connectionBaseUrl],
    ['lane', input.laneBaseUrl],
    ['derived', derivedHost(input.metadata, input.adapter)],
  ];
  const refused: string[] = [];
  for (const [source, value] of candidates) {
    if (value === null || value.replace(/\/+$/, '') === NO_BASE_URL) continue;
    const origin = validateOrigin(value, `${source} origin`);
    if (origin.ok) return { ok: true, origin: origin.value, source };
    refused.push(origin.message);
  }
  return { ok: false, message: `no usable origin: ${refused.join('; ')}` };
};

// The request path reads the same metadata object for every request until the tenancy snapshot
// reloads, so each object is validated once.
const parsed = new WeakMap<object, Validated<DeploymentHostMetadata>>();

/** The stored metadata read back through the SPEC 2.7 validator (normalised deployments map). */
export const deploymentHostMetadata = (
  adapter: DeploymentHostAdapter,
  metadata: Record<string, unknown>,
): Validated<DeploymentHostMetadata> => {
  const known = parsed.get(metadata);
  if (known !== undefined) return known;
  const checked = validateDeploymentHostMetadata(adapter, metadata);
  parsed.set(metadata, checked);
  return checked;
};

/**
 * A deployment as the connection stores it may be a resource path (`.../deployments/<name>`); the
 * data plane addresses deployments by their short name only.
 */
export const shortDeploymentName = (id: string): string => {
  const segments = id.split('/').filter((s) => s !== '');
  return segments.at(-1) ?? id;
};

/** metadata.deployments under the canonical model id, else under the upstream's own model id. */
export const deploymentFor = (
  metadata: DeploymentHostMetadata,
  endpoint: { model: string; provider_model_id: string },
): string | undefined => {
  const name = Object.hasOwn(metadata.deployments, endpoint.model)
    ? metadata.deployments[endpoint.model]
    : Object.hasOwn(metadata.deployments, endpoint.provider_model_id)
      ? metadata.deployments[endpoint.provider_model_id]
      : undefined;
  return name === undefined ? undefined : shortDeploymentName(name);
};
