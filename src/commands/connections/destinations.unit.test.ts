import { describe, expect, it } from 'vitest';
import { refuseInternalDestinations } from './destinations.js';
import { type ConnectionInput, validateConnection } from './validation.js';

// A tenant connection names public hosts only (SPEC 4.7 keeps loopback HTTP for operators): each
// refusal names the field that set the host.

const checked = (input: ConnectionInput) => {
  const v = validateConnection(input);
  if (!v.ok) throw new Error(v.message);
  return refuseInternalDestinations(v.value);
};
const openai = (baseUrl: string) => ({ provider: 'openai', secret: 'sk-1', baseUrl });
const azure = (metadata: Record<string, unknown>, baseUrl?: string) => ({
  provider: 'azure',
  secret: 'k',
  metadata: { resource: 'myres', api_version: '2024-10-21', ...metadata },
  ...(baseUrl ? { baseUrl } : {}),
});

describe('refuseInternalDestinations', () => {
  it.each([
    [openai('https://169.254.169.254'), 'base_url', 'link-local'],
    [openai('https://10.0.0.1'), 'base_url', 'private'],
    [openai('https://metadata.google.internal'), 'base_url', 'internal host'],
    [openai('https://[fd00::1]'), 'base_url', 'private'],
    [openai('http://127.0.0.1:8080'), 'base_url', 'loopback'],
    [openai('http://localhost:8080'), 'base_url', 'internal host'],
    [openai('http://[::1]:8080'), 'base_url', 'loopback'],
    [azure({ resource: 'metadata', domain: 'google.internal' }), 'metadata.domain', 'internal host'],
    [azure({ resource: '169', domain: '254.169.254' }), 'metadata.domain', 'link-local'],
    [
      azure({ project_endpoint: 'http://127.0.0.1:9/api/projects/p' }),
      'metadata.project_endpoint',
      'loopback',
    ],
    [azure({}, 'https://192.168.0.10'), 'base_url', 'private'],
  ] as const)('%j is refused under %s', (input, field, cls) => {
    const r = checked(input);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.field).toBe(field);
    expect(r.message).toContain(cls);
    expect(r.message.startsWith(`${field} must not point at an internal host`)).toBe(true);
  });

  it('public hosts pass', () => {
    for (const input of [
      openai('https://api.example.com'),
      azure({ project_endpoint: 'https://proj.services.ai.azure.com/api/projects/p' }),
      {
        provider: 'bedrock',
        secret: '{"access_key_id":"a","secret_access_key":"b"}',
        metadata: { region: 'us-east-1' },
      },
    ])
      expect(checked(input).ok).toBe(true);
  });
});
