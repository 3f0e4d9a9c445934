import type { CredentialRef } from '../../providers/azure/discover.js';
import type { RegistryFact } from '../../providers/azure/discovery.js';

/** A stored credential with its ciphertext, for the operations that must decrypt it (discovery). */
export interface StoredCredential {
  provider: string;
  base_url: string | null;
  metadata: Record<string, unknown>;
  secret_ciphertext: string;
  /** Null for a platform key. */
  workspace_id: string | null;
  /** The lane the credential serves; null: every lane of its provider (SPEC 4.7). */
  lane: string | null;
  /** The associated data the ciphertext is bound to: the connection id, or `platformKeyAad`. */
  aad: string;
}

/** The control-plane read model's credentials: a live connection or a platform key, or a 404. */
export interface StoredCredentials {
  storedCredential(ref: CredentialRef): Promise<StoredCredential>;
}

/** The registry read model's enabled, live endpoints of one adapter (SPEC 4.6 deployment discovery). */
export interface LiveEndpoints {
  liveEndpoints(adapter: string): Promise<RegistryFact[]>;
  /** The adapter a registry lane is served by, or null while no endpoint of the lane exists. */
  laneAdapter(lane: string): Promise<string | null>;
}
