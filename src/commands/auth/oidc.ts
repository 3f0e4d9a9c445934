import * as client from 'openid-client';
import type { OidcProviderConfig } from '../../config/config.js';
import { ServiceError } from '../../lib/errors.js';

/** What a validated ID token (and, when it lacks the e-mail, the userinfo answer) says. */
export interface VerifiedIdentity {
  provider: string;
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
}

export interface LoginChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

const clientAuthentication = (p: OidcProviderConfig): client.ClientAuth => {
  if (!p.client_secret) return client.None();
  return p.token_endpoint_auth_method === 'client_secret_post'
    ? client.ClientSecretPost(p.client_secret)
    : client.ClientSecretBasic(p.client_secret);
};

const unreachable = (name: string, err: unknown) =>
  new ServiceError('upstream_error', `identity provider ${name} did not answer as expected`, { cause: err });

/** Refusals caused by what the caller brought back (code, state, verifier) are 400s; ours are 502s. */
const signInError = (name: string, err: unknown): ServiceError => {
  if (err instanceof ServiceError) return err;
  if (err instanceof client.AuthorizationResponseError)
    return new ServiceError('bad_request', `the identity provider refused the sign-in: ${err.error}`);
  if (err instanceof client.ResponseBodyError) {
    if (err.error === 'invalid_client' || err.error === 'unauthorized_client') return unreachable(name, err);
    return new ServiceError(
      'bad_request',
      `the identity provider refused the authorization code: ${err.error}`,
    );
  }
  if (err instanceof client.ClientError) {
    if (err.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || err.code === 'OAUTH_RESPONSE_IS_NOT_JSON')
      return unreachable(name, err);
    return new ServiceError('bad_request', `the sign-in response failed validation: ${err.message}`);
  }
  return unreachable(name, err);
};

/**
 * OpenID Connect relying party for every configured provider (openid-client): discovery once per
 * provider (retried after a failure), Authorization Code with PKCE (S256), ID token validation.
 */
export class OidcClients {
  private readonly configurations = new Map<string, Promise<client.Configuration>>();

  constructor(
    private readonly providers: Readonly<Record<string, OidcProviderConfig>>,
    private readonly timeoutSeconds = 10,
  ) {}

  provider(name: string): OidcProviderConfig {
    const p = Object.hasOwn(this.providers, name) ? this.providers[name] : undefined;
    if (!p) throw new ServiceError('not_found', `no identity provider named ${name} is configured`);
    return p;
  }

  private configuration(name: string): Promise<client.Configuration> {
    const cached = this.configurations.get(name);
    if (cached) return cached;
    const p = this.provider(name);
    const issuer = new URL(p.issuer);
    const pending = client
      .discovery(issuer, p.client_id, undefined, clientAuthentication(p), {
        // The configuration only admits plain HTTP for a loopback issuer (a developer's own IdP).
        execute:
          issuer.protocol === 'http:' && LOOPBACK.has(issuer.hostname) ? [client.allowInsecureRequests] : [],
        timeout: this.timeoutSeconds,
      })
      .catch((err: unknown) => {
        this.configurations.delete(name);
        throw unreachable(name, err);
      });
    this.configurations.set(name, pending);
    return pending;
  }

  async authorizationUrl(name: string, checks: LoginChecks): Promise<URL> {
    const p = this.provider(name);
    const config = await this.configuration(name);
    return client.buildAuthorizationUrl(config, {
      redirect_uri: p.redirect_uri,
      scope: p.scope,
      response_type: 'code',
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
    });
  }

  /**
   * Validates the authorization response (`params` as the provider sent them to the redirect URI),
   * redeems the code with the PKCE verifier, and validates the ID token (issuer, audience, nonce).
   */
  async exchange(name: string, params: URLSearchParams, checks: LoginChecks): Promise<VerifiedIdentity> {
    const p = this.provider(name);
    const config = await this.configuration(name);
    const metadata = config.serverMetadata();
    const current = new URL(p.redirect_uri);
    current.search = '';
    for (const [k, v] of params) current.searchParams.append(k, v);
    // A caller of the JSON API may send only code and state. The state row already binds this
    // sign-in to this provider, which is what RFC 9207's iss parameter protects, so it is supplied.
    if (!current.searchParams.has('iss') && metadata.authorization_response_iss_parameter_supported)
      current.searchParams.set('iss', metadata.issuer);
    try {
      const tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (!claims) throw new ServiceError('bad_request', 'the identity provider returned no ID token');
      let email: unknown = claims.email;
      let verified: unknown = claims.email_verified;
      // Many providers put e-mail claims only in userinfo for the code flow.
      if (typeof email !== 'string' && metadata.userinfo_endpoint) {
        const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        email = info.email;
        verified = info.email_verified;
      }
      return {
        provider: name,
        issuer: claims.iss,
        subject: claims.sub,
        email: typeof email === 'string' ? email : null,
        emailVerified: verified === true,
      };
    } catch (err) {
      throw signInError(name, err);
    }
  }
}
