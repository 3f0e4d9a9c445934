import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from '../fakes/oidc-provider-browser.js';
import { type OidcSvc, startOidcSvc, oidcUser as user } from '../fakes/oidc-provider-svc.js';

// Users resolved or created per registration policy (invite-only, registration code with
// limited uses, open), the registration status routes (never an e-mail or a digest), and the audit
// events of sign-in and registration.

let svc: OidcSvc;
let base: string;

beforeAll(async () => {
  svc = await startOidcSvc();
  base = svc.base;
});
afterAll(async () => {
  await svc?.stop();
});

const body = async (res: Response) => (await res.json()) as Record<string, unknown>;
const status = async (path: string) => {
  const res = await fetch(`${base}${path}`);
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown> };
};
const userExists = async (email: string) =>
  (await svc.gw.db.pool.query('SELECT 1 FROM rm_users WHERE email = $1', [email])).rowCount === 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A console sign-in as `name`; answers the callback's response and the browser. */
const signInAs = async (provider: 'test' | 'open' | 'code', name: string, query = '', extra = {}) => {
  svc.idp.signInAs(user(name, extra));
  const browser = new Browser();
  const { response } = await svc.consoleSignIn(browser, provider, query);
  return { response, browser };
};

describe('invite-only registration (SVC_REGISTRATION_POLICY=invite)', () => {
  let invite: { invite: string; invite_id: string; expires_at: string };

  it('refuses a new user without an invite and creates no user', async () => {
    const { response, browser } = await signInAs('test', 'bob');
    expect(response.status).toBe(403);
    expect((await body(response)).message).toMatch(/invitation/);
    expect(browser.cookie('svc_session')).toBeUndefined();
    expect(await userExists('bob@example.com')).toBe(false);
  });

  it('an invite created on the CLI reports valid and never the e-mail or a digest', async () => {
    invite = (await svc.gw.svc([
      'registration',
      'invite',
      'create',
      '--email',
      'Bob@Example.com',
      '--workspace',
      svc.gw.boot.workspace_id,
      '--ttl',
      '1h',
    ])) as unknown as typeof invite;
    expect(invite.invite).toMatch(/^svc_inv_/);
    const s = await status(
      `/api/auth/registration-invite/status?invite=${encodeURIComponent(invite.invite)}`,
    );
    expect(s.status).toBe(200);
    expect(s.body).toEqual({ valid: true, expired: false });
    expect(s.text).not.toMatch(/@|bob|[0-9a-f]{64}/i);
  });

  it('an invite admits only its own e-mail address, once, with its workspace role', async () => {
    const query = `?invite=${encodeURIComponent(invite.invite)}`;
    const eve = await signInAs('test', 'eve', query);
    expect(eve.response.status).toBe(403);
    expect((await body(eve.response)).message).toMatch(/another e-mail/);

    const bob = await signInAs('test', 'bob', `${query}&return_to=%2Fwelcome`);
    expect(bob.response.status).toBe(302);
    expect(bob.response.headers.get('location')).toBe('/welcome');
    const token = bob.browser.cookie('svc_session')!.value;
    const workspaces = await fetch(`${base}/api/workspaces`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(JSON.stringify(await workspaces.json())).toContain(svc.gw.boot.workspace_id);

    const used = await status(
      `/api/auth/registration-invite/status?invite=${encodeURIComponent(invite.invite)}`,
    );
    expect(used.body).toEqual({ valid: false, expired: false });
    const carol = await signInAs('test', 'carol', query);
    expect(carol.response.status).toBe(403);
    expect((await body(carol.response)).message).toMatch(/already used/);
  });

  it('an expired invite reports expired and admits no one; unknown and missing invites', async () => {
    const short = await svc.gw.svc([
      'registration',
      'invite',
      'create',
      '--email',
      'dora@example.com',
      '--ttl',
      '1s',
    ]);
    await sleep(1_100);
    const token = encodeURIComponent(String(short.invite));
    expect((await status(`/api/auth/registration-invite/status?invite=${token}`)).body).toEqual({
      valid: false,
      expired: true,
    });
    const dora = await signInAs('test', 'dora', `?invite=${token}`);
    expect(dora.response.status).toBe(403);
    expect((await body(dora.response)).message).toMatch(/expired/);

    expect((await status('/api/auth/registration-invite/status?invite=svc_inv_nope')).body).toEqual({
      valid: false,
      expired: false,
    });
    const missing = await status('/api/auth/registration-invite/status');
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/invite/);
  });
});

describe('registration codes with limited uses (provider policy code)', () => {
  let code: string;
  const codeStatus = async (value: string) =>
    status(`/api/auth/registration-code/status?code=${encodeURIComponent(value)}`);

  it('a code created on the CLI reports its uses and never a digest', async () => {
    const created = await svc.gw.svc(['registration', 'code', 'create', '--uses', '2']);
    code = String(created.code);
    expect(code).toMatch(/^svc_reg_/);
    const s = await codeStatus(code);
    expect(s.status).toBe(200);
    expect(s.body).toEqual({ valid: true, expired: false, uses_remaining: 2 });
    expect(s.text).not.toMatch(/[0-9a-f]{64}/i);
  });

  it('admits as many new users as it has uses; a returning user costs none', async () => {
    svc.idp.signInAs(user('dan'));
    const without = await svc.apiSignIn('code');
    expect(without.response.status).toBe(403);
    expect((await body(without.response)).message).toMatch(/registration code/);

    const dan = await svc.apiSignIn('code', { registration_code: code });
    expect(dan.response.status).toBe(200);
    expect(await body(dan.response)).toMatchObject({ registered: true, user: { email: 'dan@example.com' } });
    const again = await svc.apiSignIn('code', { registration_code: code });
    expect(await body(again.response)).toMatchObject({ registered: false });
    expect((await codeStatus(code)).body).toEqual({ valid: true, expired: false, uses_remaining: 1 });

    svc.idp.signInAs(user('erin'));
    expect((await svc.apiSignIn('code', { registration_code: code })).response.status).toBe(200);
    expect((await codeStatus(code)).body).toEqual({ valid: false, expired: false, uses_remaining: 0 });

    svc.idp.signInAs(user('frank'));
    const frank = await svc.apiSignIn('code', { registration_code: code });
    expect(frank.response.status).toBe(403);
    expect((await body(frank.response)).message).toMatch(/no uses left/);
    const forged = await svc.apiSignIn('code', { registration_code: 'svc_reg_forged' });
    expect(forged.response.status).toBe(403);
    expect(await userExists('frank@example.com')).toBe(false);
  });

  it('an expired code reports expired; unknown and missing codes', async () => {
    const short = await svc.gw.svc(['registration', 'code', 'create', '--uses', '5', '--ttl', '1s']);
    await sleep(1_100);
    expect((await codeStatus(String(short.code))).body).toEqual({
      valid: false,
      expired: true,
      uses_remaining: 5,
    });
    expect((await codeStatus('svc_reg_nope')).body).toEqual({
      valid: false,
      expired: false,
      uses_remaining: 0,
    });
    const missing = await status('/api/auth/registration-code/status');
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/code/);
  });
});

describe('open registration (provider policy open)', () => {
  it('creates a user on first sign-in; an unverified e-mail is refused', async () => {
    const { response } = await signInAs('open', 'grace');
    expect(response.status).toBe(302);
    expect(await userExists('grace@example.com')).toBe(true);

    const mallory = await signInAs('open', 'mallory', '', { email_verified: false });
    expect(mallory.response.status).toBe(403);
    expect((await body(mallory.response)).message).toMatch(/not verified/);
    expect(await userExists('mallory@example.com')).toBe(false);
  });
});

describe('audit', () => {
  it('sign-ins and registrations are published on svc.audit.events, without e-mails or secrets', async () => {
    const records = await svc.auditRecords([
      'auth.signed_in',
      'auth.identity_linked',
      'registration_invite.created',
      'registration_invite.accepted',
      'registration_code.redeemed',
    ]);
    const signIn = records.find((r) => r.record.action === 'auth.signed_in')!;
    expect(signIn.subject).toBe('svc.audit.events.platform');
    expect(signIn.record).toMatchObject({
      source: 'auth',
      target: { type: 'identity' },
      details: { method: 'oidc' },
    });
    expect(String(signIn.record.actor)).toMatch(/^user:usr_/);
    const accepted = records.find((r) => r.record.action === 'registration_invite.accepted')!;
    expect(accepted.subject).toBe(`svc.audit.events.${svc.gw.boot.workspace_id}`);
    const auth = records.filter((r) => r.record.source === 'auth').map((r) => r.raw);
    expect(auth.join('\n')).not.toMatch(/@example\.com|svc_inv_|svc_reg_|svc_sess_|token_hash|code_hash/);
  });
});
