import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidcUser } from '../fakes/oidc-provider-svc.js';
import { artifactDir, chromiumPath, type LaunchedBrowser, launchChromium } from '../helpers/browser.js';
import { ADMIN_EMAIL, type ConsoleEnv, startConsoleEnv } from '../helpers/console-env.js';
import { eventually } from '../helpers/gateway-env.js';

// The console (SPEC 4.4-4.6, 5), checked from outside: Debian's Chromium (playwright-core) signs in through the
// test identity provider, finds requests the openai SDK made, opens a body, watches a live session,
// downloads a cost_detail export whose sum matches, rotates a key. Screenshots of every page go to
// test-artifacts/console/ (SPEC 4.4-4.6, 5).

const executable = chromiumPath();
let env: ConsoleEnv;
let launched: LaunchedBrowser;
let context: BrowserContext;
let page: Page;
let shots: string;
let admin: string;
let base: string;

/** Money as exact atto-dollars (18 decimals), so sums are compared without floating point. */
const atto = (usd: string): bigint => {
  const [int = '0', frac = ''] = usd.trim().split('.');
  const neg = int.startsWith('-');
  const v = BigInt(int.replace('-', '') || '0') * 10n ** 18n + BigInt((frac + '0'.repeat(18)).slice(0, 18));
  return neg ? -v : v;
};

const api = async <T>(path: string): Promise<T> => {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${admin}` } });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
};

const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

/**
 * Every visible form control on the page has an accessible name (labelled controls). The
 * check runs in the page; it is written as a string because this project's types have no DOM.
 */
const UNLABELLED = `[...document.querySelectorAll('input, select, textarea')]
  .filter((e) => e.type !== 'hidden')
  .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))
  .map((e) => e.outerHTML.slice(0, 120))`;
const unlabelled = () => page.evaluate<string[]>(UNLABELLED);

/**
 * axe-core (Deque's accessibility engine) on the current page, WCAG 2 A and AA rules: labels,
 * contrast, names, landmarks, ARIA. Evaluated through the DevTools protocol, which the page's
 * CSP does not govern; the page itself still loads nothing but its own assets.
 */
let axeSource = '';
const axeViolations = async (): Promise<string[]> => {
  axeSource ||= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  return page.evaluate<string[]>(
    `${axeSource};
     axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
       .then((r) => r.violations.map((v) => v.id + ': ' + v.help + ' (' + v.nodes.length + ') ' +
         v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')))`,
  );
};
const focused = () =>
  page.evaluate<string>('document.activeElement ? document.activeElement.textContent : ""');

const open = async (path: string, heading: string) => {
  await page.goto(`${base}/console${path}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
};

describe.skipIf(!executable)('the console in Chromium', () => {
  beforeAll(async () => {
    env = await startConsoleEnv();
    base = env.base;
    admin = env.svc.gw.admin;
    shots = await artifactDir('console');
    launched = await launchChromium(executable!);
    context = await launched.browser.newContext({
      acceptDownloads: true,
      viewport: { width: 1360, height: 900 },
    });
    page = await context.newPage();
  }, 180_000);
  afterAll(async () => {
    await launched?.close();
    await env?.stop();
  });

  it('signs in through the test identity provider', async () => {
    env.svc.idp.signInAs(oidcUser('ada', { email: env.email }));
    await page.goto(`${base}/`);
    await page.getByRole('heading', { name: 'Sign in to the Model Gateway console' }).waitFor();
    await shot('sign-in');
    expect(await axeViolations()).toEqual([]);
    await page.getByRole('link', { name: 'Sign in with test' }).click();
    await page.waitForURL(`${base}/console/requests**`);
    await page.getByRole('heading', { level: 1, name: 'Requests' }).waitFor();
    expect(await page.getByText(env.email).count()).toBeGreaterThan(0);
    const cookies = await context.cookies(base);
    expect(cookies.find((c) => c.name === 'svc_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
  });

  it('finds the requests the openai SDK made, and opens a body', async () => {
    const ids = await env.chat(3, 'ses_console_e2e', { 'svc-enable-tracing': '1' });
    const org = env.svc.gw.boot.org_id;
    await eventually(
      async () =>
        (await api<{ total: number }>(`/api/requests?org_id=${org}&session_id=ses_console_e2e`)).total >= 3,
      30_000,
      'the three requests to be queryable',
    );
    await page.reload();
    await page.getByTestId('request-row').first().waitFor();
    const rows = await page.getByTestId('request-row').allTextContents();
    for (const id of ids) expect(rows.join('\n')).toContain(id);
    await shot('requests');
    expect(await unlabelled()).toEqual([]);
    expect(await axeViolations()).toEqual([]);

    await page.getByTestId('request-row').filter({ hasText: ids[0]! }).click();
    await page.waitForURL(`**/console/requests/${ids[0]}**`);
    await page.getByRole('button', { name: 'Show request body' }).click();
    await expect
      .poll(() => page.getByTestId('request-body').first().textContent(), { timeout: 10_000 })
      .toContain('console request 0');
    await shot('request-detail');

    // Its trace: the gateway's own LLM span for this request (SPEC 4.3, 4.5), with its detail.
    await page.getByRole('link', { name: 'Open its trace' }).click();
    const span = page.getByTestId('span-item').first();
    await span.waitFor({ timeout: 20_000 });
    expect(await span.textContent()).toMatch(/LLM/i);
    await span.click();
    await page.getByText(ids[0]!).first().waitFor();
    await shot('trace');
    expect(await axeViolations()).toEqual([]);
  });

  it('watches a live session update', async () => {
    await open('/sessions/ses_console_e2e', 'Session ses_console_e2e');
    await page.getByTestId('live-toggle').check();
    await page
      .getByText(/connected|live/i)
      .first()
      .waitFor();
    const [id] = await env.chat(1, 'ses_console_e2e');
    await page.getByTestId('live-row').filter({ hasText: id! }).waitFor({ timeout: 20_000 });
    await shot('session-live');
    expect(await unlabelled()).toEqual([]);
    expect(await axeViolations()).toEqual([]);
  });

  it('downloads a cost_detail export whose sum matches the priced requests', async () => {
    const org = env.svc.gw.boot.org_id;
    const rows = await api<{
      data: { total_cost_usd: string | null; billing_status: string }[];
      total: number;
    }>(`/api/requests?org_id=${org}&limit=200`);
    expect(rows.total).toBe(rows.data.length);
    const expected = rows.data.reduce((s, r) => s + atto(r.total_cost_usd ?? '0'), 0n);
    expect(expected).toBeGreaterThan(0n);
    await open('/usage', 'Usage');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('export-download').click(),
    ]);
    const csv = await readFile((await download.path())!, 'utf8');
    const [header, ...lines] = csv.trim().split(/\r?\n/);
    const column = header!.split(',').indexOf('cost_usd');
    expect(column).toBeGreaterThanOrEqual(0);
    const sum = lines.reduce((s, line) => s + atto(line.split(',')[column] ?? '0'), 0n);
    expect(sum).toBe(expected);
    await shot('usage');
    expect(await unlabelled()).toEqual([]);
    expect(await axeViolations()).toEqual([]);
  });

  it('rotates an API key: the new secret works, the old one is refused', async () => {
    const oldKey = env.svc.gw.boot.api_key;
    await open('/keys', 'Keys');
    await shot('keys');
    expect(await unlabelled()).toEqual([]);
    expect(await axeViolations()).toEqual([]);
    // The row of the key in use: the one whose stored prefix the secret starts with.
    const rows = page.getByTestId('api-key-row');
    const prefixes: string[] = [];
    for (let i = 0; i < (await rows.count()); i++)
      prefixes.push((await rows.nth(i).getAttribute('data-prefix')) ?? '');
    const index = prefixes.findIndex((p) => p.length > 0 && oldKey.startsWith(p.replace(/…$/, '')));
    expect(index).toBeGreaterThanOrEqual(0);
    await rows.nth(index).getByTestId('rotate-key').click();
    await page.getByTestId('rotate-confirm').click();
    const secret = (await page.getByTestId('secret-value').first().textContent())!.trim();
    expect(secret).toMatch(/^svc_sk_/);
    expect(secret).not.toBe(oldKey);
    await shot('keys-rotated');
    const call = (key: string) =>
      new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 }).chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'after rotation' }],
      });
    await expect(call(secret)).resolves.toBeTruthy();
    await eventually(
      async () =>
        (await call(oldKey).then(
          () => 200,
          (e: { status?: number }) => e.status ?? 0,
        )) === 401,
      10_000,
      'the old key to be refused',
    );
  });

  it('shows the wallet, traces and connections pages, each with labelled controls', async () => {
    await open('/wallet', 'Wallet');
    await page.getByTestId('wallet-balance').waitFor();
    await shot('wallet');
    expect(await unlabelled()).toEqual([]);
    expect(await axeViolations()).toEqual([]);
    await open('/traces', 'Traces');
    await shot('traces');
    expect(await unlabelled()).toEqual([]);
    expect(await axeViolations()).toEqual([]);
    await open('/connections', 'Connections');
    await shot('connections');
    expect(await unlabelled()).toEqual([]);
    expect(await axeViolations()).toEqual([]);
  });

  it('can be used from the keyboard: the skip link and the navigation take focus in order', async () => {
    await open('/requests', 'Requests');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    const names: string[] = [];
    for (let i = 0; i < 7; i++) {
      await page.keyboard.press('Tab');
      names.push(await focused());
    }
    expect(names).toEqual(['Requests', 'Sessions', 'Traces', 'Usage', 'Wallet', 'Keys', 'Connections']);
  });

  it('tops up the wallet through the payment provider browser step (publishable key, fake payment API)', async () => {
    const ws = env.svc.gw.boot.workspace_id;
    const balance = async () =>
      (await api<{ balance_usd: string }>(`/api/workspaces/${ws}/wallet`)).balance_usd;
    const before = await balance();
    await open('/wallet', 'Wallet');
    const topUp = page.locator('section.card').filter({ has: page.getByRole('heading', { name: 'Top up' }) });
    await topUp.getByLabel('Amount (USD)').fill('5.00');
    await topUp.getByRole('button', { name: /top-up/i }).click();
    await page.getByTestId('topup-pay').click();
    await page.getByText('paid and credited to the wallet').waitFor({ timeout: 20_000 });
    expect(atto(await balance()) - atto(before)).toBe(atto('5.00'));
    // The browser step used the publishable key, never the secret key.
    const confirm = env.payments.requests.find((r) => r.path.endsWith('/confirm'))!;
    expect(confirm.form.key).toBe('pk_test_console');
    expect(confirm.apiKey).toBeUndefined();
    await shot('wallet-topup');
  });

  it('a platform administrator (SVC_PLATFORM_ADMINS) grants credit from the wallet page; a manager cannot', async () => {
    const ws = env.svc.gw.boot.workspace_id;
    const balance = async () =>
      (await api<{ balance_usd: string }>(`/api/workspaces/${ws}/wallet`)).balance_usd;
    // The manager's grant is refused by the server, whatever the page shows.
    const refused = await page.evaluate<number>(
      `fetch('/api/session').then((r) => r.json()).then((s) => fetch('/api/workspaces/${ws}/wallet/grants', {
         method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': s.csrf_token },
         body: JSON.stringify({ amount_usd: '1.00', reason: 'not mine to give', idempotency_key: 'e2e-refused' }) }))
       .then((r) => r.status)`,
    );
    expect(refused).toBe(403);

    const before = await balance();
    const { url } = (await env.svc.gw.svc([
      'console',
      'link',
      '--email',
      ADMIN_EMAIL,
      '--return-to',
      '/console/wallet',
      '--url',
      base,
    ])) as { url: string };
    const adminContext = await launched.browser.newContext({ viewport: { width: 1360, height: 900 } });
    try {
      const adminPage = await adminContext.newPage();
      await adminPage.goto(url);
      await adminPage.getByRole('button', { name: 'Continue' }).click();
      await adminPage.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
      const grants = adminPage
        .locator('section.card')
        .filter({ has: adminPage.getByRole('heading', { name: 'Grants' }) });
      await grants.getByLabel('Amount (USD)').fill('2.50');
      await grants.getByLabel('Reason').fill('console e2e grant');
      await grants.getByRole('button', { name: 'Grant credit' }).click();
      await adminPage.getByText(/^Granted \$2\.50/).waitFor();
      await adminPage.screenshot({ path: join(shots, 'wallet-admin-grant.png'), fullPage: true });
    } finally {
      await adminContext.close();
    }
    expect(atto(await balance()) - atto(before)).toBe(atto('2.50'));
  });

  it('refuses a change without the CSRF token, even from the page itself', async () => {
    const status = await page.evaluate(() =>
      fetch('/api/session/sign-out', { method: 'POST' }).then((r) => r.status),
    );
    expect(status).toBe(403);
  });

  it('signs out, and explains a failed sign-in on its own page', async () => {
    await open('/requests', 'Requests');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    expect((await context.cookies(base)).find((c) => c.name === 'svc_session')).toBeUndefined();
    await page.goto(`${base}/api/session/oidc/test/callback?code=forged&state=forged`);
    await page.getByRole('heading', { name: 'This sign-in was not started in this browser' }).waitFor();
    await shot('sign-in-failed');
  });
});
