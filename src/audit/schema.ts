import { z } from 'zod';
import {
  ARCHIVE_FORMAT,
  type BatchArchive,
  type BatchHead,
  HEAD_FORMAT,
  KEYS_FORMAT,
  MANIFEST_FORMAT,
  type PublishedKeys,
  type SignedManifest,
} from './model.js';

/**
 * The evidence files' structure (model.ts) as the offline verifier reads them. Strict objects:
 * every byte of an archive is evidence, so nothing unexplained in it.
 */

const hexBytes = (bytes: number) =>
  z.string().regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`), `must be ${bytes * 2} lowercase hex digits`);
const hash = hexBytes(32);
const signature = hexBytes(64);
const count = z.int().min(0);
const timestamp = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'must be an ISO 8601 UTC time with milliseconds');
const base64 = z
  .string()
  .refine((s) => Buffer.from(s, 'base64').toString('base64') === s, 'must be canonical base64');

export const headSchema: z.ZodType<BatchHead> = z.strictObject({
  format: z.literal(HEAD_FORMAT),
  tenant_id: z.string().min(1),
  batch_no: z.int().min(1),
  first_index: count,
  tree_size: count,
  root: hash,
  previous_root: hash.nullable(),
  from: timestamp,
  to: timestamp,
  key_id: z.string().min(1),
});

export const archiveSchema: z.ZodType<BatchArchive> = z.strictObject({
  format: z.literal(ARCHIVE_FORMAT),
  head: headSchema,
  signature,
  frontier: z.array(hash),
  consistency: z.array(hash),
  events: z.array(
    z.strictObject({
      index: count,
      event_id: z.string(),
      received_at: timestamp,
      bytes: base64,
      leaf: hash,
      proof: z.array(hash),
    }),
  ),
});

export const signedManifestSchema: z.ZodType<SignedManifest> = z.strictObject({
  manifest: z.strictObject({
    format: z.literal(MANIFEST_FORMAT),
    tenant_id: z.string().min(1),
    batch_no: z.int().min(1),
    head: headSchema,
    head_signature: signature,
    archive: z.strictObject({ key: z.string().min(1), sha256: hash, bytes: count }),
    previous_manifest_sha256: hash.nullable(),
    key_id: z.string().min(1),
  }),
  signature,
});

export const keysSchema: z.ZodType<PublishedKeys> = z.strictObject({
  format: z.literal(KEYS_FORMAT),
  keys: z.array(
    z.strictObject({
      key_id: z.string().min(1),
      algorithm: z.literal('ed25519'),
      public_key: hash,
      created_at: z.string(),
      retired_at: z.string().nullable(),
    }),
  ),
});
