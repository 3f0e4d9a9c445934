/**
 * The audit evidence an auditor takes away and checks offline (SPEC 1.8, 6): per tenant, one
 * append-only log of audit events hashed as an RFC 9162 Merkle tree (SHA-256, leaf prefix 0x00,
 * node prefix 0x01), sealed into batches. A batch head is a signed tree head: the tree of all the
 * tenant's events up to `tree_size`, the root of the previous batch, the events' time range. A
 * manifest chains each head to the one before and names the batch's archive by digest.
 *
 * Encodings: hashes and public keys are lowercase hex, signatures lowercase hex (64 bytes), event
 * bytes base64. Everything signed or hashed is `canonicalJson` (src/lib/canonical-json.ts) as
 * UTF-8. Files: an archive is gzip(canonicalJson(BatchArchive)); a manifest file is
 * canonicalJson(SignedManifest); the key file is canonicalJson(PublishedKeys).
 */

export const HEAD_FORMAT = 'svc.audit.batch_head.v1';
export const ARCHIVE_FORMAT = 'svc.audit.archive.v1';
export const MANIFEST_FORMAT = 'svc.audit.manifest.v1';
export const KEYS_FORMAT = 'svc.audit.keys.v1';

/** Signed (ed25519 over canonicalJson(head)) by the key `key_id`. */
export interface BatchHead {
  format: typeof HEAD_FORMAT;
  tenant_id: string;
  /** 1, 2, 3, ... per tenant, no gaps. */
  batch_no: number;
  /** Leaf index of the batch's first event: the previous batch's tree_size (0 for batch 1). */
  first_index: number;
  /** Events in the tenant's log once this batch is sealed; the batch holds [first_index, tree_size). */
  tree_size: number;
  /** MTH of leaves [0, tree_size). */
  root: string;
  /** MTH of leaves [0, first_index): the previous batch's root; null for batch 1. */
  previous_root: string | null;
  /** Arrival time of the batch's first and last event (ISO 8601, UTC, milliseconds). */
  from: string;
  to: string;
  key_id: string;
}

export interface ArchiveEvent {
  /** Leaf index in the tenant's log. */
  index: number;
  event_id: string;
  received_at: string;
  /** The canonical event bytes exactly as received, base64. */
  bytes: string;
  /** SHA-256(0x00 || bytes), hex. */
  leaf: string;
  /** RFC 9162 inclusion proof of `index` in the tree of size head.tree_size, hex, bottom up. */
  proof: string[];
}

export interface BatchArchive {
  format: typeof ARCHIVE_FORMAT;
  head: BatchHead;
  signature: string;
  /**
   * MTH of each perfect subtree that makes up [0, first_index), left to right (largest first; one
   * per set bit of first_index). Folding it gives previous_root; appending the batch's leaves to it
   * gives root. Empty for batch 1.
   */
  frontier: string[];
  /** RFC 9162 consistency proof from first_index to tree_size; empty for batch 1. */
  consistency: string[];
  /** In index order, first_index .. tree_size - 1. */
  events: ArchiveEvent[];
}

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  tenant_id: string;
  batch_no: number;
  head: BatchHead;
  head_signature: string;
  /** The archive file: its object key relative to the tenant, SHA-256 and size of the gzip bytes. */
  archive: { key: string; sha256: string; bytes: number };
  /** SHA-256 of the previous manifest file's bytes; null for batch 1. */
  previous_manifest_sha256: string | null;
  key_id: string;
}

/** Signature over canonicalJson(manifest) by manifest.key_id. */
export interface SignedManifest {
  manifest: Manifest;
  signature: string;
}

export interface PublishedKey {
  key_id: string;
  algorithm: 'ed25519';
  /** 32 bytes, hex. */
  public_key: string;
  created_at: string;
  /** When it stopped signing; heads it signed before stay valid. */
  retired_at: string | null;
}

export interface PublishedKeys {
  format: typeof KEYS_FORMAT;
  keys: PublishedKey[];
}

/** Object keys relative to the tenant (the object store files them under the tenant id). */
const pad = (batchNo: number) => String(batchNo).padStart(12, '0');
export const archiveKey = (batchNo: number) => `audit/batches/${pad(batchNo)}.json.gz`;
export const manifestKey = (batchNo: number) => `audit/manifests/${pad(batchNo)}.json`;
