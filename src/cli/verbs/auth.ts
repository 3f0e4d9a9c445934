import type { Command } from 'commander';
import type { Config } from '../../config/config.js';
import { safeReturnPath } from '../../edges/http/auth/return-to.js';
import { makeAuth } from '../../roles/auth.js';
import { CliError, emit } from '../output.js';
import { ownHttpUrl, withEventStore } from '../runtime.js';
import { parseTtl } from './tenancy.js';

type Auth = ReturnType<typeof makeAuth>;

const withAuth = <T>(fn: (auth: Auth, config: Config) => Promise<T>): Promise<T> =>
  withEventStore(({ store, db, secrets, config }) => fn(makeAuth(store, db.pool, secrets.masterKey), config));

const positiveInteger = (value: string, flag: string): number => {
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1)
    throw new CliError(`${flag} must be a positive integer`);
  return Number(value);
};

/** `svc registration invite create`, `svc registration code create` and `svc console link`. */
export const registerAuthCommands = (program: Command): void => {
  program
    .command('console')
    .description('the web console (SPEC 4.4)')
    .command('link')
    .description(
      'print a single-use link that signs a registered user in to the console (for deployments without an identity provider yet)',
    )
    .requiredOption('--email <email>', 'e-mail address of a registered user (svc users add)')
    .option('--ttl <duration>', 'how long the link may wait to be opened, e.g. 15m, 1h (at most 24h)', '15m')
    .option('--return-to <path>', 'console page to open after signing in', '/console/requests')
    .option(
      '--url <base_url>',
      "the console's base URL (default: this deployment's SVC_HTTP_HOST and SVC_HTTP_PORT)",
    )
    .option('--json', 'print JSON')
    .action(async (opts: { email: string; ttl: string; returnTo: string; url?: string; json?: boolean }) => {
      const ttlMs = parseTtl(opts.ttl);
      const returnTo = safeReturnPath(opts.returnTo);
      const out = await withAuth(async (auth, config) => {
        const link = await auth.links.create({ id: 'cli' }, { email: opts.email, returnTo, ttlMs });
        const base = (opts.url ?? ownHttpUrl(config.SVC_HTTP_HOST, config.SVC_HTTP_PORT)).replace(/\/+$/, '');
        return {
          url: `${base}/api/session/link?token=${encodeURIComponent(link.token)}`,
          email: link.email,
          expires_at: link.expires_at,
        };
      });
      emit(
        opts.json,
        out,
        (o) => `open this in a browser to sign in as ${o.email} (once, before ${o.expires_at}):\n${o.url}`,
      );
    });

  const registration = program
    .command('registration')
    .description('who may register through OIDC sign-in (SVC_REGISTRATION_POLICY: open, invite or code)');

  registration
    .command('invite')
    .description('single-use registration invites, bound to one e-mail address')
    .command('create')
    .description('create an invite; the invite token is shown once (the console passes it as ?invite=)')
    .requiredOption('--email <email>', 'the e-mail address the invitee signs in with')
    .option('--ttl <duration>', 'lifetime, e.g. 12h, 7d', '7d')
    .option('--workspace <workspace_id>', 'a workspace the new user joins')
    .option('--role <role>', 'role in --workspace: manager or member', 'member')
    .option('--json', 'print JSON')
    .action(
      async (opts: { email: string; ttl: string; workspace?: string; role: string; json?: boolean }) => {
        if (opts.role !== 'manager' && opts.role !== 'member')
          throw new CliError('--role must be manager or member');
        const role = opts.role;
        const ttlMs = parseTtl(opts.ttl);
        const out = await withAuth((auth) =>
          auth.registration.createInvite('cli', {
            email: opts.email,
            ttlMs,
            ...(opts.workspace ? { workspaceId: opts.workspace, role } : {}),
          }),
        );
        emit(
          opts.json,
          out,
          (o) =>
            `invite ${o.invite_id} for ${o.email} (expires ${o.expires_at}): ${o.invite}\n(the invite token is shown once; send it to the invitee now)`,
        );
      },
    );

  registration
    .command('code')
    .description('shared registration codes with a limited number of uses')
    .command('create')
    .description('create a registration code; the code is shown once')
    .requiredOption('--uses <n>', 'how many users may register with it')
    .option('--ttl <duration>', 'lifetime, e.g. 12h, 30d', '30d')
    .option('--json', 'print JSON')
    .action(async (opts: { uses: string; ttl: string; json?: boolean }) => {
      const uses = positiveInteger(opts.uses, '--uses');
      const ttlMs = parseTtl(opts.ttl);
      const out = await withAuth((auth) => auth.registration.createCode('cli', { uses, ttlMs }));
      emit(
        opts.json,
        out,
        (o) =>
          `registration code ${o.code_id} (${o.uses} uses, expires ${o.expires_at}): ${o.code}\n(the code is shown once; store it now)`,
      );
    });
};
