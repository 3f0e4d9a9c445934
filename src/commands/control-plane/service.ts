import type { EventStore } from '../../events/event-store.js';
import type { Pool } from '../../events/postgres/pool.js';
import { decryptSecret, encryptSecret, hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { idFromNames, newId, newSecret } from '../../lib/ids.js';
import type { CredentialRef, DeploymentHostSubject, DiscoveryStore } from '../../providers/azure/discover.js';
import type { DiscoveryCounts } from '../../providers/azure/discovery.js';
import { apiKeyDecider, apiKeyStream } from '../api-key/decider.js';
import {
  type Connection,
  connectionDecider,
  connectionStream,
  platformKeyStream,
} from '../connections/decider.js';
import type { ConnectionCommand, ConnectionEvent } from '../connections/events.js';
import { validateConnection } from '../connections/validation.js';
import type { CommandContext, Decider, DomainEvent } from '../decider.js';
import { handleCommand } from '../handler.js';
import { organizationDecider, organizationStream } from '../organization/decider.js';
import { projectDecider, projectStream } from '../project/decider.js';
import type { SpendCapLevel } from '../spend-cap/decider.js';
import { traceIngestKeyDecider, traceIngestKeyStream } from '../trace-ingest-key/decider.js';
import { normalizeEmail, userDecider, userStream } from '../user/decider.js';
import { workspaceDecider, workspaceStream } from '../workspace/decider.js';
import type { WorkspaceRole } from '../workspace/events.js';
import { ControlPlaneReads } from './reads.js';

/** Visible prefixes of the secrets the control plane mints. */
export const SECRET_PREFIX = { apiKey: 'svc_sk_', traceIngestKey: 'svc_ti_', session: 'svc_sess_' } as const;
const VISIBLE = 12;

export interface Actor {
  /** `admin`, `user:<id>`, `cli` or `grpc:<service>`: recorded as the events' actor. */
  id: string;
}

const NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,99}$/u;
const checkName = (name: unknown, param = 'name'): string => {
  if (typeof name !== 'string' || !NAME.test(name.trim())) {
    throw new ServiceError(
      'bad_request',
      `${param} must be 1 to 100 letters, digits, spaces, dots, dashes or underscores`,
      { param },
    );
  }
  return name.trim();
};

/**
 * The connection decider with discovery's counts on every event it decides: the audit relay
 * publishes such an event as connection.discovery_applied, with the counts only.
 */
const recordingDiscovery = (
  counts: DiscoveryCounts,
): Decider<ConnectionCommand, ConnectionEvent, Connection> => ({
  ...connectionDecider,
  decide: (cmd, s) =>
    connectionDecider.decide(cmd, s).map((e) => {
      // Freshly decided events: extending them in place touches nothing the caller still holds.
      Object.assign(e.data, { discovery: { ...counts } });
      return e;
    }),
});

interface StoredCredential {
  provider: string;
  base_url: string | null;
  metadata: Record<string, unknown>;
  secret_ciphertext: string;
  workspace_id: string | null;
}

/**
 * The control plane's write side: each method validates, mints ids and secrets, encrypts provider
 * credentials before deciding, runs the aggregate's decider, and waits until the read model shows
 * the change (read-your-writes for the HTTP caller).
 */
export class ControlPlane implements DiscoveryStore {
  readonly reads: ControlPlaneReads;

  constructor(
    private readonly store: EventStore,
    private readonly pool: Pool,
    private readonly masterKey: Buffer,
    /** Resolves once the control-plane read model includes `position`. */
    private readonly readYourWrites: (position: number) => Promise<void>,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.reads = new ControlPlaneReads(pool);
  }

  private context(actor: Actor, tenantId?: string, commandId?: string): CommandContext {
    return {
      commandId: commandId ?? newId('cmd'),
      actor: actor.id,
      now: this.clock().toISOString(),
      ...(tenantId ? { tenantId } : {}),
    };
  }

  private async run<C, E extends DomainEvent, S>(
    decider: Decider<C, E, S>,
    stream: string,
    command: C,
    ctx: CommandContext,
  ) {
    const result = await handleCommand(this.store, decider, stream, command, ctx);
    if (result.position > 0) await this.readYourWrites(result.position);
    return result;
  }

  async createWorkspace(actor: Actor, name: unknown, options: { ifMissing?: boolean } = {}) {
    const n = checkName(name);
    const workspaceId = idFromNames('ws', n);
    const existing = await this.reads.workspace(workspaceId);
    if (existing && options.ifMissing) return { workspace_id: workspaceId, created: false };
    await this.run(
      workspaceDecider,
      workspaceStream(workspaceId),
      { type: 'CreateWorkspace', workspaceId, name: n },
      this.context(actor, workspaceId),
    );
    return { workspace_id: workspaceId, created: true };
  }

  async createOrganization(
    actor: Actor,
    workspaceId: string,
    name: unknown,
    options: { ifMissing?: boolean } = {},
  ) {
    const n = checkName(name);
    if (!(await this.reads.workspace(workspaceId)))
      throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
    const orgId = idFromNames('org', workspaceId, n);
    if (options.ifMissing && (await this.reads.organization(orgId))) return { org_id: orgId, created: false };
    await this.run(
      organizationDecider,
      organizationStream(orgId),
      { type: 'CreateOrganization', orgId, workspaceId, name: n },
      this.context(actor, workspaceId),
    );
    return { org_id: orgId, created: true };
  }

  async setProviderDisallowList(actor: Actor, orgId: string, providers: string[]) {
    const org = await this.reads.requireOrganization(orgId);
    await this.run(
      organizationDecider,
      organizationStream(orgId),
      { type: 'SetProviderDisallowList', providers },
      this.context(actor, org.workspace_id),
    );
  }

  async setTracing(
    actor: Actor,
    target: { kind: 'org' | 'project' | 'api_key'; id: string },
    enabled: boolean,
  ) {
    if (target.kind === 'org') {
      const org = await this.reads.requireOrganization(target.id);
      await this.run(
        organizationDecider,
        organizationStream(target.id),
        { type: 'SetOrganizationTracing', enabled },
        this.context(actor, org.workspace_id),
      );
    } else if (target.kind === 'project') {
      const project = await this.reads.requireProject(target.id);
      await this.run(
        projectDecider,
        projectStream(target.id),
        { type: 'SetProjectTracing', enabled },
        this.context(actor, project.workspace_id),
      );
    } else {
      const key = await this.reads.requireApiKey(target.id);
      await this.run(
        apiKeyDecider,
        apiKeyStream(target.id),
        { type: 'SetApiKeyTracing', enabled },
        this.context(actor, key.workspace_id),
      );
    }
  }

  /**
   * Sets or clears the monthly USD cap of an organization, project or API key (issue 13 item 5).
   * The event lands on the capped aggregate's own stream; the gateway's spend-cap cache reads the
   * projection. Answers the cap in force afterwards (null once cleared).
   */
  async setSpendCap(
    actor: Actor,
    target: { level: SpendCapLevel; id: string },
    change: { monthlyUsd: unknown } | 'clear',
  ) {
    if (change !== 'clear' && typeof change.monthlyUsd !== 'string')
      throw new ServiceError('bad_request', 'monthly_usd must be a decimal string such as "250.00"', {
        param: 'monthly_usd',
      });
    const level = target.level;
    const owner =
      level === 'org'
        ? await this.reads.requireOrganization(target.id)
        : level === 'project'
          ? await this.reads.requireProject(target.id)
          : await this.reads.requireApiKey(target.id);
    const command =
      change === 'clear'
        ? ({ type: 'ClearSpendCap', level } as const)
        : ({
            type: 'SetSpendCap',
            level,
            orgId: owner.org_id,
            workspaceId: owner.workspace_id,
            monthlyUsd: change.monthlyUsd as string,
          } as const);
    const ctx = this.context(actor, owner.workspace_id);
    if (level === 'org') await this.run(organizationDecider, organizationStream(target.id), command, ctx);
    else if (level === 'project') await this.run(projectDecider, projectStream(target.id), command, ctx);
    else await this.run(apiKeyDecider, apiKeyStream(target.id), command, ctx);
    return this.reads.spendCap(level, target.id);
  }

  async createProject(actor: Actor, orgId: string, name: unknown, options: { ifMissing?: boolean } = {}) {
    const n = checkName(name);
    const org = await this.reads.requireOrganization(orgId, 'org_id');
    const projectId = idFromNames('prj', orgId, n);
    if (options.ifMissing && (await this.reads.project(projectId)))
      return { project_id: projectId, created: false };
    await this.run(
      projectDecider,
      projectStream(projectId),
      { type: 'CreateProject', projectId, orgId, workspaceId: org.workspace_id, name: n },
      this.context(actor, org.workspace_id),
    );
    return { project_id: projectId, created: true };
  }

  async addUser(actor: Actor, email: unknown, membership?: { workspaceId: string; role: WorkspaceRole }) {
    if (typeof email !== 'string')
      throw new ServiceError('bad_request', 'email is required', { param: 'email' });
    const normalized = normalizeEmail(email);
    const userId = idFromNames('usr', normalized);
    await this.run(
      userDecider,
      userStream(userId),
      { type: 'RegisterUser', userId, email: normalized },
      this.context(actor),
    );
    if (membership) {
      if (!(await this.reads.workspace(membership.workspaceId)))
        throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
      await this.run(
        workspaceDecider,
        workspaceStream(membership.workspaceId),
        { type: 'AddMember', userId, email: normalized, role: membership.role },
        this.context(actor, membership.workspaceId),
      );
    }
    return { user_id: userId, email: normalized };
  }

  async issueSession(actor: Actor, email: string, ttlMs: number) {
    const user = await this.reads.userByEmail(normalizeEmail(email));
    if (!user)
      throw new ServiceError('not_found', `no user with e-mail ${normalizeEmail(email)}`, { param: 'email' });
    const token = newSecret(SECRET_PREFIX.session);
    const sessionId = newId('ses');
    const expiresAt = new Date(this.clock().getTime() + ttlMs).toISOString();
    await this.run(
      userDecider,
      userStream(user.user_id),
      { type: 'IssueSession', sessionId, tokenHash: hashSecret(token), expiresAt },
      this.context(actor),
    );
    return { session_id: sessionId, token, expires_at: expiresAt, user_id: user.user_id };
  }

  async createApiKey(actor: Actor, projectId: string, name: unknown) {
    const n = checkName(name);
    const project = await this.reads.requireProject(projectId, 'project_id');
    const apiKeyId = newId('key');
    const secret = newSecret(SECRET_PREFIX.apiKey);
    const prefix = secret.slice(0, VISIBLE);
    await this.run(
      apiKeyDecider,
      apiKeyStream(apiKeyId),
      {
        type: 'CreateApiKey',
        apiKeyId,
        projectId,
        orgId: project.org_id,
        workspaceId: project.workspace_id,
        name: n,
        prefix,
        secretHash: hashSecret(secret),
      },
      this.context(actor, project.workspace_id),
    );
    return {
      api_key_id: apiKeyId,
      api_key: secret,
      prefix,
      project_id: projectId,
      org_id: project.org_id,
      workspace_id: project.workspace_id,
      name: n,
    };
  }

  async revokeApiKey(actor: Actor, apiKeyId: string) {
    const key = await this.reads.requireApiKey(apiKeyId);
    await this.run(
      apiKeyDecider,
      apiKeyStream(apiKeyId),
      { type: 'RevokeApiKey', now: this.clock().toISOString() },
      this.context(actor, key.workspace_id),
    );
  }

  async createConnection(
    actor: Actor,
    input: {
      projectId: string;
      provider: unknown;
      name: unknown;
      secret: unknown;
      metadata?: unknown;
      baseUrl?: unknown;
    },
  ) {
    const n = checkName(input.name);
    const project = await this.reads.requireProject(input.projectId, 'project_id');
    const checked = validateConnection({
      provider: input.provider,
      secret: input.secret,
      metadata: input.metadata,
      baseUrl: input.baseUrl,
    });
    if (!checked.ok) throw new ServiceError('bad_request', checked.message, { param: checked.field });
    const { provider, metadata, secret, baseUrl } = checked.value;
    const connectionId = idFromNames('conn', project.org_id, input.projectId, provider, n);
    await this.run(
      connectionDecider,
      connectionStream(connectionId),
      {
        type: 'CreateConnection',
        connectionId,
        workspaceId: project.workspace_id,
        orgId: project.org_id,
        projectId: input.projectId,
        fields: {
          provider,
          name: n,
          base_url: baseUrl,
          metadata,
          // Bound to its record: a ciphertext copied onto another connection does not decrypt.
          secret_ciphertext: encryptSecret(this.masterKey, secret, connectionId),
        },
      },
      this.context(actor, project.workspace_id),
    );
    return {
      id: connectionId,
      provider,
      name: n,
      project_id: input.projectId,
      org_id: project.org_id,
      base_url: baseUrl,
      metadata,
    };
  }

  async deleteConnection(actor: Actor, connectionId: string) {
    const conn = await this.reads.requireConnection(connectionId);
    await this.run(
      connectionDecider,
      connectionStream(connectionId),
      { type: 'DeleteConnection', now: this.clock().toISOString() },
      this.context(actor, conn.workspace_id),
    );
  }

  async setPlatformKey(
    actor: Actor,
    input: { provider: unknown; secret: unknown; metadata?: unknown; baseUrl?: unknown },
  ) {
    const checked = validateConnection(input);
    if (!checked.ok) throw new ServiceError('bad_request', checked.message, { param: checked.field });
    const { provider, metadata, secret, baseUrl } = checked.value;
    await this.run(
      connectionDecider,
      platformKeyStream(provider),
      {
        type: 'SetPlatformKey',
        fields: {
          provider,
          name: 'platform',
          base_url: baseUrl,
          metadata,
          secret_ciphertext: encryptSecret(this.masterKey, secret, `platform:${provider}`),
        },
      },
      this.context(actor),
    );
    return { provider, base_url: baseUrl, metadata };
  }

  /** A credential with its ciphertext, for the operations that must decrypt it (discovery). */
  private async storedCredential(ref: CredentialRef): Promise<StoredCredential & { aad: string }> {
    if ('connectionId' in ref) {
      const { rows } = await this.pool.query<StoredCredential>(
        `SELECT provider, base_url, metadata, secret_ciphertext, workspace_id FROM rm_connections
         WHERE connection_id = $1 AND deleted_at IS NULL`,
        [ref.connectionId],
      );
      if (!rows[0]) throw new ServiceError('not_found', 'provider key not found');
      return { ...rows[0], aad: ref.connectionId };
    }
    const { rows } = await this.pool.query<StoredCredential>(
      `SELECT provider, base_url, metadata, secret_ciphertext, NULL AS workspace_id FROM rm_platform_keys
       WHERE provider = $1`,
      [ref.platform],
    );
    if (!rows[0]) throw new ServiceError('not_found', `no platform key is set for ${ref.platform}`);
    return { ...rows[0], aad: `platform:${ref.platform}` };
  }

  /** Deployment discovery's view of a credential: the secret decrypted, and its adapter's live endpoints. */
  async deploymentHostSubject(ref: CredentialRef): Promise<DeploymentHostSubject> {
    const stored = await this.storedCredential(ref);
    const endpoints = await this.pool.query<DeploymentHostSubject['endpoints'][number]>(
      `SELECT lane, model, provider_model_id, base_url FROM rm_registry_endpoints
       WHERE adapter = $1 AND enabled AND NOT retired ORDER BY lane, model`,
      [stored.provider],
    );
    return {
      provider: stored.provider,
      secret: decryptSecret(this.masterKey, stored.secret_ciphertext, stored.aad),
      baseUrl: stored.base_url,
      metadata: stored.metadata,
      endpoints: endpoints.rows,
    };
  }

  /**
   * Stores the deployments map discovery computed, validated like any connection write. A platform
   * key is re-set with its own ciphertext because only PlatformKeySet reaches its read model.
   */
  async applyDiscovery(
    actor: Actor,
    ref: CredentialRef,
    deployments: Record<string, string>,
    counts: DiscoveryCounts,
  ) {
    const stored = await this.storedCredential(ref);
    const checked = validateConnection({
      provider: stored.provider,
      secret: decryptSecret(this.masterKey, stored.secret_ciphertext, stored.aad),
      metadata: { ...stored.metadata, deployments },
      baseUrl: stored.base_url,
    });
    if (!checked.ok) throw new ServiceError('bad_request', checked.message, { param: checked.field });
    const { metadata } = checked.value;
    if ('connectionId' in ref) {
      await this.run(
        recordingDiscovery(counts),
        connectionStream(ref.connectionId),
        { type: 'UpdateConnectionMetadata', metadata },
        this.context(actor, stored.workspace_id ?? undefined),
      );
    } else {
      await this.run(
        recordingDiscovery(counts),
        platformKeyStream(stored.provider),
        {
          type: 'SetPlatformKey',
          fields: {
            provider: stored.provider,
            name: 'platform',
            base_url: stored.base_url,
            metadata,
            secret_ciphertext: stored.secret_ciphertext,
          },
        },
        this.context(actor),
      );
    }
    return { metadata };
  }

  async createTraceIngestKey(actor: Actor, projectId: string, name: unknown) {
    const n = checkName(name);
    const project = await this.reads.requireProject(projectId, 'project_id');
    const id = newId('tik');
    const secret = newSecret(SECRET_PREFIX.traceIngestKey);
    await this.run(
      traceIngestKeyDecider,
      traceIngestKeyStream(id),
      {
        type: 'CreateTraceIngestKey',
        id,
        projectId,
        orgId: project.org_id,
        workspaceId: project.workspace_id,
        name: n,
        prefix: secret.slice(0, VISIBLE),
        secretHash: hashSecret(secret),
      },
      this.context(actor, project.workspace_id),
    );
    return { id, secret, prefix: secret.slice(0, VISIBLE), project_id: projectId, name: n };
  }

  async rotateTraceIngestKey(actor: Actor, id: string) {
    const key = await this.reads.requireTraceIngestKey(id);
    const secret = newSecret(SECRET_PREFIX.traceIngestKey);
    await this.run(
      traceIngestKeyDecider,
      traceIngestKeyStream(id),
      {
        type: 'RotateTraceIngestKey',
        prefix: secret.slice(0, VISIBLE),
        secretHash: hashSecret(secret),
        now: this.clock().toISOString(),
      },
      this.context(actor, key.workspace_id),
    );
    return { id, secret, prefix: secret.slice(0, VISIBLE) };
  }

  async revokeTraceIngestKey(actor: Actor, id: string) {
    const key = await this.reads.requireTraceIngestKey(id);
    await this.run(
      traceIngestKeyDecider,
      traceIngestKeyStream(id),
      { type: 'RevokeTraceIngestKey', now: this.clock().toISOString() },
      this.context(actor, key.workspace_id),
    );
  }

  async defineDimension(actor: Actor, workspaceId: string, key: unknown, description: unknown) {
    if (typeof key !== 'string') throw new ServiceError('bad_request', 'key is required', { param: 'key' });
    if (description !== undefined && typeof description !== 'string')
      throw new ServiceError('bad_request', 'description must be a string', { param: 'description' });
    if (!(await this.reads.workspace(workspaceId)))
      throw new ServiceError('not_found', 'workspace not found');
    const definitionId = newId('dim');
    await this.run(
      workspaceDecider,
      workspaceStream(workspaceId),
      { type: 'DefineDimension', definitionId, key, description: description ?? '' },
      this.context(actor, workspaceId),
    );
    return { definition_id: definitionId, workspace_id: workspaceId, key, description: description ?? '' };
  }

  async archiveDimension(actor: Actor, workspaceId: string, definitionId: string) {
    await this.run(
      workspaceDecider,
      workspaceStream(workspaceId),
      { type: 'ArchiveDimension', definitionId, now: this.clock().toISOString() },
      this.context(actor, workspaceId),
    );
  }

  async assignDimension(actor: Actor, apiKeyId: string, definitionId: unknown, value: unknown) {
    if (typeof definitionId !== 'string')
      throw new ServiceError('bad_request', 'definition_id is required', { param: 'definition_id' });
    if (typeof value !== 'string')
      throw new ServiceError('bad_request', 'value must be a string', { param: 'value' });
    const key = await this.reads.requireApiKey(apiKeyId);
    const def = await this.reads.dimension(definitionId);
    const definitionActive =
      def !== null && def.workspace_id === key.workspace_id && def.archived_at === null;
    await this.run(
      apiKeyDecider,
      apiKeyStream(apiKeyId),
      { type: 'AssignDimension', definitionId, value, now: this.clock().toISOString(), definitionActive },
      this.context(actor, key.workspace_id),
    );
  }

  async endDimensionAssignment(actor: Actor, apiKeyId: string, definitionId: string, endAt?: string) {
    const key = await this.reads.requireApiKey(apiKeyId);
    const at = endAt ?? this.clock().toISOString();
    if (Number.isNaN(Date.parse(at)))
      throw new ServiceError('bad_request', 'end_at must be an RFC 3339 timestamp', { param: 'end_at' });
    await this.run(
      apiKeyDecider,
      apiKeyStream(apiKeyId),
      { type: 'EndDimensionAssignment', definitionId, endAt: new Date(at).toISOString() },
      this.context(actor, key.workspace_id),
    );
  }
}
