import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from '../../config/config.js';

// The auth variables (SPEC 5, 8): SVC_OIDC_PROVIDERS, SVC_REGISTRATION_POLICY and the lifetimes.

const provider = {
  issuer: 'https://idp.example.com',
  client_id: 'svc-console',
  client_secret: 'client-secret-value',
  redirect_uri: 'https://console.example.com/api/session/oidc/corp/callback',
};

describe('auth configuration', () => {
  it('defaults: no providers, invite-only registration, 12 h sessions, 10 min login states', () => {
    const config = loadConfig({});
    expect(config.SVC_OIDC_PROVIDERS).toEqual({});
    expect(config.SVC_REGISTRATION_POLICY).toBe('invite');
    expect(config.SVC_AUTH_SESSION_TTL_SECONDS).toBe(43_200);
    expect(config.SVC_AUTH_LOGIN_TTL_SECONDS).toBe(600);
  });

  it('reads providers as JSON, fills their defaults, and masks their client secrets', () => {
    const config = loadConfig({
      SVC_OIDC_PROVIDERS: JSON.stringify({ corp: { ...provider, registration_policy: 'open' } }),
      SVC_REGISTRATION_POLICY: 'code',
    });
    expect(config.SVC_OIDC_PROVIDERS.corp).toEqual({
      ...provider,
      registration_policy: 'open',
      scope: 'openid email profile',
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(JSON.stringify(describeConfig(config))).not.toContain('client-secret-value');
  });

  it.each([
    ['not json', 'SVC_OIDC_PROVIDERS'],
    [JSON.stringify({ corp: { ...provider, issuer: 'http://idp.example.com' } }), 'SVC_OIDC_PROVIDERS'],
    [JSON.stringify({ corp: { ...provider, redirect_uri: 'javascript:alert(1)' } }), 'SVC_OIDC_PROVIDERS'],
    [JSON.stringify({ corp: { ...provider, unknown: true } }), 'SVC_OIDC_PROVIDERS'],
    [JSON.stringify({ 'Bad Name': provider }), 'SVC_OIDC_PROVIDERS'],
  ])('refuses %s, naming the variable', (value, variable) => {
    expect(() => loadConfig({ SVC_OIDC_PROVIDERS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ SVC_OIDC_PROVIDERS: value })).toThrow(variable);
  });

  it('admits plain HTTP only for a loopback identity provider', () => {
    const local = { ...provider, issuer: 'http://127.0.0.1:4000', redirect_uri: 'http://localhost:8080/cb' };
    expect(
      loadConfig({ SVC_OIDC_PROVIDERS: JSON.stringify({ dev: local }) }).SVC_OIDC_PROVIDERS.dev?.issuer,
    ).toBe('http://127.0.0.1:4000');
    expect(() => loadConfig({ SVC_REGISTRATION_POLICY: 'anyone' })).toThrow('SVC_REGISTRATION_POLICY');
  });
});
