import { ServiceError } from '../../lib/errors.js';
import { destinationOf } from '../destinations.js';
import type { AzureHttp } from './client.js';
import {
  type ClassifiedDeployment,
  classify,
  countsOf,
  type DiscoveryCounts,
  type DiscoveryPlan,
  planApply,
  type RegistryFact,
} from './discovery.js';
import { listDeployments, type SurfaceName, type TriedSurface } from './listing.js';
import { type DeploymentHostAdapter, deploymentHostMetadata, resolveOrigin } from './origin.js';

/** A tenant connection or a platform key (the provider's, or one lane's), as the discover commands name them. */
export type CredentialRef = { connectionId: string } | { platform: string; lane?: string };

/** What discovery needs of one stored credential, its secret decrypted by the control plane. */
export interface DeploymentHostSubject {
  provider: string;
  secret: string;
  baseUrl: string | null;
  metadata: Record<string, unknown>;
  /** The lane the credential serves (SPEC 4.7); absent: every lane of its adapter. */
  lane?: string;
  /** Enabled, live registry endpoints of the credential's adapter (of its lane, when it has one). */
  endpoints: RegistryFact[];
}

/** The control plane as discovery uses it (ControlPlane satisfies it). */
export interface DiscoveryStore {
  deploymentHostSubject(ref: CredentialRef): Promise<DeploymentHostSubject>;
  applyDiscovery(
    actor: { id: string },
    ref: CredentialRef,
    deployments: Record<string, string>,
    counts: DiscoveryCounts,
  ): Promise<unknown>;
}

export interface DiscoveryReport {
  provider: DeploymentHostAdapter;
  surface: SurfaceName;
  listing_url: string;
  tried: TriedSurface[];
  deployments: ClassifiedDeployment[];
  counts: DiscoveryCounts;
  /** The deployments map after apply; in report-only mode, what apply would store. */
  mappings: Record<string, string>;
  changes: Pick<DiscoveryPlan, 'added' | 'pruned' | 'rewritten'>;
  applied: boolean;
}

const isDeploymentHost = (provider: string): provider is DeploymentHostAdapter =>
  provider === 'azure' || provider === 'azure-gov';

/**
 * SPEC 4.6: list the credential's deployments, classify them, and with `apply` store the merged
 * map. A listing of zero deployments never wipes existing mappings: an apply is refused then.
 */
export const discoverDeployments = async (
  store: DiscoveryStore,
  actor: { id: string },
  ref: CredentialRef,
  options: { apply: boolean; http: AzureHttp },
): Promise<DiscoveryReport> => {
  const subject = await store.deploymentHostSubject(ref);
  const { provider } = subject;
  if (!isDeploymentHost(provider)) {
    throw new ServiceError(
      'bad_request',
      `deployment discovery applies to azure and azure-gov credentials; this one is ${provider}`,
    );
  }
  const metadata = deploymentHostMetadata(provider, subject.metadata);
  if (!metadata.ok) throw new ServiceError('bad_request', metadata.message, { param: metadata.field });
  const laneName = subject.lane ?? provider;
  const lane = subject.endpoints.find((e) => e.lane === laneName && e.base_url !== null);
  const origin = resolveOrigin({
    connectionBaseUrl: subject.baseUrl,
    laneBaseUrl: lane?.base_url ?? null,
    metadata: metadata.value,
    adapter: provider,
  });
  if (!origin.ok) throw new ServiceError('bad_request', `the ${provider} credential has ${origin.message}`);
  // A tenant connection's own origin and project endpoint are checked on the address dialled.
  const funding = 'connectionId' in ref ? 'byok' : 'wallet';
  const listing = await listDeployments(
    {
      origin: origin.origin,
      originDestination: destinationOf({ funding }, origin.source),
      projectDestination: destinationOf({ funding }, 'connection'),
      secret: subject.secret,
      ...(metadata.value.project_endpoint === undefined
        ? {}
        : { projectEndpoint: metadata.value.project_endpoint }),
      ...(metadata.value.discovery_api_version === undefined
        ? {}
        : { discoveryApiVersion: metadata.value.discovery_api_version }),
    },
    options.http,
  );
  if (!listing.ok)
    throw new ServiceError('upstream_error', listing.message, { details: { tried: listing.tried } });

  const mappings = metadata.value.deployments;
  const classified = classify(listing.deployments, mappings, subject.endpoints);
  const plan = planApply(listing.deployments, classified, mappings);
  const counts = countsOf(classified, plan);
  const mapped = Object.keys(mappings).length;
  if (options.apply && listing.deployments.length === 0 && mapped > 0) {
    throw new ServiceError(
      'conflict',
      `the listing at ${listing.url} returned no deployments while the credential maps ${mapped} model(s); apply refused so that no mapping is lost (check the key's resource, or edit the mappings by hand)`,
    );
  }
  if (options.apply) await store.applyDiscovery(actor, ref, plan.deployments, counts);
  return {
    provider,
    surface: listing.surface,
    listing_url: listing.url,
    tried: listing.tried,
    deployments: classified,
    counts,
    mappings: plan.deployments,
    changes: { added: plan.added, pruned: plan.pruned, rewritten: plan.rewritten },
    applied: options.apply,
  };
};
