import { describe, expect, it } from 'vitest';
import type { Credentials } from '../providers/provider.js';
import { type CredentialTarget, credentialResolver } from './tenancy.js';

// SPEC 4.7 ("a second lane ... has its own credentials") and SPEC 5 (the connection named primary
// is routed; other names only when a selector targets them): the order credentials resolve in.

const cred = (
  secret: string,
  funding: Credentials['funding'],
  baseUrl: string | null = null,
): Credentials => ({
  secret,
  baseUrl,
  metadata: {},
  funding,
  connectionId: funding === 'byok' ? secret : null,
});

const resolver = (connections: Record<string, string>, platform: Record<string, string>) =>
  credentialResolver(
    new Map(Object.entries(connections).map(([k, v]) => [k, cred(v, 'byok')])),
    new Map(Object.entries(platform).map(([k, v]) => [k, cred(v, 'wallet')])),
  );

const target = (lane: string, connection?: string, base_url: string | null = null): CredentialTarget => ({
  lane,
  adapter: 'openai',
  base_url,
  ...(connection === undefined ? {} : { connection }),
});

const secretOf = (r: ReturnType<typeof resolver>, projectId: string, t: CredentialTarget) =>
  r.credentials(projectId, t)?.secret ?? null;

describe('credential resolution per lane', () => {
  const r = resolver(
    {
      'p|openai||primary': 'tenant-any-lane',
      'p|openai|openai-eu|primary': 'tenant-eu',
      'p|openai||team-b': 'tenant-team-b',
      'q|openai|openai-eu|primary': 'q-eu-only',
    },
    { 'openai|': 'platform-any-lane', 'openai|openai-eu': 'platform-eu' },
  );

  it("a lane's own primary connection wins over the adapter-wide one", () => {
    expect(secretOf(r, 'p', target('openai-eu'))).toBe('tenant-eu');
    expect(secretOf(r, 'p', target('openai'))).toBe('tenant-any-lane');
  });

  it('without a connection: the lane platform key, else the adapter platform key', () => {
    expect(secretOf(r, 'nobody', target('openai-eu'))).toBe('platform-eu');
    expect(secretOf(r, 'nobody', target('openai'))).toBe('platform-any-lane');
    // q's connection serves the eu lane only; its other lanes run on platform keys.
    expect(secretOf(r, 'q', target('openai-eu'))).toBe('q-eu-only');
    expect(secretOf(r, 'q', target('openai'))).toBe('platform-any-lane');
  });

  it('a named connection is used only when targeted, and nothing stands in for it', () => {
    expect(secretOf(r, 'p', target('openai', 'team-b'))).toBe('tenant-team-b');
    expect(secretOf(r, 'q', target('openai', 'team-b'))).toBeNull();
    expect(r.hasConnection('p', target('openai-eu'), 'team-b')).toBe(true);
    expect(r.hasConnection('q', target('openai'), 'team-b')).toBe(false);
  });

  it('another adapter does not borrow a key', () => {
    expect(secretOf(r, 'p', { lane: 'openai-eu', adapter: 'anthropic', base_url: null })).toBeNull();
  });
});

describe("a connection for the whole adapter and a lane with an origin and a platform key of the operator's", () => {
  const thirdParty = target('thirdparty', undefined, 'https://api.other-provider.example/openai/v1');
  const platform = new Map([['openai|thirdparty', cred('operator-thirdparty-key', 'wallet')]]);

  it("is never sent to that origin: the lane's platform key serves it", () => {
    const r = credentialResolver(new Map([['p|openai||primary', cred('sk-tenant', 'byok')]]), platform);
    expect(secretOf(r, 'p', thirdParty)).toBe('operator-thirdparty-key');
    expect(secretOf(r, 'p', target('openai'))).toBe('sk-tenant');
  });

  it('is used where its own base_url sends the request, whatever the lane', () => {
    const own = cred('sk-tenant-own-origin', 'byok', 'https://tenant-proxy.example/v1');
    const r = credentialResolver(new Map([['p|openai||primary', own]]), platform);
    expect(secretOf(r, 'p', thirdParty)).toBe('sk-tenant-own-origin');
  });

  it('a lane at another origin without a platform key of its own is another environment of the adapter: served', () => {
    const r = credentialResolver(new Map([['p|openai||primary', cred('sk-tenant', 'byok')]]), new Map());
    expect(secretOf(r, 'p', thirdParty)).toBe('sk-tenant');
  });

  it('a connection naming that lane serves it', () => {
    const r = credentialResolver(
      new Map([['p|openai|thirdparty|primary', cred('sk-tenant-thirdparty', 'byok')]]),
      platform,
    );
    expect(secretOf(r, 'p', thirdParty)).toBe('sk-tenant-thirdparty');
  });
});
