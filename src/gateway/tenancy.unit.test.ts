import { describe, expect, it } from 'vitest';
import type { Credentials } from '../providers/provider.js';
import { type CredentialTarget, credentialResolver } from './tenancy.js';

// SPEC 4.7 ("a second lane ... has its own credentials") and SPEC 5 (the connection named primary
// is routed; other names only when a selector targets them): the order credentials resolve in.

const cred = (secret: string, funding: Credentials['funding']): Credentials => ({
  secret,
  baseUrl: null,
  metadata: {},
  funding,
  connectionId: funding === 'byok' ? secret : null,
});

const resolver = (connections: Record<string, string>, platform: Record<string, string>) =>
  credentialResolver(
    new Map(Object.entries(connections).map(([k, v]) => [k, cred(v, 'byok')])),
    new Map(Object.entries(platform).map(([k, v]) => [k, cred(v, 'wallet')])),
  );

const target = (lane: string, connection?: string): CredentialTarget => ({
  lane,
  adapter: 'openai',
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
    expect(secretOf(r, 'p', { lane: 'openai-eu', adapter: 'anthropic' })).toBeNull();
  });
});
