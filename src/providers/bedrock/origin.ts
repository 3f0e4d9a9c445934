import { validateOrigin } from '../../lib/origin.js';
import type { Validated } from '../../lib/validated.js';

export type ManagedRuntimeAdapter = 'bedrock' | 'bedrock-gov';

/** SPEC 2.8: the catalog's spelling of "no lane default"; the registry already stores it as null. */
const NO_BASE_URL = 'https://unused.invalid';

/**
 * Regional hosts per partition. The GovCloud partition (us-gov-*) shares the commercial DNS suffix,
 * so both forms are the same template; they stay separate entries because a partition with its own
 * suffix (or a FIPS host) is a one-line change here and nowhere else.
 */
const RUNTIME_HOST: Record<ManagedRuntimeAdapter, (region: string) => string> = {
  bedrock: (region) => `https://bedrock-runtime.${region}.amazonaws.com`,
  'bedrock-gov': (region) => `https://bedrock-runtime.${region}.amazonaws.com`,
};

/** The control-plane host the catalog collector lists models from. */
export const controlPlaneOrigin = (region: string): string => `https://bedrock.${region}.amazonaws.com`;

/** A signing-region label that is also safe inside a host name. */
const REGION = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const isRegion = (value: unknown): value is string => typeof value === 'string' && REGION.test(value);

/** Which of SPEC 4.7's candidates resolveRuntimeOrigin takes: the first one present. */
export const runtimeOriginSource = (
  connectionBaseUrl: string | null,
  laneBaseUrl: string | null,
): 'connection' | 'lane' | 'derived' => {
  if (connectionBaseUrl !== null && connectionBaseUrl !== '') return 'connection';
  if (laneBaseUrl !== null && laneBaseUrl !== '' && laneBaseUrl.replace(/\/+$/, '') !== NO_BASE_URL)
    return 'lane';
  return 'derived';
};

/**
 * SPEC 4.7 origin resolution, first usable wins: the connection's base_url column, the lane default
 * from the catalog, the regional runtime host. A value that is present but unusable is refused
 * rather than skipped, so a mistyped override never silently sends traffic to the public host.
 */
export const resolveRuntimeOrigin = (
  adapter: ManagedRuntimeAdapter,
  connectionBaseUrl: string | null,
  laneBaseUrl: string | null,
  region: string,
): Validated<string> => {
  const source = runtimeOriginSource(connectionBaseUrl, laneBaseUrl);
  if (source === 'connection') return validateOrigin(connectionBaseUrl, 'base_url');
  if (source === 'lane') return validateOrigin(laneBaseUrl, 'catalog base_url');
  if (!isRegion(region)) {
    return {
      ok: false,
      field: 'metadata.region',
      message: 'metadata.region cannot form a runtime host name',
    };
  }
  return validateOrigin(RUNTIME_HOST[adapter](region), 'derived runtime host');
};

/**
 * The model path segment encoded the way the AWS SDK encodes a greedy-free label: every reserved
 * character, including the `:` of versioned ids and the `/` of ARNs, becomes a percent escape.
 */
export const encodeModelId = (id: string): string =>
  encodeURIComponent(id).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
