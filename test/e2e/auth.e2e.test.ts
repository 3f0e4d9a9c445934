import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/lib/crypto.js';
import { Browser } from '../fakes/oidc-provider-browser.js';
import { callbackUrlOf, type OidcSvc, startOidcSvc, oidcUser as user } from '../fakes/oidc-provider-svc.js';

// OIDC sign-in against a real OpenID provider run in-process, driven over
// plain HTTP with a cookie jar through a running `svc serve`: the state cookie, PKCE, redirects.

let svc: OidcSvc;
let base: string;

beforeAll(async () => {
  svc = await startOidcSvc();
  base = svc.base;
  await svc.gw.svc([
    'users',
    'add',
    '--email',
    'ada@example.com',
    '--workspace',
    svc.gw.boot.workspace_id,
    '--role',
    'manager',
  ]);
});
afterAll(async () => {
  await svc?.stop();
});

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

const bearerGet = (path: string, token: string) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });

describe('console sign-in', () => {
  it('start -> IdP -> callback sets an HTTP-only session cookie that the control plane accepts', async () => {
    svc.idp.signInAs(user('ada', { email: 'Ada@Example.com' }));
    const browser = new Browser();
    const { response, hops } = await svc.consoleSignIn(browser, 'test', '?return_to=%2Fkeys%3Ftab%3Ddev');

    expect(hops[0]!.status).toBe(302);
    const authorize = new URL(hops[0]!.location!);
    expect(authorize.origin).toBe(svc.idp.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('code_verifier')).toBeNull();
    expect(svc.idp.authorizations.at(-1)).toMatchObject({
      code_challenge_method: 'S256',
      scope: 'openid email profile',
    });

    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/keys?tab=dev');
    const session = browser.cookie('svc_session', `${base}/api/workspaces`);
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(session!.value).toMatch(/^svc_sess_/);
    expect(browser.cookie('svc_oidc_state')).toBeUndefined();

    const workspaces = await bearerGet('/api/workspaces', session!.value);
    expect(workspaces.status).toBe(200);
    expect(JSON.stringify(await workspaces.json())).toContain(svc.gw.boot.workspace_id);
    // The console's same-origin auth routes take the cookie itself.
    const listed = await browser.request(`${base}/api/auth/developer-tokens?org_id=${svc.gw.boot.org_id}`);
    expect(listed.status).toBe(200);
  });

  it('binds the login state in an HTTP-only SameSite cookie scoped to the callback', async () => {
    svc.idp.signInAs(user('ada'));
    const browser = new Browser();
    await browser.navigate(`${base}/api/session/oidc/test/start`, () => false);
    const cookie = browser.cookie('svc_oidc_state', `${base}/api/session/oidc/test/callback`);
    expect(cookie).toMatchObject({
      httpOnly: true,
      sameSite: 'Lax',
      path: '/api/session/oidc/test/callback',
    });
    expect(browser.cookie('svc_oidc_state', `${base}/api/workspaces`)).toBeUndefined();
  });

  it('a callback without the state cookie is refused, and the refusal burns nothing', async () => {
    svc.idp.signInAs(user('ada'));
    const browser = new Browser();
    const { hops } = await svc.consoleSignIn(browser, 'test', '', true);
    const callbackUrl = callbackUrlOf(hops);

    const elsewhere = await new Browser().request(callbackUrl);
    expect(elsewhere.status).toBe(403);
    expect((await json(elsewhere)).message).toMatch(/state cookie/);

    const own = await browser.request(callbackUrl);
    expect(own.status).toBe(302);
    expect(browser.cookie('svc_session')).toBeDefined();
  });

  it('a tampered state or a forged state cookie is refused', async () => {
    svc.idp.signInAs(user('ada'));
    const browser = new Browser();
    const { hops } = await svc.consoleSignIn(browser, 'test', '', true);
    const tampered = new URL(callbackUrlOf(hops));
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
    const refused = await browser.request(tampered.toString());
    expect(refused.status).toBe(403);
    expect(browser.cookie('svc_session')).toBeUndefined();
    // The refusal leaves the browser's own sign-in intact.
    expect((await browser.request(callbackUrlOf(hops))).status).toBe(302);
    expect(browser.cookie('svc_session')).toBeDefined();

    const again = new Browser();
    const second = await svc.consoleSignIn(again, 'test', '', true);
    again.setCookieValue('svc_oidc_state', 'forged-state-value');
    const forged = await again.request(callbackUrlOf(second.hops));
    expect(forged.status).toBe(403);
    expect(again.cookie('svc_session')).toBeUndefined();
  });

  it('a wrong PKCE verifier is refused by the identity provider and no session is issued', async () => {
    svc.idp.signInAs(user('ada'));
    const browser = new Browser();
    const { hops } = await svc.consoleSignIn(browser, 'test', '', true);
    const callbackUrl = callbackUrlOf(hops);
    const state = new URL(callbackUrl).searchParams.get('state')!;
    const tampered = await svc.gw.db.pool.query(
      'UPDATE auth_login_states SET code_verifier = $2 WHERE state_hash = $1',
      [hashSecret(state), client.randomPKCECodeVerifier()],
    );
    expect(tampered.rowCount).toBe(1);
    const errorsBefore = svc.idp.grantErrors.length;

    const refused = await browser.request(callbackUrl);
    expect(refused.status).toBe(400);
    expect((await json(refused)).message).toMatch(/invalid_grant/);
    expect(svc.idp.grantErrors.length).toBe(errorsBefore + 1);
    expect(browser.cookie('svc_session')).toBeUndefined();
    expect(browser.cookie('svc_oidc_state')).toBeUndefined();
  });

  it('a code replayed under another sign-in (another verifier) is refused; a used state cannot be replayed', async () => {
    svc.idp.signInAs(user('ada'));
    const first = await svc.apiSignIn('test');
    expect(first.response.status).toBe(200);
    const replay = await first.finish({ callback_url: first.callbackUrl });
    expect(replay.status).toBe(400);
    expect((await json(replay)).message).toMatch(/unknown, used or expired/);

    const victim = await fetch(`${base}/api/auth/oidc/test/start`, { method: 'POST' });
    const { state: otherState } = (await victim.json()) as { state: string };
    const attacker = await fetch(`${base}/api/auth/oidc/test/start`, { method: 'POST' });
    const { authorization_url } = (await attacker.json()) as { authorization_url: string };
    const { hops } = await new Browser().navigate(
      authorization_url,
      (next) => next.origin === svc.idp.issuer,
    );
    const code = new URL(callbackUrlOf(hops)).searchParams.get('code')!;
    const swapped = await first.finish({ code, state: otherState });
    expect(swapped.status).toBe(400);
    expect((await json(swapped)).message).toMatch(/invalid_grant/);
  });

  it.each(['https://evil.example', '//evil.example', '/\\evil.example', 'javascript:alert(1)'])(
    'an open-redirect attempt (return_to=%s) ends on /',
    async (target) => {
      svc.idp.signInAs(user('ada'));
      const { response } = await svc.consoleSignIn(
        new Browser(),
        'test',
        `?return_to=${encodeURIComponent(target)}`,
      );
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toBe('/');
    },
  );

  it('the JSON API answers an auth session: the same user each time for the same identity', async () => {
    svc.idp.signInAs(user('ada'));
    const { response } = await svc.apiSignIn('test', { return_to: '//evil.example' });
    const session = (await response.json()) as {
      token: string;
      expires_at: string;
      user: { user_id: string; email: string };
      return_to: string;
    };
    expect(session.token).toMatch(/^svc_sess_/);
    expect(Date.parse(session.expires_at)).toBeGreaterThan(Date.now());
    expect(session.user.email).toBe('ada@example.com');
    expect(session.return_to).toBe('/');
    expect((await bearerGet('/api/workspaces', session.token)).status).toBe(200);
    const unknown = await fetch(`${base}/api/auth/oidc/nope/start`, { method: 'POST' });
    expect(unknown.status).toBe(404);
  });
});

describe('the console session (SPEC 4.4, 5)', () => {
  const html = { accept: 'text/html,application/xhtml+xml' };
  const signedIn = async () => {
    svc.idp.signInAs(user('ada'));
    const browser = new Browser();
    await svc.consoleSignIn(browser, 'test');
    return browser;
  };

  it('a browser whose sign-in fails lands on the console sign-in page with the reason', async () => {
    svc.idp.signInAs(user('ada'));
    const browser = new Browser();
    const { hops } = await svc.consoleSignIn(browser, 'test', '', true);
    const tampered = new URL(callbackUrlOf(hops));
    tampered.searchParams.set('state', 'not-the-state');
    const mismatch = await browser.request(tampered.toString(), { headers: html });
    expect(mismatch.status).toBe(303);
    const page = new URL(mismatch.headers.get('location')!, base);
    expect(page.pathname).toBe('/console/sign-in');
    expect(page.searchParams.get('error')).toBe('state_mismatch');
    expect((await browser.request(callbackUrlOf(hops), { headers: html })).status).toBe(302);
    // Its state cookie went with the first use, so a replay is a mismatch again.
    const replay = await browser.request(callbackUrlOf(hops), { headers: html });
    expect(replay.status).toBe(303);
    expect(new URL(replay.headers.get('location')!, base).searchParams.get('error')).toBe('state_mismatch');
    const unknown = await fetch(`${base}/api/session/oidc/nope/start`, { headers: html, redirect: 'manual' });
    expect(new URL(unknown.headers.get('location')!, base).searchParams.get('error')).toBe(
      'unknown_provider',
    );
    // A client asking for JSON keeps the envelope and its status.
    expect((await fetch(`${base}/api/session/oidc/nope/start`, { redirect: 'manual' })).status).toBe(404);
  });

  it('registration refused is explained, not a JSON error', async () => {
    svc.idp.signInAs(user('stranger'));
    const browser = new Browser();
    const { hops } = await svc.consoleSignIn(browser, 'test', '', true);
    const res = await browser.request(callbackUrlOf(hops), { headers: html });
    expect(res.status).toBe(303);
    expect(new URL(res.headers.get('location')!, base).searchParams.get('error')).toBe(
      'registration_refused',
    );
    expect(browser.cookie('svc_session')).toBeUndefined();
  });

  it('GET /api/session names the user, workspaces and CSRF token; sign-out needs it and ends the session', async () => {
    const browser = await signedIn();
    const token = browser.cookie('svc_session', `${base}/api/session`)!.value;
    const me = await browser.request(`${base}/api/session`);
    expect(me.status).toBe(200);
    const session = (await me.json()) as {
      user: { email: string };
      csrf_token: string;
      workspaces: { workspace_id: string; role: string }[];
    };
    expect(session.user.email).toBe('ada@example.com');
    expect(session.workspaces).toContainEqual(
      expect.objectContaining({ workspace_id: svc.gw.boot.workspace_id, role: 'manager' }),
    );

    // A change carried by the cookie alone needs the token: a developer token create without it is refused.
    const create = (headers: Record<string, string>) =>
      browser.request(`${base}/api/auth/developer-tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ org_id: svc.gw.boot.org_id, name: 'csrf probe' }),
      });
    expect((await create({})).status).toBe(403);
    expect((await create({ 'x-csrf-token': session.csrf_token })).status).toBe(201);
    // The control plane takes the cookie the same way.
    const ws = await browser.request(`${base}/api/workspaces`);
    expect(ws.status).toBe(200);
    // And the query routes answer under the console's /api/query prefix.
    const rows = await browser.request(`${base}/api/query/requests?org_id=${svc.gw.boot.org_id}`);
    expect(rows.status).toBe(200);

    expect((await browser.request(`${base}/api/session/sign-out`, { method: 'POST' })).status).toBe(403);
    const out = await browser.request(`${base}/api/session/sign-out`, {
      method: 'POST',
      headers: { 'x-csrf-token': session.csrf_token },
    });
    expect(out.status).toBe(200);
    expect(browser.cookie('svc_session', `${base}/api/session`)).toBeUndefined();
    // The session is revoked, not only forgotten by this browser.
    expect((await bearerGet('/api/workspaces', token)).status).toBe(401);
  });

  it('svc console link: a single-use link signs a registered user in, and only once', async () => {
    const out = (await svc.gw.svc([
      'console',
      'link',
      '--email',
      'Ada@Example.com',
      '--return-to',
      '/console/keys',
      '--url',
      `${base}/`,
    ])) as { url: string; email: string };
    expect(out.email).toBe('ada@example.com');
    const link = new URL(out.url);
    expect(`${link.origin}${link.pathname}`).toBe(`${base}/api/session/link`);
    // Opening the link (a person, or a link scanner before them) changes nothing: it shows the
    // console's sign-in page, which asks to continue.
    const browser = new Browser();
    for (let i = 0; i < 2; i++) {
      const opened = await browser.request(out.url, { headers: html });
      expect(opened.status).toBe(303);
      const page = new URL(opened.headers.get('location')!, base);
      expect(page.pathname).toBe('/console/sign-in');
      expect(page.searchParams.get('link')).toBe(link.searchParams.get('token'));
    }
    expect(browser.cookie('svc_session', `${base}/api/session`)).toBeUndefined();
    const use = (b: Browser, headers: Record<string, string> = {}) =>
      b.request(`${base}/api/session/link`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ token: link.searchParams.get('token') }),
      });
    // Another site cannot sign this browser in (login CSRF), and trying does not use the link up.
    expect((await use(new Browser(), { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    const used = await use(browser, { origin: base });
    expect(used.status).toBe(200);
    expect(await used.json()).toEqual({ signed_in: true, return_to: '/console/keys' });
    const cookie = browser.cookie('svc_session', `${base}/api/session`);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    expect((await browser.request(`${base}/api/session`)).status).toBe(200);
    // Used: once only.
    const again = await use(new Browser());
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'bad_request', param: 'token' });
    // Only for a registered user; a link for anyone else is refused when made.
    await expect(svc.gw.svc(['console', 'link', '--email', 'nobody@example.com'])).rejects.toThrow(
      /svc users add/,
    );
  });

  it('lists the configured providers without a credential', async () => {
    const res = await fetch(`${base}/api/session/providers`);
    expect(await res.json()).toEqual({ providers: [{ name: 'test' }, { name: 'open' }, { name: 'code' }] });
  });
});
