import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { idFromNames } from '../../lib/ids.js';
import type { CredentialRef, DeploymentHostSubject, DiscoveryStore } from '../../providers/azure/discover.js';
import type { DiscoveryCounts } from '../../providers/azure/discovery.js';
import type { Decider } from '../decider.js';
import type { ConnectionDirectory, ProjectDirectory } from '../ports.js';
import { type Actor, CONFLICT_RETRIES, type CommandDeps, checkName, runCommand } from '../service.js';
import { type Connection, connectionDecider, connectionStream, platformKeyStream } from './decider.js';
import { refuseInternalDestinations } from './destinations.js';
import type { ConnectionCommand, ConnectionEvent } from './events.js';
import type { LiveEndpoints, StoredCredentials } from './ports.js';
import { validateConnection } from './validation.js';

export interface ConnectionDeps extends CommandDeps {
  /** AES-256-GCM key of provider secrets (ARCHITECTURE.md: a secret never enters an event in clear). */
  masterKey: Buffer;
  directory: ProjectDirectory & ConnectionDirectory;
  credentials: StoredCredentials;
  endpoints: LiveEndpoints;
  /** SVC_TENANT_PRIVATE_DESTINATIONS=allow: tenant connections may name internal hosts. */
  allowPrivateDestinations?: boolean;
}

/**
 * The connection decider with discovery's counts on every event it decides: the audit relay
 * publishes such an event as connection.discovery_applied, with the counts only (SPEC 6).
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

const validated = (input: Parameters<typeof validateConnection>[0]) => {
  const checked = validateConnection(input);
  if (!checked.ok) throw new ServiceError('bad_request', checked.message, { param: checked.field });
  return checked.value;
};

/**
 * Provider credentials (SPEC 5): tenant connections per project (BYOK) and the operator's platform
 * keys, validated and encrypted before they are decided; and deployment discovery's view of them
 * (SPEC 4.6), which is why this service is the DiscoveryStore.
 */
export const connectionCommands = (deps: ConnectionDeps) => {
  const run = (
    decider: Decider<ConnectionCommand, ConnectionEvent, Connection>,
    stream: string,
    command: ConnectionCommand,
    actor: Actor,
    tenantId?: string | null,
    retries = 0,
  ) => runCommand(deps, decider, stream, command, actor, tenantId, { retries });

  /** A tenant connection also names public hosts only, unless the operator allows otherwise. */
  const tenantValidated = (input: Parameters<typeof validateConnection>[0]) => {
    const checked = validated(input);
    if (deps.allowPrivateDestinations === true) return checked;
    const refused = refuseInternalDestinations(checked);
    if (!refused.ok) throw new ServiceError('bad_request', refused.message, { param: refused.field });
    return checked;
  };

  const commands = {
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
      const project = await deps.directory.requireProject(input.projectId, 'project_id');
      const { provider, metadata, secret, baseUrl } = tenantValidated({
        provider: input.provider,
        secret: input.secret,
        metadata: input.metadata,
        baseUrl: input.baseUrl,
      });
      const connectionId = idFromNames('conn', project.org_id, input.projectId, provider, n);
      await run(
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
            secret_ciphertext: encryptSecret(deps.masterKey, secret, connectionId),
          },
        },
        actor,
        project.workspace_id,
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
    },

    async deleteConnection(actor: Actor, connectionId: string) {
      const conn = await deps.directory.requireConnection(connectionId);
      await run(
        connectionDecider,
        connectionStream(connectionId),
        { type: 'DeleteConnection', now: deps.clock().toISOString() },
        actor,
        conn.workspace_id,
      );
    },

    async setPlatformKey(
      actor: Actor,
      input: { provider: unknown; secret: unknown; metadata?: unknown; baseUrl?: unknown },
    ) {
      const { provider, metadata, secret, baseUrl } = validated(input);
      await run(
        connectionDecider,
        platformKeyStream(provider),
        {
          type: 'SetPlatformKey',
          fields: {
            provider,
            name: 'platform',
            base_url: baseUrl,
            metadata,
            secret_ciphertext: encryptSecret(deps.masterKey, secret, `platform:${provider}`),
          },
        },
        actor,
        null,
        // The last key set wins: the decision reads nothing of the stream.
        CONFLICT_RETRIES,
      );
      return { provider, base_url: baseUrl, metadata };
    },

    /** Deployment discovery's view of a credential: the secret decrypted, and its adapter's live endpoints. */
    async deploymentHostSubject(ref: CredentialRef): Promise<DeploymentHostSubject> {
      const stored = await deps.credentials.storedCredential(ref);
      return {
        provider: stored.provider,
        secret: decryptSecret(deps.masterKey, stored.secret_ciphertext, stored.aad),
        baseUrl: stored.base_url,
        metadata: stored.metadata,
        endpoints: await deps.endpoints.liveEndpoints(stored.provider),
      };
    },

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
      const stored = await deps.credentials.storedCredential(ref);
      const { metadata } = validated({
        provider: stored.provider,
        secret: decryptSecret(deps.masterKey, stored.secret_ciphertext, stored.aad),
        metadata: { ...stored.metadata, deployments },
        baseUrl: stored.base_url,
      });
      if ('connectionId' in ref) {
        await run(
          recordingDiscovery(counts),
          connectionStream(ref.connectionId),
          { type: 'UpdateConnectionMetadata', metadata },
          actor,
          stored.workspace_id,
        );
      } else {
        await run(
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
          actor,
        );
      }
      return { metadata };
    },
  };
  return commands satisfies DiscoveryStore;
};

export type ConnectionCommands = ReturnType<typeof connectionCommands>;
