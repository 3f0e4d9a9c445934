import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { browserPaymentOrigin } from '../commands/wallet/stripe.js';
import { registerApiProxy, rewriteQueryAlias } from '../edges/http/console/proxy.js';
import { loadConsoleApp, registerConsoleApp } from '../edges/http/console/static.js';
import type { Role, RoleContext, RoleName } from './role.js';

/** The built web app beside the sources (src/roles or dist/roles -> web/console/dist). */
const DEFAULT_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web', 'console', 'dist');

/** The roles whose `/api` routes the console calls. */
const API_ROLES: readonly RoleName[] = ['query', 'control-plane', 'auth'];

/**
 * ARCHITECTURE.md `console`: the web app at /console and its same-origin API. Where the API roles
 * run in this process, the console's calls reach them directly (the query routes through the
 * /api/query alias); where they do not, SVC_CONSOLE_API_URL names who serves them and the calls
 * are forwarded there with the session attached as a bearer.
 */
export const consoleRole = async (ctx: RoleContext): Promise<Role> => {
  const built = await loadConsoleApp(ctx.config.SVC_CONSOLE_DIR ?? DEFAULT_DIR);
  if (!built)
    ctx.logger.warn('the console web app is not built (npm run build); /console answers 503 until it is');
  const elsewhere = API_ROLES.filter((r) => !ctx.roles.includes(r));
  const upstream = ctx.config.SVC_CONSOLE_API_URL;
  if (elsewhere.length > 0 && !upstream)
    throw new Error(
      `the console role runs without the ${elsewhere.join(', ')} role(s) here: set SVC_CONSOLE_API_URL to the base URL that serves them`,
    );
  const queryHere = ctx.roles.includes('query');
  // A top-up's browser step confirms the payment intent at the provider with the publishable key.
  const paymentOrigin =
    ctx.config.SVC_PAYMENT_API_KEY && ctx.config.SVC_PAYMENT_PUBLISHABLE_KEY
      ? browserPaymentOrigin(ctx.config.SVC_PAYMENT_API_BASE)
      : null;
  return {
    name: 'console',
    ...(queryHere ? { rewriteUrl: rewriteQueryAlias } : {}),
    http: (app) => {
      registerConsoleApp(app, built, { connect: paymentOrigin ? [paymentOrigin] : [] });
      if (upstream && elsewhere.length > 0) registerApiProxy(app, { upstream, query: !queryHere });
    },
  };
};
