import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { idFromNames } from '../../lib/ids.js';
import type { CredentialRef, DeploymentHostSubject, DiscoveryStore } from '../../providers/azure/discover.js';
import type { DiscoveryCounts } from '../../providers/azure/discovery.js';
import type { Decider } from '../decider.js';
import type { ConnectionDirectory, ProjectDirectory } from '../ports.js';
import { LANE_NAME } from '../registry/events.js';
import { type Actor, CONFLICT_RETRIES, type CommandDeps, checkName, runCommand } from '../service.js';
import { type Connection, connectionDecider, connectionStream, platformKeyStream } from './decider.js';
import { refuseInternalDestinations } from './destinations.js';
import { type ConnectionCommand, type ConnectionEvent, platformKeyAad } from './events.js';
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

/**
 * The lane a credential names (SPEC 4.7), checked against the registry when the lane exists there:
 * a lane served by another adapter would never use it. A lane not imported yet is accepted, as a
 * credential may come before the endpoints it serves (SPEC 5).
 */
const laneFor = async (
  endpoints: LiveEndpoints,
  lane: unknown,
  provider: string,
): Promise<{ lane?: string }> => {
  if (lane === undefined || lane === null) return {};
  if (typeof lane !== 'string' || !LANE_NAME.test(lane)) {
    throw new ServiceError(
      'bad_request',
      "lane must be a registry lane name: lower-case letters, digits, '-' and '_', at most 63 characters",
      { param: 'lane' },
    );
  }
  const adapter = await endpoints.laneAdapter(lane);
  if (adapter !== null && adapter !== provider) {
    throw new ServiceError('bad_request', `lane ${lane} is served by ${adapter}, not by ${provider}`, {
      param: 'lane',
    });
  }
  return { lane };
};

/** Which connections share one id (and so one stream): those of one scope, provider, lane and name. */
const connectionIdOf = (orgId: string, projectId: string, provider: string, name: string, lane?: string) =>
  lane === undefined
    ? idFromNames('conn', orgId, projectId, provider, name)
    : idFromNames('conn', orgId, projectId, provider, name, `lane:${lane}`);

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
        /** The registry lane the connection serves; absent: every lane of the provider (SPEC 4.7). */
        lane?: unknown;
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
      const lane = await laneFor(deps.endpoints, input.lane, provider);
      const connectionId = connectionIdOf(project.org_id, input.projectId, provider, n, lane.lane);
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
            // Only when named: an event without a lane keeps the shape (and meaning) it always had.
            ...lane,
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
        lane: lane.lane ?? null,
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

    /** The provider's platform key, or with `lane` that lane's own (SPEC 4.7), which it wins over. */
    async setPlatformKey(
      actor: Actor,
      input: { provider: unknown; secret: unknown; metadata?: unknown; baseUrl?: unknown; lane?: unknown },
    ) {
      const { provider, metadata, secret, baseUrl } = validated(input);
      const lane = await laneFor(deps.endpoints, input.lane, provider);
      await run(
        connectionDecider,
        platformKeyStream(provider, lane.lane),
        {
          type: 'SetPlatformKey',
          fields: {
            provider,
            ...lane,
            name: 'platform',
            base_url: baseUrl,
            metadata,
            secret_ciphertext: encryptSecret(deps.masterKey, secret, platformKeyAad(provider, lane.lane)),
          },
        },
        actor,
        null,
        // The last key set wins: the decision reads nothing of the stream.
        CONFLICT_RETRIES,
      );
      return { provider, lane: lane.lane ?? null, base_url: baseUrl, metadata };
    },

    /** Deployment discovery's view of a credential: the secret decrypted, and its adapter's live endpoints. */
    async deploymentHostSubject(ref: CredentialRef): Promise<DeploymentHostSubject> {
      const stored = await deps.credentials.storedCredential(ref);
      const endpoints = await deps.endpoints.liveEndpoints(stored.provider);
      return {
        provider: stored.provider,
        ...(stored.lane === null ? {} : { lane: stored.lane }),
        secret: decryptSecret(deps.masterKey, stored.secret_ciphertext, stored.aad),
        baseUrl: stored.base_url,
        metadata: stored.metadata,
        endpoints: stored.lane === null ? endpoints : endpoints.filter((e) => e.lane === stored.lane),
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
          platformKeyStream(stored.provider, stored.lane ?? undefined),
          {
            type: 'SetPlatformKey',
            fields: {
              provider: stored.provider,
              ...(stored.lane === null ? {} : { lane: stored.lane }),
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
