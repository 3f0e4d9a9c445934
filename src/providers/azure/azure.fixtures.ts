import type { CanonicalRequest } from '../../gateway/contract.js';
import type { RegistryEndpoint } from '../../gateway/registry/snapshot.js';
import type { AttemptTarget, Credentials } from '../provider.js';

/** Shared by the azure tests: an endpoint, a credential and a request in their smallest valid forms. */

export const azureEndpoint = (over: Partial<RegistryEndpoint> = {}): RegistryEndpoint => ({
  lane: 'azure',
  adapter: 'azure',
  model: 'gpt-4o',
  provider_model_id: 'gpt-4o',
  base_url: null,
  display_name: 'GPT-4o',
  family: 'gpt-4o',
  release_date: null,
  description: '',
  capabilities: {
    chat: true,
    embeddings: false,
    responses: false,
    images: false,
    moderations: false,
    tools: true,
    streaming: true,
    reasoning: false,
  },
  input_modalities: ['text'],
  output_modalities: ['text'],
  context_length: 128_000,
  max_output_tokens: 16_384,
  enabled: true,
  retired: false,
  quarantined: false,
  managed_by: 'operator',
  pricing_pinned: true,
  cards: [],
  ...over,
});

export const azureCredentials = (
  metadata: Record<string, unknown> = {},
  baseUrl: string | null = null,
): Credentials => ({
  secret: 'azure-resource-key',
  baseUrl,
  metadata: {
    resource: 'myres',
    api_version: '2024-10-21',
    deployments: { 'gpt-4o': 'gpt4o-prod' },
    ...metadata,
  },
  funding: 'byok',
  connectionId: 'conn_test',
});

export const chatRequest = (over: Partial<CanonicalRequest> = {}): CanonicalRequest => {
  const raw: Record<string, unknown> = {
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hello azure' }],
    ...over.raw,
  };
  return {
    operation: 'chat',
    route: '/v1/chat/completions',
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hello azure' }],
    stream: raw.stream === true,
    includeUsage: false,
    ...over,
    raw,
  };
};

export const attemptTarget = (endpoint: RegistryEndpoint, credentials: Credentials): AttemptTarget => ({
  endpoint,
  credentials,
  requestId: 'req_test',
  signal: new AbortController().signal,
  timeoutMs: 5_000,
  limits: { maxResponseBytes: 1_000_000, maxErrorMessageBytes: 4_096 },
});
