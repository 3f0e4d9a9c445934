import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { z } from 'zod';
import { canonicalJson } from '../lib/canonical-json.js';
import {
  appendLeaves,
  frontierRanges,
  leafHash,
  rootOfFrontier,
  verifyConsistency,
  verifyInclusion,
} from './merkle.js';
import type { BatchArchive, BatchHead, PublishedKeys, SignedManifest } from './model.js';
import { archiveSchema, keysSchema, signedManifestSchema } from './schema.js';
import { keyIdOf, verifyHead, verifyManifest } from './signing.js';

/**
 * The offline verifier behind `svc audit verify`: everything an auditor can check from the
 * archives, manifests and published keys alone. Pure: the CLI reads the files.
 */

/** `name` is the path as the user gave or found it, quoted back in the report. */
export interface EvidenceFile {
  name: string;
  bytes: Buffer;
}

/** Archives are the gzip files, manifests the JSON files. */
export interface VerifyInput {
  keys: PublishedKeys;
  archives: EvidenceFile[];
  manifests: EvidenceFile[];
}

export interface TenantSummary {
  tenant_id: string;
  batches: number;
  events: number;
  tree_size: number;
  root: string;
}

export type VerifyFailure = {
  ok: false;
  tenant_id: string | null;
  batch_no: number | null;
  event_index: number | null;
  event_id: string | null;
  file: string;
  reason: string;
};

export type VerifyReport = { ok: true; tenants: TenantSummary[] } | VerifyFailure;

/* Failures. */

type Where = Omit<VerifyFailure, 'ok' | 'reason'>;
/** `unreadable` failures come from parsing and win a tie on the same batch: they are the cause. */
type Failure = VerifyFailure & { unreadable: boolean };

const failure = (where: Where, reason: string, unreadable = false): Failure => ({
  ok: false,
  ...where,
  reason,
  unreadable,
});

const byNullFirst = <T extends string | number>(a: T | null, b: T | null) =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1;

/** The first failure in tenant, batch, event order; files nothing could be read from come first. */
const firstFailure = (failures: Failure[]): VerifyFailure | undefined => {
  const [first] = failures.toSorted(
    (a, b) =>
      byNullFirst(a.tenant_id, b.tenant_id) ||
      byNullFirst(a.batch_no, b.batch_no) ||
      Number(b.unreadable) - Number(a.unreadable) ||
      byNullFirst(a.event_index, b.event_index),
  );
  if (!first) return undefined;
  const { unreadable: _, ...report } = first;
  return report;
};

const describeIssue = (issue: z.core.$ZodIssue) => {
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  return `${path.replace(/^\./, '') || '(top level)'}: ${issue.message}`;
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/* Reading files. */

interface ReadArchive {
  file: EvidenceFile;
  value: BatchArchive;
}
interface ReadManifest {
  file: EvidenceFile;
  value: SignedManifest;
}

const asRecord = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
const stringOrNull = (v: unknown) => (typeof v === 'string' ? v : null);
const intOrNull = (v: unknown) => (Number.isSafeInteger(v) ? (v as number) : null);

/** Where a malformed file belongs, as far as its content still says. */
const placeOf = (file: EvidenceFile, claimed: unknown, issue?: z.core.$ZodIssue): Where => {
  const c = asRecord(claimed);
  const firstIndex = intOrNull(asRecord(c['head'])['first_index']);
  const [field, position] = issue?.path ?? [];
  const inEvent = field === 'events' && typeof position === 'number';
  const event = inEvent ? asRecord((c['events'] as unknown[])[position]) : {};
  return {
    tenant_id: stringOrNull(c['tenant_id'] ?? asRecord(c['head'])['tenant_id']),
    batch_no: intOrNull(c['batch_no'] ?? asRecord(c['head'])['batch_no']),
    event_index: inEvent && firstIndex !== null ? firstIndex + position : null,
    event_id: stringOrNull(event['event_id']),
    file: file.name,
  };
};

const readJson = <T>(
  file: EvidenceFile,
  what: string,
  text: () => string,
  schema: z.ZodType<T>,
  claimOf: (raw: unknown) => unknown,
): { value: T } | Failure => {
  const nowhere = placeOf(file, null);
  let raw: unknown;
  try {
    raw = JSON.parse(text());
  } catch (error) {
    return failure(nowhere, `${what} is not valid UTF-8 JSON: ${(error as Error).message}`, true);
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { value: parsed.data };
  const issue = parsed.error.issues[0]!;
  return failure(placeOf(file, claimOf(raw), issue), `${what} is malformed: ${describeIssue(issue)}`, true);
};

/** An archive of the largest batch the sealer makes (65,536 events) is far below this: a file that inflates past it is refused, not held in memory. */
export const MAX_ARCHIVE_JSON_BYTES = 512 * 1024 * 1024;

const readArchive = (file: EvidenceFile): ReadArchive | Failure => {
  let json: Buffer;
  try {
    json = gunzipSync(file.bytes, { maxOutputLength: MAX_ARCHIVE_JSON_BYTES });
  } catch (error) {
    return failure(placeOf(file, null), `archive is not valid gzip: ${(error as Error).message}`, true);
  }
  const read = readJson(
    file,
    'archive',
    () => utf8.decode(json),
    archiveSchema,
    (raw) => raw,
  );
  return 'value' in read ? { file, value: read.value } : read;
};

const readManifest = (file: EvidenceFile): ReadManifest | Failure => {
  const claimOf = (raw: unknown) => asRecord(raw)['manifest'];
  const read = readJson(file, 'manifest', () => utf8.decode(file.bytes), signedManifestSchema, claimOf);
  return 'value' in read ? { file, value: read.value } : read;
};

interface KnownKey {
  publicKey: string;
  /** A key signs nothing that arrived after it was retired. */
  retiredAt: string | null;
}

/** The keys file is evidence too: a key_id that is not its key's digest names nothing. */
const readKeys = (keys: PublishedKeys): Map<string, KnownKey> | Failure => {
  const where: Where = { tenant_id: null, batch_no: null, event_index: null, event_id: null, file: 'keys' };
  const parsed = keysSchema.safeParse(keys);
  if (!parsed.success) {
    return failure(where, `published keys are malformed: ${describeIssue(parsed.error.issues[0]!)}`, true);
  }
  const byId = new Map<string, KnownKey>();
  for (const key of parsed.data.keys) {
    if (keyIdOf(Buffer.from(key.public_key, 'hex')) !== key.key_id) {
      return failure(
        where,
        `published key ${key.key_id}: key_id is not the SHA-256 prefix of its public key`,
      );
    }
    byId.set(key.key_id, { publicKey: key.public_key, retiredAt: key.retired_at });
  }
  return byId;
};

/* One batch. */

/** The event's own event_id, or undefined when its bytes are not a JSON object that has one. */
const eventIdIn = (bytes: Buffer): string | undefined => {
  try {
    const event: unknown = JSON.parse(utf8.decode(bytes));
    const id =
      typeof event === 'object' && event !== null && !Array.isArray(event) && asRecord(event)['event_id'];
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
};

const fromHex = (h: string) => Buffer.from(h, 'hex');

const checkArchive = (
  { file, value: archive }: ReadArchive,
  keys: Map<string, KnownKey>,
  previous: BatchHead | undefined,
): Failure | undefined => {
  const { head } = archive;
  const { batch_no, first_index, tree_size } = head;
  const at = (reason: string, event_index: number | null = null, event_id: string | null = null) =>
    failure({ tenant_id: head.tenant_id, batch_no, event_index, event_id, file: file.name }, reason);

  const key = keys.get(head.key_id);
  if (key === undefined)
    return at(`unknown key id ${head.key_id}: the head is not signed by a published key`);
  if (!verifyHead(head, archive.signature, key.publicKey)) {
    return at(`head signature does not verify under key ${head.key_id}`);
  }
  // ISO 8601 UTC with milliseconds (the schema) orders as text.
  if (key.retiredAt !== null && head.to > key.retiredAt) {
    return at(
      `signed by key ${head.key_id}, retired at ${key.retiredAt}, for events that arrived after (${head.to})`,
    );
  }
  if (head.from > head.to) return at(`time range runs backwards: from ${head.from} is after to ${head.to}`);
  if (previous !== undefined && head.from < previous.to) {
    return at(`time range starts at ${head.from}, before batch ${previous.batch_no} ended (${previous.to})`);
  }
  if (tree_size <= first_index)
    return at(`batch holds no events: tree_size ${tree_size}, first_index ${first_index}`);
  if ((batch_no === 1) !== (first_index === 0)) {
    return at(
      batch_no === 1
        ? `batch 1 must start at index 0, not ${first_index}`
        : `batch ${batch_no} starts at index 0: only batch 1 does`,
    );
  }
  if ((head.previous_root === null) !== (first_index === 0)) {
    return at(`previous_root must be null exactly when first_index is 0 (first_index ${first_index})`);
  }
  if (previous !== undefined) {
    if (first_index !== previous.tree_size) {
      return at(
        `first_index ${first_index} does not follow batch ${previous.batch_no}'s tree_size ${previous.tree_size}`,
      );
    }
    if (head.previous_root !== previous.root) {
      return at(`previous_root does not match batch ${previous.batch_no}'s root`);
    }
  }

  const root = fromHex(head.root);
  const leaves: Buffer[] = [];
  for (const [position, event] of archive.events.entries()) {
    const index = first_index + position;
    const eventAt = (reason: string) => at(reason, index, event.event_id);
    if (index >= tree_size) {
      return eventAt(`archive holds more than the ${tree_size - first_index} events the head covers`);
    }
    if (event.index !== index) {
      return eventAt(`event indexes not contiguous: expected index ${index}, found ${event.index}`);
    }
    const bytes = Buffer.from(event.bytes, 'base64');
    const leaf = leafHash(bytes);
    if (leaf.toString('hex') !== event.leaf) return eventAt('leaf hash does not match the event bytes');
    const ownId = eventIdIn(bytes);
    if (ownId === undefined) return eventAt('event bytes are not a JSON object with a string event_id');
    if (ownId !== event.event_id) {
      return eventAt(`event_id does not match the event bytes, which say ${JSON.stringify(ownId)}`);
    }
    if (!verifyInclusion(index, tree_size, leaf, event.proof.map(fromHex), root)) {
      return eventAt('inclusion proof does not verify against head.root');
    }
    leaves.push(leaf);
  }
  const end = first_index + archive.events.length;
  if (end < tree_size) {
    return at(`archive ends at index ${end} but head.tree_size is ${tree_size}: events are missing`, end);
  }

  const expectedFrontier = frontierRanges(first_index).length;
  if (archive.frontier.length !== expectedFrontier) {
    return at(
      `frontier has ${archive.frontier.length} hashes, first_index ${first_index} needs ${expectedFrontier}`,
    );
  }
  const frontier = archive.frontier.map(fromHex);
  if (head.previous_root !== null && rootOfFrontier(frontier).toString('hex') !== head.previous_root) {
    return at('root of the frontier does not match previous_root');
  }
  if (rootOfFrontier(appendLeaves(frontier, first_index, leaves)).toString('hex') !== head.root) {
    return at('root recomputed from frontier and leaves does not match head.root');
  }
  if (head.previous_root === null) {
    if (archive.consistency.length > 0) return at('batch 1 carries a consistency proof; it must be empty');
  } else if (
    !verifyConsistency(
      first_index,
      tree_size,
      fromHex(head.previous_root),
      root,
      archive.consistency.map(fromHex),
    )
  ) {
    return at(`consistency proof from ${first_index} to ${tree_size} does not verify`);
  }
  return undefined;
};

const checkManifest = (
  { file, value: signed }: ReadManifest,
  archive: ReadArchive,
  previous: ReadManifest | undefined,
  keys: Map<string, KnownKey>,
): Failure | undefined => {
  const { manifest } = signed;
  const { batch_no } = manifest;
  const at = (reason: string) =>
    failure(
      { tenant_id: manifest.tenant_id, batch_no, event_index: null, event_id: null, file: file.name },
      reason,
    );

  const publicKey = keys.get(manifest.key_id)?.publicKey;
  if (publicKey === undefined)
    return at(`unknown key id ${manifest.key_id}: the manifest is not signed by a published key`);
  if (!verifyManifest(manifest, signed.signature, publicKey)) {
    return at(`manifest signature does not verify under key ${manifest.key_id}`);
  }
  if (canonicalJson(manifest.head) !== canonicalJson(archive.value.head)) {
    return at(`manifest head does not match the head of archive ${archive.file.name}`);
  }
  if (manifest.head_signature !== archive.value.signature) {
    return at(`manifest head_signature does not match the signature in archive ${archive.file.name}`);
  }
  if (sha256Hex(archive.file.bytes) !== manifest.archive.sha256) {
    return at(`archive sha256 does not match manifest (archive ${archive.file.name})`);
  }
  if (archive.file.bytes.length !== manifest.archive.bytes) {
    return at(`archive is ${archive.file.bytes.length} bytes, manifest says ${manifest.archive.bytes}`);
  }
  if (batch_no === 1) {
    if (manifest.previous_manifest_sha256 !== null) {
      return at('manifest chain broken: batch 1 must have previous_manifest_sha256 null');
    }
  } else if (manifest.previous_manifest_sha256 === null) {
    return at(`manifest chain broken: previous_manifest_sha256 is null in batch ${batch_no}`);
  } else if (previous !== undefined && sha256Hex(previous.file.bytes) !== manifest.previous_manifest_sha256) {
    return at(
      `manifest chain broken: previous_manifest_sha256 is not the SHA-256 of batch ${batch_no - 1}'s manifest ${previous.file.name}`,
    );
  }
  return undefined;
};

/* One tenant. */

interface TenantEvidence {
  archives: Map<number, ReadArchive[]>;
  manifests: Map<number, ReadManifest[]>;
}

const checkTenant = (
  tenant_id: string,
  { archives, manifests }: TenantEvidence,
  keys: Map<string, KnownKey>,
): Failure | TenantSummary => {
  const manifestsGiven = manifests.size > 0;
  const batchNos = [...new Set([...archives.keys(), ...manifests.keys()])].sort((a, b) => a - b);
  let previous: { no: number; archive: ReadArchive; manifest: ReadManifest | undefined } | undefined;
  let events = 0;
  for (const no of batchNos) {
    const [archive, secondArchive] = archives.get(no) ?? [];
    const [manifest, secondManifest] = manifests.get(no) ?? [];
    const at = (file: EvidenceFile, reason: string) =>
      failure({ tenant_id, batch_no: no, event_index: null, event_id: null, file: file.name }, reason);
    const anyFile = (archive ?? manifest)!.file;

    if (previous !== undefined && no !== previous.no + 1) {
      return at(anyFile, `batch numbers not contiguous: ${no} follows ${previous.no}`);
    }
    if (secondArchive)
      return at(secondArchive.file, `batch ${no} appears twice (also ${archive!.file.name})`);
    if (secondManifest) {
      return at(
        secondManifest.file,
        `the manifest of batch ${no} appears twice (also ${manifest!.file.name})`,
      );
    }
    if (!archive) return at(anyFile, `manifest of batch ${no} has no archive`);
    // Read again, whole, one batch at a time: a tenant's evidence need not fit in memory at once.
    const full = readArchive(archive.file) as ReadArchive;
    const broken = checkArchive(full, keys, previous?.archive.value.head);
    if (broken) return broken;
    if (manifestsGiven) {
      if (!manifest) return at(archive.file, `archive of batch ${no} has no manifest`);
      const brokenManifest = checkManifest(manifest, full, previous?.manifest, keys);
      if (brokenManifest) return brokenManifest;
    }
    events += full.value.events.length;
    previous = { no, archive, manifest };
  }
  const last = previous!.archive.value.head;
  return { tenant_id, batches: batchNos.length, events, tree_size: last.tree_size, root: last.root };
};

const tenantOf = (evidence: Map<string, TenantEvidence>, tenantId: string): TenantEvidence => {
  let tenant = evidence.get(tenantId);
  if (!tenant) {
    tenant = { archives: new Map(), manifests: new Map() };
    evidence.set(tenantId, tenant);
  }
  return tenant;
};

const push = <T>(map: Map<number, T[]>, key: number, value: T) => {
  map.set(key, [...(map.get(key) ?? []), value]);
};

/**
 * Checks every archive, manifest and chain link the input holds and reports the first failure in
 * tenant, batch and event order (files that cannot be read at all first), or a summary per tenant.
 */
export const verifyEvidence = (input: VerifyInput): VerifyReport => {
  const keys = readKeys(input.keys);
  if (!(keys instanceof Map)) return firstFailure([keys])!;
  if (input.archives.length === 0) {
    return firstFailure([
      failure(
        { tenant_id: null, batch_no: null, event_index: null, event_id: null, file: '' },
        'no archives to verify',
      ),
    ])!;
  }

  const failures: Failure[] = [];
  const evidence = new Map<string, TenantEvidence>();
  for (const file of input.archives) {
    const read = readArchive(file);
    if ('reason' in read) failures.push(read);
    else {
      // Only the head is kept here; checkTenant reads the events again when it comes to the batch.
      const head: ReadArchive = { file, value: { ...read.value, events: [] } };
      push(tenantOf(evidence, read.value.head.tenant_id).archives, read.value.head.batch_no, head);
    }
  }
  for (const file of input.manifests) {
    const read = readManifest(file);
    if ('reason' in read) failures.push(read);
    else
      push(tenantOf(evidence, read.value.manifest.tenant_id).manifests, read.value.manifest.batch_no, read);
  }

  const tenants: TenantSummary[] = [];
  for (const tenantId of [...evidence.keys()].sort()) {
    const checked = checkTenant(tenantId, evidence.get(tenantId)!, keys);
    if ('reason' in checked) failures.push(checked);
    else tenants.push(checked);
  }
  return firstFailure(failures) ?? { ok: true, tenants };
};
