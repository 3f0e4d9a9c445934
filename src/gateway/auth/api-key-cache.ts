import type { ApiKeyEvent } from '../../commands/api-key/decider.js';
import type { EventStore, Subscription } from '../../events/event-store.js';
import { assertNever } from '../../lib/assert.js';
import { hashSecret } from '../../lib/crypto.js';

export interface ApiKeyIdentity {
  apiKeyId: string;
  projectId: string;
  orgId: string;
  workspaceId: string;
  name: string;
  prefix: string;
  tracing: boolean;
}

/**
 * The gateway's API-key verifier: an in-memory map keyed by the secret's SHA-256, built from the
 * `apikey` event streams and kept current by the event store's notifications. A revocation reaches
 * every process in well under a second, and a warm cache never reads the database per request.
 */
export class ApiKeyCache {
  private readonly byHash = new Map<string, ApiKeyIdentity>();
  private readonly hashById = new Map<string, string>();
  private subscription: Subscription | null = null;
  private starting: Promise<void> | null = null;

  constructor(private readonly store: EventStore) {}

  /** Starts following the key streams (once); resolves when the cache has caught up with the store. */
  start(options: { onError?: (err: unknown) => void; pollMs?: number } = {}): Promise<void> {
    this.starting ??= this.follow(options);
    return this.starting;
  }

  private async follow(options: { onError?: (err: unknown) => void; pollMs?: number }): Promise<void> {
    this.subscription = this.store.subscribe(
      0,
      async (batch) => {
        for (const e of batch)
          this.apply(e.streamId.slice('apikey-'.length), { type: e.type, data: e.data } as ApiKeyEvent);
      },
      { categories: ['apikey'], pollMs: options.pollMs ?? 1_000, batchSize: 2_000, onError: options.onError },
    );
    await this.subscription.caughtUp;
  }

  private apply(apiKeyId: string, e: ApiKeyEvent): void {
    switch (e.type) {
      case 'ApiKeyCreated':
        this.hashById.set(apiKeyId, e.data.secret_hash);
        this.byHash.set(e.data.secret_hash, {
          apiKeyId,
          projectId: e.data.project_id,
          orgId: e.data.org_id,
          workspaceId: e.data.workspace_id,
          name: e.data.name,
          prefix: e.data.prefix,
          tracing: false,
        });
        return;
      case 'ApiKeyRevoked': {
        const hash = this.hashById.get(apiKeyId);
        if (hash) this.byHash.delete(hash);
        this.hashById.delete(apiKeyId);
        return;
      }
      case 'ApiKeyTracingSet': {
        const hash = this.hashById.get(apiKeyId);
        const identity = hash ? this.byHash.get(hash) : undefined;
        if (identity) identity.tracing = e.data.enabled;
        return;
      }
      case 'DimensionAssigned':
      case 'DimensionAssignmentEnded':
      case 'SpendCapSet':
      case 'SpendCapCleared':
        return;
      default:
        assertNever(e);
    }
  }

  verify(secret: string): ApiKeyIdentity | null {
    return this.byHash.get(hashSecret(secret)) ?? null;
  }

  /** The identity of a key still in force, by its id (work the service does later for a key); null once revoked. */
  identity(apiKeyId: string): ApiKeyIdentity | null {
    const hash = this.hashById.get(apiKeyId);
    return hash === undefined ? null : (this.byHash.get(hash) ?? null);
  }

  get size(): number {
    return this.byHash.size;
  }

  async stop(): Promise<void> {
    await this.subscription?.close();
  }
}
