import type { Command } from 'commander';
import type { Config } from '../../config/config.js';
import { withOwnPool } from '../../providers/azure/client.js';
import { type CredentialRef, discoverDeployments } from '../../providers/azure/discover.js';
import { type ControlPlane, makeControlPlane } from '../../roles/control-plane.js';
import { formatDiscovery } from '../catalog/azure-report.js';
import { CliError, emit } from '../output.js';
import { withEventStore } from '../runtime.js';

const cli = { id: 'cli' };

/** SVC_TENANT_PRIVATE_DESTINATIONS holds for the CLI as for `svc serve`. */
const allowsPrivate = (config: Config): boolean => config.SVC_TENANT_PRIVATE_DESTINATIONS === 'allow';

export const withControlPlane = <T>(fn: (cp: ControlPlane, config: Config) => Promise<T>): Promise<T> =>
  withEventStore(({ store, db, secrets, config }) =>
    fn(
      makeControlPlane(store, db.pool, secrets.masterKey, undefined, {
        allowPrivateDestinations: allowsPrivate(config),
      }),
      config,
    ),
  );

const parseJsonOption = (value: string | undefined, flag: string): unknown => {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new CliError(`${flag} is not valid JSON`);
  }
};

export const parseTtl = (value: string): number => {
  const m = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  if (!m) throw new CliError(`--ttl must look like 30m, 12h or 7d, not ${value}`);
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
};

const discover = async (ref: CredentialRef, opts: { apply?: boolean; json?: boolean }) => {
  const report = await withControlPlane((cp, config) =>
    withOwnPool((http) => discoverDeployments(cp, cli, ref, { apply: opts.apply === true, http }), {
      allowPrivateDestinations: allowsPrivate(config),
    }),
  );
  emit(opts.json, report, formatDiscovery);
};

/**
 * A workspace, organization and project, each made when missing (by name), and a new API key of
 * the project: `svc bootstrap`, and `svc demo`'s tenant.
 */
export const bootstrap = async (
  cp: ControlPlane,
  names: { workspace: string; org: string; project: string },
  keyName: string,
) => {
  const ws = await cp.createWorkspace(cli, names.workspace, { ifMissing: true });
  const org = await cp.createOrganization(cli, ws.workspace_id, names.org, { ifMissing: true });
  const project = await cp.createProject(cli, org.org_id, names.project, { ifMissing: true });
  const key = await cp.createApiKey(cli, project.project_id, keyName);
  return {
    workspace_id: ws.workspace_id,
    org_id: org.org_id,
    project_id: project.project_id,
    api_key_id: key.api_key_id,
    api_key: key.api_key,
  };
};

export const registerTenancyCommands = (program: Command): void => {
  program
    .command('bootstrap')
    .description('create a workspace, organization and project when missing (by name) and mint an API key')
    .requiredOption('--workspace <name>', 'workspace name')
    .requiredOption('--org <name>', 'organization name')
    .requiredOption('--project <name>', 'project name')
    .option('--key-name <name>', 'name of the API key to mint', 'bootstrap')
    .option('--json', 'print JSON')
    .action(
      async (opts: { workspace: string; org: string; project: string; keyName: string; json?: boolean }) => {
        const out = await withControlPlane((cp) => bootstrap(cp, opts, opts.keyName));
        emit(opts.json, out, (o) =>
          [
            `workspace ${o.workspace_id}`,
            `org       ${o.org_id}`,
            `project   ${o.project_id}`,
            `api key   ${o.api_key_id}: ${o.api_key}`,
            '(the API key is shown once; store it now)',
          ].join('\n'),
        );
      },
    );

  const keys = program.command('keys').description('service API keys and platform provider keys');
  keys
    .command('create')
    .description('mint a service API key for a project (the secret is shown once)')
    .requiredOption('--project <project_id>', 'project id')
    .option('--name <name>', 'key name', 'default')
    .option('--json', 'print JSON')
    .action(async (opts: { project: string; name: string; json?: boolean }) => {
      const out = await withControlPlane((cp) => cp.createApiKey(cli, opts.project, opts.name));
      emit(
        opts.json,
        out,
        (o) => `api key ${o.api_key_id}: ${o.api_key}\n(the API key is shown once; store it now)`,
      );
    });
  keys
    .command('revoke')
    .description('revoke a service API key; every gateway refuses it within a second')
    .argument('<api_key_id>', 'api key id')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withControlPlane((cp) => cp.revokeApiKey(cli, id));
      emit(opts.json, { api_key_id: id, revoked: true }, () => `revoked ${id}`);
    });
  const platform = keys
    .command('platform')
    .description('operator-owned provider keys that serve wallet traffic');
  platform
    .command('set')
    .description('set the platform key of a provider (validated and encrypted like a tenant connection)')
    .requiredOption('--provider <provider>', 'openai, anthropic, bedrock, bedrock-gov, azure or azure-gov')
    .option('--lane <lane>', "the registry lane's own key (default: the provider's, for lanes without one)")
    .requiredOption(
      '--secret <secret>',
      'the credential (bedrock: JSON with access_key_id and secret_access_key)',
    )
    .option('--metadata <json>', 'connection metadata as JSON')
    .option('--base-url <url>', 'origin override')
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        provider: string;
        lane?: string;
        secret: string;
        metadata?: string;
        baseUrl?: string;
        json?: boolean;
      }) => {
        const out = await withControlPlane((cp) =>
          cp.setPlatformKey(cli, {
            provider: opts.provider,
            lane: opts.lane,
            secret: opts.secret,
            metadata: parseJsonOption(opts.metadata, '--metadata'),
            baseUrl: opts.baseUrl ?? null,
          }),
        );
        emit(opts.json, out, (o) =>
          o.lane
            ? `platform key for ${o.provider} on lane ${o.lane} set`
            : `platform key for ${o.provider} set`,
        );
      },
    );
  platform
    .command('discover')
    .description('list the deployments of a platform deployment-host key and classify them (SPEC 4.6)')
    .requiredOption('--provider <provider>', 'azure or azure-gov')
    .option('--lane <lane>', "a lane's own key (default: the provider's)")
    .option('--apply', 'store mappable deployments and prune mappings whose deployment is gone')
    .option('--json', 'print JSON')
    .action(async (opts: { provider: string; lane?: string; apply?: boolean; json?: boolean }) =>
      discover(opts.lane ? { platform: opts.provider, lane: opts.lane } : { platform: opts.provider }, opts),
    );

  const connections = program.command('connections').description('tenant provider connections (BYOK)');
  connections
    .command('create')
    .description('create a provider connection for a project; the secret is encrypted before it is stored')
    .requiredOption('--project <project_id>', 'project id')
    .requiredOption('--provider <provider>', 'openai, anthropic, bedrock, bedrock-gov, azure or azure-gov')
    .option('--lane <lane>', 'the registry lane it serves (default: every lane of the provider)')
    .requiredOption(
      '--name <name>',
      'connection name: primary is routed by default, another only by a model lane:name/model',
    )
    .requiredOption('--secret <secret>', 'the credential')
    .option('--metadata <json>', 'connection metadata as JSON')
    .option('--base-url <url>', 'origin override')
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        project: string;
        provider: string;
        lane?: string;
        name: string;
        secret: string;
        metadata?: string;
        baseUrl?: string;
        json?: boolean;
      }) => {
        const out = await withControlPlane((cp) =>
          cp.createConnection(cli, {
            projectId: opts.project,
            provider: opts.provider,
            lane: opts.lane,
            name: opts.name,
            secret: opts.secret,
            metadata: parseJsonOption(opts.metadata, '--metadata'),
            baseUrl: opts.baseUrl ?? null,
          }),
        );
        emit(opts.json, out, (o) => `connection ${o.id} (${o.provider}/${o.name}) created`);
      },
    );
  connections
    .command('discover')
    .description('list the deployments of a deployment-host connection and classify them (SPEC 4.6)')
    .argument('<connection_id>', 'connection id')
    .option('--apply', 'store mappable deployments and prune mappings whose deployment is gone')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { apply?: boolean; json?: boolean }) =>
      discover({ connectionId: id }, opts),
    );

  program
    .command('users')
    .description('console users')
    .command('add')
    .description('register a user and give it a role in a workspace')
    .requiredOption('--email <email>', 'e-mail address')
    .requiredOption('--workspace <workspace_id>', 'workspace id')
    .option('--role <role>', 'manager or member', 'member')
    .option('--json', 'print JSON')
    .action(async (opts: { email: string; workspace: string; role: string; json?: boolean }) => {
      if (opts.role !== 'manager' && opts.role !== 'member')
        throw new CliError('--role must be manager or member');
      const role = opts.role;
      const out = await withControlPlane((cp) =>
        cp.addUser(cli, opts.email, { workspaceId: opts.workspace, role }),
      );
      emit(
        opts.json,
        { ...out, workspace_id: opts.workspace, role },
        (o) => `user ${o.user_id} (${o.email}) is ${o.role} of ${o.workspace_id}`,
      );
    });

  program
    .command('sessions')
    .description('console sessions')
    .command('issue')
    .description('mint a session bearer token for a user (for operators and tests)')
    .requiredOption('--email <email>', 'e-mail address of a registered user')
    .option('--ttl <duration>', 'lifetime, e.g. 30m, 12h, 7d', '12h')
    .option('--json', 'print JSON')
    .action(async (opts: { email: string; ttl: string; json?: boolean }) => {
      const ttl = parseTtl(opts.ttl);
      const out = await withControlPlane((cp) => cp.issueSession(cli, opts.email, ttl));
      emit(
        opts.json,
        { token: out.token, expires_at: out.expires_at },
        (o) => `session token ${o.token} (expires ${o.expires_at})`,
      );
    });
};
