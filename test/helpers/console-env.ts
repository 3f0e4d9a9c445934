import OpenAI from 'openai';
import { Browser } from '../fakes/oidc-provider-browser.js';
import { type OidcSvc, oidcUser, startOidcSvc } from '../fakes/oidc-provider-svc.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { type FakePaymentApi, startFakePaymentApi } from '../fakes/payment-api.js';
import { addOpenAiEndpoint } from './gateway-env.js';

/**
 * The whole service (`svc serve`, every role, the console included) signed into through the fake
 * OpenID provider, with a fake OpenAI upstream on wallet traffic and the fake payment API: what the
 * console's end-to-end test and `test/helpers/console-dev.ts` run against.
 */
export interface ConsoleEnv {
  svc: OidcSvc;
  upstream: FakeOpenAI;
  payments: FakePaymentApi;
  base: string;
  /** The manager of the bootstrapped workspace, as the IdP knows them. */
  email: string;
  openai: OpenAI;
  /** A session token obtained through the real sign-in flow (for clients other than the browser). */
  signInToken(): Promise<string>;
  /** `n` chat requests, each in `sessionId` when given; answers their request ids. */
  chat(n: number, sessionId?: string, headers?: Record<string, string>): Promise<string[]>;
  stop(): Promise<void>;
}

const PAYMENT_KEY = 'sk_test_console';
export const WEBHOOK_SECRET = 'whsec_console_test';
export const PUBLISHABLE_KEY = 'pk_test_console';
/** A console user whose sessions act as the platform administrator (SVC_PLATFORM_ADMINS). */
export const ADMIN_EMAIL = 'ops@example.com';

export const startConsoleEnv = async (): Promise<ConsoleEnv> => {
  const upstream = await startFakeOpenAI();
  const payments = await startFakePaymentApi({ apiKey: PAYMENT_KEY, publishableKey: PUBLISHABLE_KEY });
  const svc = await startOidcSvc({
    SVC_LOG_LEVEL: 'error',
    SVC_PAYMENT_API_KEY: PAYMENT_KEY,
    SVC_PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
    SVC_PAYMENT_PUBLISHABLE_KEY: PUBLISHABLE_KEY,
    SVC_PAYMENT_API_BASE: payments.url,
    SVC_PLATFORM_ADMINS: ADMIN_EMAIL,
  });
  const gw = svc.gw;
  // The provider's webhook for a payment the console's browser step confirms.
  payments.deliverWebhooksTo(`${svc.base}/api/payments/webhooks/stripe`, WEBHOOK_SECRET);
  const email = 'ada@example.com';
  await gw.svc(['users', 'add', '--email', email, '--workspace', gw.boot.workspace_id, '--role', 'manager']);
  await gw.svc([
    'users',
    'add',
    '--email',
    ADMIN_EMAIL,
    '--workspace',
    gw.boot.workspace_id,
    '--role',
    'member',
  ]);
  // Wallet traffic: a platform key and funds, so every request holds, settles and shows a cost.
  await addOpenAiEndpoint(gw, upstream.url, { model: 'gpt-4o-mini', connection: false });
  await gw.svc([
    'keys',
    'platform',
    'set',
    '--provider',
    'openai',
    '--secret',
    'sk-platform',
    '--base-url',
    upstream.url,
  ]);
  await gw.svc([
    'wallet',
    'grant',
    '--workspace',
    gw.boot.workspace_id,
    '--amount',
    '25.00',
    '--reason',
    'console test funds',
    '--idempotency-key',
    'console-env-funds',
  ]);
  const openai = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${svc.base}/v1`, maxRetries: 0 });
  const chat = async (n: number, sessionId?: string, headers: Record<string, string> = {}) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { response } = await openai.chat.completions
        .create(
          { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `console request ${i}` }] },
          { headers: { ...headers, ...(sessionId ? { 'x-svc-session-id': sessionId } : {}) } },
        )
        .withResponse();
      ids.push(response.headers.get('x-svc-request-id') ?? '');
    }
    return ids;
  };
  return {
    svc,
    upstream,
    payments,
    base: svc.base,
    email,
    openai,
    chat,
    signInToken: async () => {
      svc.idp.signInAs(oidcUser('ada', { email }));
      const browser = new Browser();
      await svc.consoleSignIn(browser, 'test');
      const cookie = browser.cookie('svc_session', `${svc.base}/api/session`);
      if (!cookie) throw new Error('sign-in set no session cookie');
      return cookie.value;
    },
    stop: async () => {
      await svc.stop();
      await upstream.close();
      await payments.close();
    },
  };
};
