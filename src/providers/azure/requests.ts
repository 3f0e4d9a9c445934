import { type Destination, destinationOf } from '../destinations.js';
import type { RegistryEndpoint } from '../endpoint.js';
import type { AttemptFailure, Credentials } from '../provider.js';
import type { DeploymentHostMetadata } from './credentials.js';
import {
  type DeploymentHostAdapter,
  deploymentFor,
  deploymentHostMetadata,
  derivedHost,
  resolveOrigin,
} from './origin.js';

/**
 * SPEC 4.7 deployment-host request forms. Chat and embeddings address a deployment on the resolved
 * origin and carry the connection's api_version; responses go to the resource host's v1 surface,
 * with no api-version and the deployment name as the model.
 */

export const deploymentPath = (origin: string, deployment: string, operation: string, apiVersion: string) =>
  `${origin}/openai/deployments/${encodeURIComponent(deployment)}/${operation}?api-version=${encodeURIComponent(apiVersion)}`;

export const chatUrl = (origin: string, deployment: string, apiVersion: string): string =>
  deploymentPath(origin, deployment, 'chat/completions', apiVersion);

export const embeddingsUrl = (origin: string, deployment: string, apiVersion: string): string =>
  deploymentPath(origin, deployment, 'embeddings', apiVersion);

export const responsesUrl = (metadata: DeploymentHostMetadata, adapter: DeploymentHostAdapter): string =>
  `${derivedHost(metadata, adapter)}/openai/v1/responses`;

/** SPEC 5: the resource key travels as api-key, never as Authorization. */
export const azureHeaders = (secret: string, requestId: string, stream: boolean): Record<string, string> => ({
  'api-key': secret,
  'content-type': 'application/json',
  accept: stream ? 'text/event-stream' : 'application/json',
  'x-svc-request-id': requestId,
});

/** Fails before any upstream call, yet leaves the next candidate free to serve (SPEC 4.7). */
export const notConfigured = (message: string): AttemptFailure => ({
  kind: 'MissingProviderKey',
  message,
  retryable: false,
  fallback: true,
  surface: { status: 503, code: 'connection_not_configured' },
});

export interface DeploymentCall {
  origin: string;
  /** Whose choice the origin is, and the resource host's (SPEC 4.7; providers/destinations.ts). */
  destination: Destination;
  hostDestination: Destination;
  deployment: string;
  metadata: DeploymentHostMetadata;
  adapter: DeploymentHostAdapter;
}

/** Where one endpoint's call goes under one credential, or why it cannot go anywhere. */
export const deploymentCall = (
  endpoint: RegistryEndpoint,
  credentials: Credentials,
): { ok: true; call: DeploymentCall } | { ok: false; failure: AttemptFailure } => {
  const adapter = endpoint.adapter === 'azure-gov' ? 'azure-gov' : 'azure';
  const metadata = deploymentHostMetadata(adapter, credentials.metadata);
  if (!metadata.ok)
    return { ok: false, failure: notConfigured(`the ${adapter} connection: ${metadata.message}`) };
  const deployment = deploymentFor(metadata.value, endpoint);
  if (deployment === undefined) {
    return {
      ok: false,
      failure: notConfigured(
        `the ${adapter} connection maps no deployment for model ${endpoint.model} (metadata.deployments); run deployment discovery or add the mapping`,
      ),
    };
  }
  const origin = resolveOrigin({
    connectionBaseUrl: credentials.baseUrl,
    laneBaseUrl: endpoint.base_url,
    metadata: metadata.value,
    adapter,
  });
  if (!origin.ok)
    return { ok: false, failure: notConfigured(`the ${adapter} connection has ${origin.message}`) };
  return {
    ok: true,
    call: {
      origin: origin.origin,
      destination: destinationOf(credentials, origin.source),
      hostDestination: destinationOf(credentials, 'derived'),
      deployment,
      metadata: metadata.value,
      adapter,
    },
  };
};

export interface PreparedRequest {
  url: string;
  destination: Destination;
  headers: Record<string, string>;
  body: string;
}

/** Embeddings on the deployment path; the body names the catalog model the reply will echo. */
export const embeddingsRequest = (
  raw: Record<string, unknown>,
  call: DeploymentCall,
  endpoint: RegistryEndpoint,
  secret: string,
  requestId: string,
): PreparedRequest => ({
  url: embeddingsUrl(call.origin, call.deployment, call.metadata.api_version),
  destination: call.destination,
  headers: azureHeaders(secret, requestId, false),
  body: JSON.stringify({ ...raw, model: endpoint.model }),
});

/** The v1 responses surface: no api-version, no deployment segment, the deployment as model. */
export const responsesRequest = (
  raw: Record<string, unknown>,
  call: DeploymentCall,
  secret: string,
  requestId: string,
): PreparedRequest => ({
  url: responsesUrl(call.metadata, call.adapter),
  destination: call.hostDestination,
  headers: azureHeaders(secret, requestId, raw.stream === true),
  body: JSON.stringify({ ...raw, model: call.deployment }),
});
