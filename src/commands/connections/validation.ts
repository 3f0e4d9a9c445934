import { assertNever } from '../../lib/assert.js';
import { objectOrEmpty, rejectUnknownKeys } from '../../lib/fields.js';
import { validateOrigin } from '../../lib/origin.js';
import { invalid, type Validated, valid } from '../../lib/validated.js';
import type { DeploymentHostMetadata } from '../../providers/azure/credentials.js';
import { validateApiKeySecret, validateDeploymentHostMetadata } from '../../providers/azure/credentials.js';
import type { ManagedRuntimeMetadata } from '../../providers/bedrock/credentials.js';
import {
  parseAccessKeyPair,
  serializeAccessKeyPair,
  validateManagedRuntimeMetadata,
} from '../../providers/bedrock/credentials.js';

/** Every provider a connection or platform key may name; each pair is a commercial and a government lane. */
export const PROVIDERS = ['openai', 'anthropic', 'bedrock', 'bedrock-gov', 'azure', 'azure-gov'] as const;
export type Provider = (typeof PROVIDERS)[number];

export type ApiKeyProvider = 'openai' | 'anthropic';
export type ManagedRuntimeProvider = 'bedrock' | 'bedrock-gov';
export type DeploymentHostProvider = 'azure' | 'azure-gov';

export const isProvider = (value: unknown): value is Provider =>
  typeof value === 'string' && (PROVIDERS as readonly string[]).includes(value);

type Common = { secret: string; baseUrl: string | null };

/** A connection ready to encrypt and decide: metadata normalized, secret in its canonical text. */
export type ValidConnection =
  | ({ provider: ApiKeyProvider; metadata: Record<string, never> } & Common)
  | ({ provider: ManagedRuntimeProvider; metadata: ManagedRuntimeMetadata } & Common)
  | ({ provider: DeploymentHostProvider; metadata: DeploymentHostMetadata } & Common);

/** Loose on purpose: the same check guards HTTP bodies, CLI flags and platform-key commands. */
export type ConnectionInput = { provider: unknown; secret: unknown; metadata?: unknown; baseUrl?: unknown };

// Names under which credentials tend to be pasted into metadata, which is stored unencrypted.
const CREDENTIAL_KEYS = ['access_key_id', 'secret_access_key', 'session_token', 'api_key', 'secret'];

/**
 * SPEC 2.6, 2.7 and 4.7 for one connection. Runs before encryption, for tenant connections and
 * platform keys alike; the first failure wins and names its field.
 */
export const validateConnection = (input: ConnectionInput): Validated<ValidConnection> => {
  const { provider } = input;
  if (!isProvider(provider)) {
    return invalid('provider', `must be one of ${PROVIDERS.join(', ')}`);
  }
  const metadata = objectOrEmpty('metadata', input.metadata);
  if (!metadata.ok) return metadata;
  const misplaced = rejectMisplacedKeys(metadata.value);
  if (!misplaced.ok) return misplaced;
  const baseUrl = validateBaseUrlColumn(input.baseUrl);
  const withBaseUrl = <T extends ValidConnection>(connection: Validated<T>): Validated<T> => {
    if (!connection.ok) return connection;
    return baseUrl.ok ? valid({ ...connection.value, baseUrl: baseUrl.value }) : baseUrl;
  };
  switch (provider) {
    case 'openai':
    case 'anthropic':
      return withBaseUrl(apiKeyConnection(provider, metadata.value, input.secret));
    case 'bedrock':
    case 'bedrock-gov':
      return withBaseUrl(managedRuntimeConnection(provider, metadata.value, input.secret));
    case 'azure':
    case 'azure-gov':
      return withBaseUrl(deploymentHostConnection(provider, metadata.value, input.secret));
    default:
      return assertNever(provider);
  }
};

const rejectMisplacedKeys = (metadata: Record<string, unknown>): Validated<null> => {
  if (Object.hasOwn(metadata, 'base_url')) {
    return invalid('metadata.base_url', 'is not accepted: base_url is a column; send it as base_url instead');
  }
  const credential = CREDENTIAL_KEYS.find((key) => Object.hasOwn(metadata, key));
  if (credential !== undefined) {
    return invalid(
      `metadata.${credential}`,
      'is credential material; it belongs in the secret, never in metadata',
    );
  }
  return valid(null);
};

/** Absent (undefined or null) means no override; an empty string is refused rather than guessed at. */
const validateBaseUrlColumn = (value: unknown): Validated<string | null> =>
  value === undefined || value === null ? valid(null) : validateOrigin(value, 'base_url');

const apiKeyConnection = (
  provider: ApiKeyProvider,
  metadata: Record<string, unknown>,
  secret: unknown,
): Validated<ValidConnection> => {
  const unknown = rejectUnknownKeys('metadata', metadata, [], `provider ${provider}`);
  if (!unknown.ok) return unknown;
  const apiKey = validateApiKeySecret(secret);
  if (!apiKey.ok) return apiKey;
  return valid({ provider, metadata: {}, secret: apiKey.value, baseUrl: null });
};

const managedRuntimeConnection = (
  provider: ManagedRuntimeProvider,
  metadata: Record<string, unknown>,
  secret: unknown,
): Validated<ValidConnection> => {
  const checked = validateManagedRuntimeMetadata(provider, metadata);
  if (!checked.ok) return checked;
  const pair = parseAccessKeyPair(secret);
  if (!pair.ok) return pair;
  return valid({
    provider,
    metadata: checked.value,
    secret: serializeAccessKeyPair(pair.value),
    baseUrl: null,
  });
};

const deploymentHostConnection = (
  provider: DeploymentHostProvider,
  metadata: Record<string, unknown>,
  secret: unknown,
): Validated<ValidConnection> => {
  const checked = validateDeploymentHostMetadata(provider, metadata);
  if (!checked.ok) return checked;
  const apiKey = validateApiKeySecret(secret);
  if (!apiKey.ok) return apiKey;
  return valid({ provider, metadata: checked.value, secret: apiKey.value, baseUrl: null });
};

/** Which adapter family a provider belongs to; adapters and discovery branch on this, not on names. */
export const providerFamily = (provider: Provider): 'api-key' | 'managed-runtime' | 'deployment-host' => {
  switch (provider) {
    case 'openai':
    case 'anthropic':
      return 'api-key';
    case 'bedrock':
    case 'bedrock-gov':
      return 'managed-runtime';
    case 'azure':
    case 'azure-gov':
      return 'deployment-host';
    default:
      return assertNever(provider);
  }
};
