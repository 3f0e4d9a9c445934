import { describe, expect, it } from 'vitest';
import { isLoopbackHost, validateOrigin } from '../../lib/origin.js';
import { type ConnectionInput, validateConnection } from './validation.js';

/**
 * One row per rule of SPEC 2.6 (managed runtime), 2.7 (deployment host) and 4.7 (origins), plus the
 * api-key providers. A row either names the field the message must start with, or the normalized
 * value it must produce.
 */

const PAIR = { access_key_id: 'AKIDEXAMPLE', secret_access_key: 'wJalrXUtnFEMI/K7MDENG' };
const pairJson = (over: Record<string, unknown> = {}) => JSON.stringify({ ...PAIR, ...over });

const openai = (over: Partial<ConnectionInput> = {}): ConnectionInput => ({
  provider: 'openai',
  secret: 'sk-test-123',
  metadata: {},
  ...over,
});
const bedrock = (metadata: Record<string, unknown> = {}, over: Partial<ConnectionInput> = {}) => ({
  provider: 'bedrock',
  secret: pairJson(),
  metadata: { region: 'us-east-1', ...metadata },
  ...over,
});
const azure = (metadata: Record<string, unknown> = {}, over: Partial<ConnectionInput> = {}) => ({
  provider: 'azure',
  secret: 'az-key-123',
  metadata: { resource: 'myres', api_version: '2024-10-21', ...metadata },
  ...over,
});
const withBaseUrl = (baseUrl: unknown) => openai({ baseUrl });

type Row = { rule: string; input: ConnectionInput; field?: string; value?: Record<string, unknown> };

const providerRows: Row[] = [
  { rule: 'unknown provider', input: openai({ provider: 'gemini' }), field: 'provider' },
  { rule: 'missing provider', input: openai({ provider: undefined }), field: 'provider' },
  { rule: 'provider names are exact', input: openai({ provider: 'OpenAI' }), field: 'provider' },
  { rule: 'metadata must be an object (array)', input: openai({ metadata: [] }), field: 'metadata' },
  { rule: 'metadata must be an object (string)', input: openai({ metadata: 'x' }), field: 'metadata' },
];

const apiKeyRows: Row[] = [
  { rule: 'openai: metadata absent', input: openai({ metadata: undefined }), value: { metadata: {} } },
  { rule: 'openai: metadata null', input: openai({ metadata: null }), value: { metadata: {} } },
  {
    rule: 'anthropic: empty metadata',
    input: { provider: 'anthropic', secret: 'sk-ant', metadata: {} },
    value: { provider: 'anthropic', secret: 'sk-ant', baseUrl: null },
  },
  {
    rule: 'openai: unknown metadata field',
    input: openai({ metadata: { organization: 'o' } }),
    field: 'metadata.organization',
  },
  {
    rule: 'openai: base_url inside metadata',
    input: openai({ metadata: { base_url: 'https://x' } }),
    field: 'metadata.base_url',
  },
  {
    rule: 'openai: api key in metadata',
    input: openai({ metadata: { api_key: 'sk' } }),
    field: 'metadata.api_key',
  },
  { rule: 'openai: empty secret', input: openai({ secret: '' }), field: 'secret' },
  {
    rule: 'anthropic: blank secret',
    input: { provider: 'anthropic', secret: '   ', metadata: {} },
    field: 'secret',
  },
  { rule: 'openai: secret with a newline', input: openai({ secret: 'sk-1\n' }), field: 'secret' },
  { rule: 'openai: secret not a string', input: openai({ secret: 42 }), field: 'secret' },
];

const managedRuntimeRows: Row[] = [
  {
    rule: '2.6 valid: region kept, secret canonical',
    input: bedrock(
      {},
      { secret: `{ "secret_access_key": "${PAIR.secret_access_key}", "access_key_id": "AKIDEXAMPLE" }` },
    ),
    value: { provider: 'bedrock', metadata: { region: 'us-east-1' }, secret: pairJson() },
  },
  {
    rule: '2.6 gov lane accepts its region',
    input: bedrock({ region: 'us-gov-west-1' }, { provider: 'bedrock-gov' }),
    value: { metadata: { region: 'us-gov-west-1' } },
  },
  {
    rule: '2.6 region not classified into a partition (gov label, commercial lane)',
    input: bedrock({ region: 'us-gov-east-1' }),
    value: { metadata: { region: 'us-gov-east-1' } },
  },
  {
    rule: '2.6 region not classified into a partition (unlisted label)',
    input: bedrock({ region: 'xx-new-9' }, { provider: 'bedrock-gov' }),
    value: { metadata: { region: 'xx-new-9' } },
  },
  {
    rule: '2.6 region required (metadata absent)',
    input: bedrock({}, { metadata: undefined }),
    field: 'metadata.region',
  },
  {
    rule: '2.6 region required (key absent)',
    input: bedrock({}, { metadata: {} }),
    field: 'metadata.region',
  },
  { rule: '2.6 region non-empty', input: bedrock({ region: '' }), field: 'metadata.region' },
  { rule: '2.6 region is a string', input: bedrock({ region: 5 }), field: 'metadata.region' },
  { rule: '2.6 region refuses /', input: bedrock({ region: 'us-east-1/x' }), field: 'metadata.region' },
  { rule: '2.6 region refuses ?', input: bedrock({ region: 'us-east-1?x' }), field: 'metadata.region' },
  { rule: '2.6 region refuses #', input: bedrock({ region: 'us-east-1#x' }), field: 'metadata.region' },
  { rule: '2.6 region refuses @', input: bedrock({ region: 'evil@us-east-1' }), field: 'metadata.region' },
  { rule: '2.6 region refuses :', input: bedrock({ region: 'us-east-1:443' }), field: 'metadata.region' },
  { rule: '2.6 region refuses \\', input: bedrock({ region: 'us-east-1\\x' }), field: 'metadata.region' },
  { rule: '2.6 region refuses a space', input: bedrock({ region: 'us east 1' }), field: 'metadata.region' },
  { rule: '2.6 region refuses NUL', input: bedrock({ region: 'us-east-1\u0000' }), field: 'metadata.region' },
  {
    rule: '2.6 region refuses a line feed',
    input: bedrock({ region: 'us-east-1\n' }),
    field: 'metadata.region',
  },
  { rule: '2.6 region refuses DEL', input: bedrock({ region: 'us-east-1\u007f' }), field: 'metadata.region' },
  {
    rule: '2.6 region refuses what a host cannot hold',
    input: bedrock({ region: 'us<east>1' }),
    field: 'metadata.region',
  },
  {
    rule: '2.6 unknown metadata field rejected by name',
    input: bedrock({ endpoint: 'x' }),
    field: 'metadata.endpoint',
  },
  {
    rule: '2.6 base_url inside metadata (a column)',
    input: bedrock({ base_url: 'https://x' }),
    field: 'metadata.base_url',
  },
  {
    rule: '2.6 credential material not in metadata (access_key_id)',
    input: bedrock({ access_key_id: 'AKID' }),
    field: 'metadata.access_key_id',
  },
  {
    rule: '2.6 credential material not in metadata (secret_access_key)',
    input: bedrock({ secret_access_key: 's' }),
    field: 'metadata.secret_access_key',
  },
  { rule: '2.6 secret must be JSON', input: bedrock({}, { secret: 'AKID:secret' }), field: 'secret' },
  { rule: '2.6 secret must be an object (array)', input: bedrock({}, { secret: '[]' }), field: 'secret' },
  { rule: '2.6 secret must be an object (null)', input: bedrock({}, { secret: 'null' }), field: 'secret' },
  {
    rule: '2.6 secret must be an object (string)',
    input: bedrock({}, { secret: '"AKID"' }),
    field: 'secret',
  },
  { rule: '2.6 secret must be a string', input: bedrock({}, { secret: PAIR }), field: 'secret' },
  {
    rule: '2.6 access_key_id required',
    input: bedrock({}, { secret: JSON.stringify({ secret_access_key: 's' }) }),
    field: 'secret.access_key_id',
  },
  {
    rule: '2.6 access_key_id non-empty',
    input: bedrock({}, { secret: pairJson({ access_key_id: '' }) }),
    field: 'secret.access_key_id',
  },
  {
    rule: '2.6 access_key_id a string',
    input: bedrock({}, { secret: pairJson({ access_key_id: 7 }) }),
    field: 'secret.access_key_id',
  },
  {
    rule: '2.6 secret_access_key required',
    input: bedrock({}, { secret: JSON.stringify({ access_key_id: 'AKID' }) }),
    field: 'secret.secret_access_key',
  },
  {
    rule: '2.6 secret_access_key non-empty',
    input: bedrock({}, { secret: pairJson({ secret_access_key: ' ' }) }),
    field: 'secret.secret_access_key',
  },
  {
    rule: '2.6 secret_access_key a string',
    input: bedrock({}, { secret: pairJson({ secret_access_key: null }) }),
    field: 'secret.secret_access_key',
  },
  {
    rule: '2.6 unknown secret field rejected by name',
    input: bedrock({}, { secret: pairJson({ session_token: 't' }) }),
    field: 'secret.session_token',
  },
  {
    rule: '2.6 same rules on the gov lane',
    input: bedrock({ region: 'a/b' }, { provider: 'bedrock-gov' }),
    field: 'metadata.region',
  },
];

const PROJECT = 'https://myres.services.ai.azure.com/api/projects/p1';
const deploymentHostRows: Row[] = [
  {
    rule: '2.7 minimal: deployments absent is an empty map',
    input: azure(),
    value: {
      provider: 'azure',
      metadata: { resource: 'myres', api_version: '2024-10-21', deployments: {} },
      secret: 'az-key-123',
    },
  },
  {
    rule: '2.7 every field',
    input: azure(
      {
        domain: 'openai.azure.us',
        deployments: { 'gpt-4o': 'gpt4o-prod' },
        project_endpoint: `${PROJECT}/`,
        discovery_api_version: '2025-05-01',
      },
      { provider: 'azure-gov' },
    ),
    value: {
      provider: 'azure-gov',
      metadata: {
        resource: 'myres',
        domain: 'openai.azure.us',
        api_version: '2024-10-21',
        deployments: { 'gpt-4o': 'gpt4o-prod' },
        project_endpoint: PROJECT,
        discovery_api_version: '2025-05-01',
      },
    },
  },
  { rule: '2.7 resource required', input: azure({ resource: undefined }), field: 'metadata.resource' },
  { rule: '2.7 resource non-empty', input: azure({ resource: '' }), field: 'metadata.resource' },
  { rule: '2.7 resource refuses /', input: azure({ resource: 'a/b' }), field: 'metadata.resource' },
  { rule: '2.7 resource refuses ?', input: azure({ resource: 'a?b' }), field: 'metadata.resource' },
  { rule: '2.7 resource refuses #', input: azure({ resource: 'a#b' }), field: 'metadata.resource' },
  { rule: '2.7 resource refuses @', input: azure({ resource: 'evil.com@a' }), field: 'metadata.resource' },
  { rule: '2.7 resource refuses :', input: azure({ resource: 'a:8080' }), field: 'metadata.resource' },
  {
    rule: '2.7 resource refuses whitespace',
    input: azure({ resource: 'my res' }),
    field: 'metadata.resource',
  },
  {
    rule: '2.7 resource refuses control characters',
    input: azure({ resource: 'myres\r' }),
    field: 'metadata.resource',
  },
  {
    rule: '2.7 domain overrides the suffix',
    input: azure({ domain: 'cognitiveservices.azure.com' }),
    value: { metadata: { domain: 'cognitiveservices.azure.com' } },
  },
  {
    rule: '2.7 domain is a host suffix, not a URL',
    input: azure({ domain: 'https://openai.azure.com' }),
    field: 'metadata.domain',
  },
  {
    rule: '2.7 domain has no path',
    input: azure({ domain: 'openai.azure.com/x' }),
    field: 'metadata.domain',
  },
  { rule: '2.7 domain non-empty', input: azure({ domain: '' }), field: 'metadata.domain' },
  {
    rule: '2.7 api_version required',
    input: azure({ api_version: undefined }),
    field: 'metadata.api_version',
  },
  { rule: '2.7 api_version non-empty', input: azure({ api_version: '' }), field: 'metadata.api_version' },
  {
    rule: '2.7 api_version has no whitespace',
    input: azure({ api_version: '2024-10-21 &x=1' }),
    field: 'metadata.api_version',
  },
  {
    rule: '2.7 deployments must be an object',
    input: azure({ deployments: ['gpt4o'] }),
    field: 'metadata.deployments',
  },
  {
    rule: '2.7 deployment name non-empty',
    input: azure({ deployments: { 'gpt-4o': '' } }),
    field: 'metadata.deployments.gpt-4o',
  },
  {
    rule: '2.7 deployment name a string',
    input: azure({ deployments: { 'gpt-4o': 1 } }),
    field: 'metadata.deployments.gpt-4o',
  },
  {
    rule: '2.7 deployment stored as a resource path is accepted',
    input: azure({ deployments: { 'gpt-4o': '/subscriptions/s/resourceGroups/g/deployments/gpt4o' } }),
    value: { metadata: { deployments: { 'gpt-4o': '/subscriptions/s/resourceGroups/g/deployments/gpt4o' } } },
  },
  {
    rule: '2.7 project_endpoint HTTPS with a path',
    input: azure({ project_endpoint: PROJECT }),
    value: { metadata: { project_endpoint: PROJECT } },
  },
  {
    rule: '2.7 project_endpoint loopback HTTP (127/8)',
    input: azure({ project_endpoint: 'http://127.0.0.1:8081/api/projects/p' }),
    value: { metadata: { project_endpoint: 'http://127.0.0.1:8081/api/projects/p' } },
  },
  {
    rule: '2.7 project_endpoint loopback HTTP (localhost)',
    input: azure({ project_endpoint: 'http://localhost:8081/p' }),
    value: { metadata: { project_endpoint: 'http://localhost:8081/p' } },
  },
  {
    rule: '2.7 project_endpoint loopback HTTP ([::1])',
    input: azure({ project_endpoint: 'http://[::1]:8081/p' }),
    value: { metadata: { project_endpoint: 'http://[::1]:8081/p' } },
  },
  {
    rule: '2.7 project_endpoint non-loopback HTTP refused',
    input: azure({ project_endpoint: 'http://myres.services.ai.azure.com/p' }),
    field: 'metadata.project_endpoint',
  },
  {
    rule: '2.7 project_endpoint without credentials',
    input: azure({ project_endpoint: 'https://u:p@myres.example.com/p' }),
    field: 'metadata.project_endpoint',
  },
  {
    rule: '2.7 project_endpoint without a query',
    input: azure({ project_endpoint: `${PROJECT}?api-version=1` }),
    field: 'metadata.project_endpoint',
  },
  {
    rule: '2.7 project_endpoint without a fragment',
    input: azure({ project_endpoint: `${PROJECT}#x` }),
    field: 'metadata.project_endpoint',
  },
  {
    rule: '2.7 project_endpoint must be absolute',
    input: azure({ project_endpoint: 'myres/api/projects/p' }),
    field: 'metadata.project_endpoint',
  },
  {
    rule: '2.7 project_endpoint must be http(s)',
    input: azure({ project_endpoint: 'ftp://myres.example.com/p' }),
    field: 'metadata.project_endpoint',
  },
  {
    rule: '2.7 discovery_api_version non-empty when present',
    input: azure({ discovery_api_version: '' }),
    field: 'metadata.discovery_api_version',
  },
  {
    rule: '2.7 unknown metadata field rejected by name',
    input: azure({ deployment: 'x' }),
    field: 'metadata.deployment',
  },
  {
    rule: '2.7 base_url inside metadata (a column)',
    input: azure({ base_url: 'https://x' }),
    field: 'metadata.base_url',
  },
  {
    rule: '2.7 credential material not in metadata',
    input: azure({ api_key: 'k' }),
    field: 'metadata.api_key',
  },
  { rule: '2.7 secret is a non-empty api key', input: azure({}, { secret: '' }), field: 'secret' },
  { rule: '2.7 secret is a string', input: azure({}, { secret: { key: 'k' } }), field: 'secret' },
  {
    rule: '2.7 same rules on the gov lane',
    input: azure({ resource: 'a@b' }, { provider: 'azure-gov' }),
    field: 'metadata.resource',
  },
];

const originRows: Row[] = [
  { rule: '4.7 absent base_url means no override', input: withBaseUrl(undefined), value: { baseUrl: null } },
  { rule: '4.7 null base_url means no override', input: withBaseUrl(null), value: { baseUrl: null } },
  {
    rule: '4.7 https origin',
    input: withBaseUrl('https://proxy.example.com'),
    value: { baseUrl: 'https://proxy.example.com' },
  },
  {
    rule: '4.7 a lone / is not a path',
    input: withBaseUrl('https://proxy.example.com/'),
    value: { baseUrl: 'https://proxy.example.com' },
  },
  {
    rule: '4.7 a port is kept',
    input: withBaseUrl('https://proxy.example.com:8443'),
    value: { baseUrl: 'https://proxy.example.com:8443' },
  },
  {
    rule: '4.7 loopback HTTP (127.0.0.1)',
    input: withBaseUrl('http://127.0.0.1:9999'),
    value: { baseUrl: 'http://127.0.0.1:9999' },
  },
  {
    rule: '4.7 loopback HTTP (anywhere in 127/8)',
    input: withBaseUrl('http://127.5.6.7'),
    value: { baseUrl: 'http://127.5.6.7' },
  },
  {
    rule: '4.7 loopback HTTP (localhost)',
    input: withBaseUrl('http://localhost:8080'),
    value: { baseUrl: 'http://localhost:8080' },
  },
  {
    rule: '4.7 loopback HTTP ([::1])',
    input: withBaseUrl('http://[::1]:8080'),
    value: { baseUrl: 'http://[::1]:8080' },
  },
  {
    rule: '4.7 on every provider',
    input: bedrock({}, { baseUrl: 'http://127.0.0.1:4000' }),
    value: { baseUrl: 'http://127.0.0.1:4000' },
  },
  {
    rule: '4.7 non-loopback HTTP refused',
    input: withBaseUrl('http://proxy.example.com'),
    field: 'base_url',
  },
  { rule: '4.7 128.0.0.1 is not loopback', input: withBaseUrl('http://128.0.0.1'), field: 'base_url' },
  {
    rule: '4.7 localhost as a subdomain is not loopback',
    input: withBaseUrl('http://localhost.example.com'),
    field: 'base_url',
  },
  { rule: '4.7 no path', input: withBaseUrl('https://proxy.example.com/v1'), field: 'base_url' },
  { rule: '4.7 no query', input: withBaseUrl('https://proxy.example.com?a=1'), field: 'base_url' },
  { rule: '4.7 no empty query', input: withBaseUrl('https://proxy.example.com/?'), field: 'base_url' },
  { rule: '4.7 no fragment', input: withBaseUrl('https://proxy.example.com#f'), field: 'base_url' },
  { rule: '4.7 no credentials', input: withBaseUrl('https://u:p@proxy.example.com'), field: 'base_url' },
  { rule: '4.7 no empty credentials', input: withBaseUrl('https://@proxy.example.com'), field: 'base_url' },
  { rule: '4.7 absolute URL', input: withBaseUrl('proxy.example.com'), field: 'base_url' },
  { rule: '4.7 http(s) only', input: withBaseUrl('ftp://proxy.example.com'), field: 'base_url' },
  { rule: '4.7 empty string refused', input: withBaseUrl(''), field: 'base_url' },
  { rule: '4.7 not a string', input: withBaseUrl(8080), field: 'base_url' },
  {
    rule: '4.7 checked on deployment-host lanes too',
    input: azure({}, { baseUrl: 'https://x.example.com/openai' }),
    field: 'base_url',
  },
];

const cases = (rows: Row[]) =>
  it.each(rows)('$rule', ({ input, field, value }) => {
    const result = validateConnection(input);
    if (field !== undefined) {
      expect(result).toMatchObject({ ok: false, field });
      if (result.ok) return;
      expect(result.message.startsWith(`${field} `)).toBe(true);
    } else {
      expect(result).toMatchObject({ ok: true, value: value ?? {} });
    }
  });

describe('validateConnection', () => {
  describe('provider and metadata shape', () => cases(providerRows));
  describe('api-key providers', () => cases(apiKeyRows));
  describe('SPEC 2.6 managed runtime', () => cases(managedRuntimeRows));
  describe('SPEC 2.7 deployment host', () => cases(deploymentHostRows));
  describe('SPEC 4.7 base_url column', () => cases(originRows));

  it('has a row for every rule', () => {
    const all = [...providerRows, ...apiKeyRows, ...managedRuntimeRows, ...deploymentHostRows, ...originRows];
    expect(all.length).toBeGreaterThanOrEqual(40);
    expect(new Set(all.map((r) => r.rule)).size).toBe(all.length);
  });

  it('tells the caller base_url is a column', () => {
    const result = validateConnection(bedrock({ base_url: 'https://x' }));
    expect(result.ok ? '' : result.message).toMatch(/base_url is a column/);
  });

  it('never quotes secret material in a message', () => {
    const secrets = ['AKIDEXAMPLE', 'wJalrXUtnFEMI', 'sk-live-quoted'];
    const failures = [
      validateConnection(
        bedrock({}, { secret: `{"access_key_id":"AKIDEXAMPLE","secret_access_key":"wJalrXUtnFEMI"` }),
      ),
      validateConnection(bedrock({}, { secret: pairJson({ access_key_id: 'AKIDEXAMPLE wJalrXUtnFEMI' }) })),
      validateConnection(openai({ secret: 'sk-live-quoted\n' })),
    ];
    for (const r of failures) {
      expect(r.ok).toBe(false);
      for (const s of secrets) expect(r.ok ? '' : r.message).not.toContain(s);
    }
  });
});

describe('validateOrigin', () => {
  it('names the field it was given, for catalog and derived origins', () => {
    expect(validateOrigin('https://x.example.com/v1', 'catalog base_url')).toMatchObject({
      ok: false,
      field: 'catalog base_url',
    });
    expect(validateOrigin('https://myres.openai.azure.com')).toEqual({
      ok: true,
      value: 'https://myres.openai.azure.com',
    });
  });
});

describe('isLoopbackHost', () => {
  it.each([
    ['localhost', true],
    ['LOCALHOST', true],
    ['127.0.0.1', true],
    ['127.255.255.255', true],
    ['[::1]', true],
    ['::1', true],
    ['127.256.0.1', false],
    ['128.0.0.1', false],
    ['10.0.0.1', false],
    ['localhost.example.com', false],
    ['127.0.0.1.example.com', false],
    ['example.com', false],
  ])('%s -> %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});
