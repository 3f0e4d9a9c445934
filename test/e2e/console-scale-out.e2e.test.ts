import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from '../fakes/oidc-provider-browser.js';
import { type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { type ServeProcess, startServe } from '../helpers/svc-process.js';

// ARCHITECTURE.md console role (SPEC 4.4-4.6): the console on a port (process) of its own, the
// API roles elsewhere. A browser talks to the console process only: sign-in link, session,
// query routes under /api/query/**, a CSRF-checked change and sign-out all cross the proxy.

let api: GatewayEnv;
let console_: ServeProcess;

beforeAll(async () => {
  api = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' }, [
    '--roles',
    'gateway,control-plane,auth,query,ingest,projector',
  ]);
  console_ = await startServe({ ...api.env, SVC_CONSOLE_API_URL: api.serve.httpUrl }, ['--roles', 'console']);
  await api.svc([
    'users',
    'add',
    '--email',
    'ada@example.com',
    '--workspace',
    api.boot.workspace_id,
    '--role',
    'manager',
  ]);
}, 180_000);
afterAll(async () => {
  await console_?.stop();
  await api?.stop();
});

describe('a console process apart from the API roles', () => {
  it('serves the app, signs in, reads, changes and signs out through its own port', async () => {
    const base = console_.httpUrl;
    expect(base).not.toBe(api.serve.httpUrl);
    const page = await fetch(`${base}/console/requests`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');

    const { url } = (await api.svc(['console', 'link', '--email', 'ada@example.com', '--url', base])) as {
      url: string;
    };
    const browser = new Browser();
    const opened = await browser.request(url);
    expect(opened.status).toBe(303);
    const token = new URL(url).searchParams.get('token');
    const used = await browser.request(`${base}/api/session/link`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify({ token }),
    });
    expect(used.status).toBe(200);
    expect(browser.cookie('svc_session', `${base}/api/session`)).toBeDefined();

    const me = await browser.request(`${base}/api/session`);
    expect(me.status).toBe(200);
    const session = (await me.json()) as { csrf_token: string; workspaces: { workspace_id: string }[] };
    expect(session.workspaces.map((w) => w.workspace_id)).toEqual([api.boot.workspace_id]);

    const rows = await browser.request(`${base}/api/query/requests?org_id=${api.boot.org_id}`);
    expect(rows.status).toBe(200);
    expect(await rows.json()).toMatchObject({ total: 0, has_more: false });
    // Scope is the API's to enforce, and it does: another org id is refused through the proxy too.
    expect((await browser.request(`${base}/api/query/requests?org_id=org_not_mine`)).status).toBe(403);

    const create = (headers: Record<string, string>) =>
      browser.request(`${base}/api/auth/developer-tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base, ...headers },
        body: JSON.stringify({ org_id: api.boot.org_id, name: 'through the console' }),
      });
    expect((await create({})).status).toBe(403);
    expect((await create({ 'x-csrf-token': session.csrf_token })).status).toBe(201);

    const out = await browser.request(`${base}/api/session/sign-out`, {
      method: 'POST',
      headers: { 'x-csrf-token': session.csrf_token, origin: base },
    });
    expect(out.status).toBe(200);
    expect(browser.cookie('svc_session', `${base}/api/session`)).toBeUndefined();
    expect((await browser.request(`${base}/api/session`)).status).toBe(401);
  });

  it('refuses to start without the API roles and without SVC_CONSOLE_API_URL, saying why', async () => {
    await expect(startServe({ ...api.env }, ['--roles', 'console'], 30_000)).rejects.toThrow(
      /SVC_CONSOLE_API_URL/,
    );
  });
});
