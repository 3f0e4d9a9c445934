import {
  hasControlCharacters,
  hostLabel,
  hostSuffix,
  isPlainObject,
  rejectUnknownKeys,
  requiredString,
  requiredToken,
} from '../../lib/fields.js';
import { validateProjectEndpoint } from '../../lib/origin.js';
import { invalid, type Validated, valid } from '../../lib/validated.js';

/** SPEC 2.7, normalized: `deployments` is always present (absent reads as an empty map). */
export type DeploymentHostMetadata = {
  resource: string;
  domain?: string;
  api_version: string;
  deployments: Record<string, string>;
  project_endpoint?: string;
  discovery_api_version?: string;
};

const METADATA_FIELDS = [
  'resource',
  'domain',
  'api_version',
  'deployments',
  'project_endpoint',
  'discovery_api_version',
] as const;

const present = (value: unknown): boolean => value !== undefined && value !== null;

export const validateDeploymentHostMetadata = (
  provider: string,
  metadata: Record<string, unknown>,
): Validated<DeploymentHostMetadata> => {
  const unknown = rejectUnknownKeys('metadata', metadata, METADATA_FIELDS, `provider ${provider}`);
  if (!unknown.ok) return unknown;
  const resource = hostLabel('metadata.resource', metadata['resource']);
  if (!resource.ok) return resource;
  const domain = optional(metadata['domain'], (v) => hostSuffix('metadata.domain', v));
  if (!domain.ok) return domain;
  // Sent as the api-version query parameter on every inference request.
  const apiVersion = requiredToken('metadata.api_version', metadata['api_version']);
  if (!apiVersion.ok) return apiVersion;
  const deployments = validateDeployments(metadata['deployments']);
  if (!deployments.ok) return deployments;
  const endpoint = optional(metadata['project_endpoint'], (v) =>
    validateProjectEndpoint(v, 'metadata.project_endpoint'),
  );
  if (!endpoint.ok) return endpoint;
  const discoveryVersion = optional(metadata['discovery_api_version'], (v) =>
    requiredToken('metadata.discovery_api_version', v),
  );
  if (!discoveryVersion.ok) return discoveryVersion;
  return valid({
    resource: resource.value,
    ...(domain.value === undefined ? {} : { domain: domain.value }),
    api_version: apiVersion.value,
    deployments: deployments.value,
    ...(endpoint.value === undefined ? {} : { project_endpoint: endpoint.value }),
    ...(discoveryVersion.value === undefined ? {} : { discovery_api_version: discoveryVersion.value }),
  });
};

/** Optional fields: absent (undefined or null) stays absent; anything present must pass. */
const optional = <T>(value: unknown, check: (v: unknown) => Validated<T>): Validated<T | undefined> =>
  present(value) ? check(value) : valid(undefined);

/**
 * Canonical model id to deployment name. A name may be a resource path (discovery rewrites those
 * to the short name on its next apply), so only emptiness and control characters are refused.
 */
const validateDeployments = (value: unknown): Validated<Record<string, string>> => {
  if (!present(value)) return valid({});
  if (!isPlainObject(value)) {
    return invalid('metadata.deployments', 'must be an object of model id to deployment name');
  }
  const out: [string, string][] = [];
  for (const [model, name] of Object.entries(value)) {
    const field = `metadata.deployments.${model}`;
    if (model.trim() === '' || hasControlCharacters(model)) {
      return invalid(field, 'must be keyed by a non-empty model id without control characters');
    }
    const deployment = requiredString(field, name);
    if (!deployment.ok) return deployment;
    if (hasControlCharacters(deployment.value)) return invalid(field, 'must not contain control characters');
    out.push([model, deployment.value]);
  }
  // fromEntries defines own properties, so a model id such as `__proto__` is kept as data.
  return valid(Object.fromEntries(out));
};

/** SPEC 2.7: the resource api key, sent as the api-key header, so nothing a header cannot carry. */
export const validateApiKeySecret = (secret: unknown): Validated<string> => requiredToken('secret', secret);
