/**
 * A console to look at by hand (not a test): `node --import tsx test/helpers/console-dev.ts`
 * starts the whole service with the fake identity provider, sends some traffic, and prints where
 * to sign in. The fake provider signs in ada@example.com, a manager of the bootstrapped workspace.
 */
import { oidcUser } from '../fakes/oidc-provider-svc.js';
import { startConsoleEnv } from './console-env.js';

const env = await startConsoleEnv();
env.svc.idp.signInAs(oidcUser('ada', { email: env.email }));
await env.chat(5, 'ses_dev_demo');
await env.chat(3);
const token = await env.signInToken();
env.svc.idp.signInAs(oidcUser('ada', { email: env.email }));
const boot = env.svc.gw.boot;
console.log(
  JSON.stringify(
    {
      console: `${env.base}/console`,
      sign_in: 'click "Sign in with test": the fake IdP signs in ada@example.com at once',
      session_cookie: { name: 'svc_session', value: token, domain: '127.0.0.1', path: '/', httpOnly: true },
      workspace_id: boot.workspace_id,
      org_id: boot.org_id,
      project_id: boot.project_id,
      api_key: boot.api_key,
      more_traffic: `OPENAI_BASE_URL=${env.base}/v1 OPENAI_API_KEY=${boot.api_key} (model gpt-4o-mini)`,
      stop: 'Ctrl-C',
    },
    null,
    2,
  ),
);
const stop = async () => {
  await env.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
