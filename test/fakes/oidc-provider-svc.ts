import { createServer } from 'node:net';
import { expect } from 'vitest';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { type FakeOidcProvider, type FakeOidcUser, startFakeOidcProvider } from './oidc-provider.js';
import { Browser, type Hop } from './oidc-provider-browser.js';

/**
 * A running `svc serve` signed into by the fake OpenID provider, and the steps of a sign-in as a
 * browser and as a JSON API client would take them. Providers: `test` follows
 * SVC_REGISTRATION_POLICY (invite); `open` and `code` override it per provider.
 */
export const PROVIDERS = { test: undefined, open: 'open', code: 'code' } as const;
export type ProviderName = keyof typeof PROVIDERS;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export const oidcUser = (name: string, extra: Partial<FakeOidcUser> = {}): FakeOidcUser => ({
  sub: `sub-${name}`,
  email: `${name}@example.com`,
  ...extra,
});

/** The callback URL the IdP sent the browser to (not yet visited). */
export const callbackUrlOf = (hops: Hop[]) => new URL(hops.at(-1)!.location!, hops.at(-1)!.url).toString();

export interface OidcSvc {
  idp: FakeOidcProvider;
  gw: GatewayEnv;
  base: string;
  /** Follows a console sign-in's redirects through the IdP; optionally stops before the callback. */
  consoleSignIn(
    browser: Browser,
    provider: ProviderName,
    query?: string,
    stopAtCallback?: boolean,
  ): Promise<{ response: Response; hops: Hop[] }>;
  /** JSON API sign-in: start, pass the IdP in a browser, hand the callback URL back. */
  apiSignIn(
    provider: ProviderName,
    body?: Record<string, string>,
  ): Promise<{
    state: string;
    callbackUrl: string;
    response: Response;
    finish(payload: unknown): Promise<Response>;
  }>;
  /** The audit records published so far on svc.audit.events.*, once `actions` are all present. */
  auditRecords(
    actions: string[],
  ): Promise<{ subject: string; raw: string; record: Record<string, unknown> }[]>;
  stop(): Promise<void>;
}

export const startOidcSvc = async (extraEnv: Record<string, string> = {}): Promise<OidcSvc> => {
  const idp = await startFakeOidcProvider();
  // The redirect URI names svc's own port, so the port is chosen before svc starts.
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const callback = (name: string) => `${base}/api/session/oidc/${name}/callback`;
  idp.registerRedirectUris(Object.keys(PROVIDERS).map(callback));
  const providers = Object.fromEntries(
    Object.entries(PROVIDERS).map(([name, policy]) => [
      name,
      {
        issuer: idp.issuer,
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        redirect_uri: callback(name),
        ...(policy ? { registration_policy: policy } : {}),
      },
    ]),
  );
  const gw = await startGatewayEnv({
    SVC_HTTP_PORT: String(port),
    SVC_OIDC_PROVIDERS: JSON.stringify(providers),
    SVC_REGISTRATION_POLICY: 'invite',
    ...extraEnv,
  });

  const apiSignIn: OidcSvc['apiSignIn'] = async (provider, body = {}) => {
    const started = await fetch(`${base}/api/auth/oidc/${provider}/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(started.status).toBe(200);
    const { authorization_url, state } = (await started.json()) as {
      authorization_url: string;
      state: string;
    };
    const { hops } = await new Browser().navigate(authorization_url, (next) => next.origin === idp.issuer);
    const callbackUrl = callbackUrlOf(hops);
    const finish = (payload: unknown) =>
      fetch(`${base}/api/auth/oidc/${provider}/callback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
    return { state, callbackUrl, finish, response: await finish({ callback_url: callbackUrl }) };
  };

  const auditRecords: OidcSvc['auditRecords'] = async (actions) => {
    const read = async () =>
      (
        await gw.db.pool.query<{ subject: string; raw: string }>(
          `SELECT subject, convert_from(data, 'UTF8') AS raw FROM svc_bus_messages
           WHERE subject LIKE 'svc.audit.events.%' ORDER BY seq`,
        )
      ).rows.map((r) => ({ ...r, record: JSON.parse(r.raw) as Record<string, unknown> }));
    await eventually(
      async () => {
        const seen = new Set((await read()).map((r) => r.record.action));
        return actions.every((a) => seen.has(a));
      },
      10_000,
      `audit actions ${actions.join(', ')}`,
    );
    return read();
  };

  return {
    idp,
    gw,
    base,
    consoleSignIn: (browser, provider, query = '', stopAtCallback = false) =>
      browser.navigate(`${base}/api/session/oidc/${provider}/start${query}`, (next) => {
        if (next.origin === idp.issuer) return true;
        return next.pathname.endsWith('/callback') && !stopAtCallback;
      }),
    apiSignIn,
    auditRecords,
    stop: async () => {
      await gw.stop();
      await idp.close();
    },
  };
};
