import type { Command } from 'commander';
import { type ApiTarget, apiTarget, callApi } from '../http-client.js';
import { emit, table } from '../output.js';

/**
 * `svc audit tokens create|list|revoke`: audit read tokens (SPEC 5: bearer token with scope
 * audit:read, one workspace each) through the control-plane HTTP routes, as the console would, so
 * the server decides who may mint, list and revoke them.
 *
 * Where and as whom: --url, else SVC_CONTROL_PLANE_URL, else this deployment's own port on 127.0.0.1
 * (SVC_HTTP_PORT); --token, else this deployment's administrator token (SVC_ADMIN_TOKEN or the data
 * dir's secrets.json: ../http-client.ts). A workspace manager passes a console session token.
 */

interface ClientFlags {
  url?: string;
  token?: string;
  json?: boolean;
}

interface AuditTokenRow {
  id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  scopes: string[];
  created_at: string;
  created_by: string | null;
  revoked_at: string | null;
}

interface MintedAuditToken {
  id: string;
  secret: string;
  prefix: string;
  workspace_id: string;
  name: string;
  scopes: string[];
}

/** The control plane to call and the bearer to call it with: flags, then the environment, then this deployment. */
export const controlPlaneTarget = (
  flags: Pick<ClientFlags, 'url' | 'token'>,
  env: NodeJS.ProcessEnv = process.env,
): ApiTarget =>
  apiTarget(flags, {
    url: env.SVC_CONTROL_PLANE_URL,
    missingToken: 'no credential: pass --token <admin or session token> or set SVC_ADMIN_TOKEN',
  });

/** One control-plane call; a refusal becomes a one-line CliError carrying the server's message. */
const callControlPlane = <T>(
  flags: ClientFlags,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> =>
  callApi<T>(
    controlPlaneTarget(flags),
    'the control plane',
    method,
    path,
    body === undefined ? {} : { body },
  );

const withClient = (cmd: Command) =>
  cmd
    .option(
      '--url <url>',
      'control-plane base URL (default SVC_CONTROL_PLANE_URL, else this deployment on 127.0.0.1)',
    )
    .option('--token <token>', 'admin token or a workspace manager session token (default the admin token)')
    .option('--json', 'print JSON');

const COLUMNS = ['id', 'workspace_id', 'name', 'prefix', 'scopes', 'created_at', 'created_by', 'revoked_at'];

/** Adds `tokens create|list|revoke` under the `svc audit` command it is given. */
export const registerAuditTokenVerbs = (audit: Command): void => {
  const tokens = audit
    .command('tokens')
    .description(
      'audit read tokens: a bearer with scope audit:read on one workspace, for the audit read facade under /api/audit',
    );
  withClient(
    tokens
      .command('create')
      .description('mint an audit read token for a workspace (the secret is shown once)')
      .requiredOption('--workspace <workspace_id>', 'the workspace whose audit trail the token reads')
      .requiredOption('--name <name>', 'a name to recognise the token by'),
  ).action(async (opts: ClientFlags & { workspace: string; name: string }) => {
    const out = await callControlPlane<MintedAuditToken>(opts, 'POST', '/api/audit-tokens', {
      workspace_id: opts.workspace,
      name: opts.name,
    });
    emit(
      opts.json,
      out,
      (o) =>
        `audit token ${o.id} for workspace ${o.workspace_id}: ${o.secret}\n(the token is shown once; store it now)`,
    );
  });
  withClient(
    tokens
      .command('list')
      .description('list audit read tokens, revoked ones included; never a secret')
      .option(
        '--workspace <workspace_id>',
        'only this workspace (default: every workspace the caller manages, all for the administrator)',
      ),
  ).action(async (opts: ClientFlags & { workspace?: string }) => {
    const q = opts.workspace ? `?${new URLSearchParams({ workspace_id: opts.workspace })}` : '';
    const out = await callControlPlane<{ data: AuditTokenRow[] }>(opts, 'GET', `/api/audit-tokens${q}`);
    emit(opts.json, out, (o) =>
      o.data.length === 0
        ? 'no audit tokens'
        : table(
            o.data.map((r) => ({ ...r, scopes: r.scopes.join(',') })),
            COLUMNS,
          ),
    );
  });
  withClient(
    tokens
      .command('revoke')
      .description('revoke an audit read token: it authenticates nothing from then on')
      .argument('<audit_token_id>', 'the token id (aut_...)'),
  ).action(async (id: string, opts: ClientFlags) => {
    const out = await callControlPlane<AuditTokenRow>(
      opts,
      'DELETE',
      `/api/audit-tokens/${encodeURIComponent(id)}`,
    );
    emit(opts.json, out, (o) => `revoked ${o.id} (${o.name}, workspace ${o.workspace_id})`);
  });
};
