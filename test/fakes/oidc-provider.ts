import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Grant, Provider } from 'oidc-provider';

/**
 * A real OpenID provider (the `oidc-provider` package) run in-process for the auth tests. Its only
 * fake part is the interaction: instead of a login form, /interaction/:uid signs in whichever test
 * user was set with `signInAs` and grants every scope asked for. PKCE is required of every client.
 */

export interface FakeOidcUser {
  sub: string;
  email: string;
  email_verified?: boolean;
  name?: string;
}

export interface FakeOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The client's registered redirect URIs; rebuilds the provider, so call it before signing in. */
  registerRedirectUris(uris: string[]): void;
  /** The account the next login interaction signs in. */
  signInAs(user: FakeOidcUser): void;
  /** Parameters of each authorization request that reached the interaction step. */
  readonly authorizations: Record<string, unknown>[];
  /** Error descriptions of refused token requests (e.g. a PKCE verifier that does not match). */
  readonly grantErrors: string[];
  close(): Promise<void>;
}

const signingKey = () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: 'fake-idp-1', use: 'sig', alg: 'RS256' };
};

export const startFakeOidcProvider = async (
  options: { clientId?: string; clientSecret?: string } = {},
): Promise<FakeOidcProvider> => {
  const clientId = options.clientId ?? 'svc-console';
  const clientSecret = options.clientSecret ?? randomBytes(24).toString('base64url');
  const jwk = signingKey();
  const cookieKeys = [randomBytes(32).toString('base64url')];
  const users = new Map<string, FakeOidcUser>();
  let current: FakeOidcUser | null = null;
  const authorizations: Record<string, unknown>[] = [];
  const grantErrors: string[] = [];

  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const server = createServer((req, res) => {
    if (handler) return handler(req, res);
    res.statusCode = 503;
    res.end('fake OpenID provider: call registerRedirectUris first');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const build = (redirectUris: string[]): Provider => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: redirectUris,
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      pkce: { required: () => true },
      ttl: {
        AccessToken: 600,
        AuthorizationCode: 60,
        Grant: 3600,
        IdToken: 600,
        Interaction: 600,
        Session: 3600,
      },
      features: { devInteractions: { enabled: false } },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      cookies: { keys: cookieKeys },
      jwks: { keys: [jwk] },
      findAccount: async (_ctx: unknown, sub: string) => {
        const user = users.get(sub);
        if (!user) return undefined;
        return {
          accountId: sub,
          claims: () => ({
            sub,
            email: user.email,
            email_verified: user.email_verified ?? true,
            ...(user.name ? { name: user.name } : {}),
          }),
        };
      },
    });
    provider.on('grant.error', (_ctx, err) => {
      const e = err as { error_description?: string; message?: string };
      grantErrors.push(e.error_description ?? e.message ?? String(err));
    });
    provider.use(async (ctx, next) => {
      if (ctx.method !== 'GET' || !ctx.path.startsWith('/interaction/')) return next();
      const details = await provider.interactionDetails(ctx.req, ctx.res);
      authorizations.push({ ...details.params });
      if (details.prompt.name === 'login') {
        if (!current) throw new Error('fake OpenID provider: call signInAs before signing in');
        users.set(current.sub, current);
        await provider.interactionFinished(
          ctx.req,
          ctx.res,
          { login: { accountId: current.sub } },
          { mergeWithLastSubmission: false },
        );
      } else {
        const accountId = details.session?.accountId ?? '';
        const grant: Grant =
          (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
          new provider.Grant({ accountId, clientId: String(details.params.client_id) });
        const asked = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
        if (asked.missingOIDCScope) grant.addOIDCScope(asked.missingOIDCScope.join(' '));
        if (asked.missingOIDCClaims) grant.addOIDCClaims(asked.missingOIDCClaims);
        await provider.interactionFinished(
          ctx.req,
          ctx.res,
          { consent: { grantId: await grant.save() } },
          { mergeWithLastSubmission: true },
        );
      }
      ctx.respond = false;
    });
    return provider;
  };

  return {
    issuer,
    clientId,
    clientSecret,
    registerRedirectUris: (uris) => {
      handler = build(uris).callback();
    },
    signInAs: (user) => {
      current = user;
    },
    authorizations,
    grantErrors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
