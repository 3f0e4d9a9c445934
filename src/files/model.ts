import { idTime, newId } from '../lib/ids.js';

/**
 * The files of the primary edge (SPEC 4.1 /v1/files) in the OpenAI wire shapes, and the rules that
 * need no I/O: ids, purposes, expiry.
 */

/** Purposes an upload may name (OpenAI's uploadable purposes). */
export const UPLOAD_PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'] as const;
export type Purpose = (typeof UPLOAD_PURPOSES)[number];
/** A list may also filter by OpenAI's output purposes; no file here has one, so they list nothing. */
export const LIST_PURPOSES: readonly string[] = [
  ...UPLOAD_PURPOSES,
  'assistants_output',
  'batch_output',
  'fine-tune-results',
];
export const isPurpose = (value: string): value is Purpose =>
  (UPLOAD_PURPOSES as readonly string[]).includes(value);

/** OpenAI's bounds on `expires_after[seconds]`: one hour to thirty days. */
export const EXPIRES_AFTER_MIN_SECONDS = 3_600;
export const EXPIRES_AFTER_MAX_SECONDS = 30 * 24 * 3_600;

/** The one who acts on files: an API key of one project of one organization. */
export interface FileScope {
  orgId: string;
  projectId: string;
  apiKeyId: string;
}

/** A stored file as its table row holds it. */
export interface StoredFile {
  id: string;
  orgId: string;
  projectId: string;
  purpose: Purpose;
  filename: string;
  contentType: string;
  bytes: number;
  blake3: string;
  objectKey: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** The OpenAI file object. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: Purpose;
  status: 'processed';
  expires_at: number | null;
  status_details: null;
}

export interface FileList {
  object: 'list';
  data: FileObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface FileDeleted {
  id: string;
  object: 'file';
  deleted: true;
}

const seconds = (d: Date): number => Math.floor(d.getTime() / 1_000);

export const fileObject = (f: StoredFile): FileObject => ({
  id: f.id,
  object: 'file',
  bytes: f.bytes,
  created_at: seconds(f.createdAt),
  filename: f.filename,
  purpose: f.purpose,
  status: 'processed',
  expires_at: f.expiresAt ? seconds(f.expiresAt) : null,
  status_details: null,
});

/**
 * A new file id: `file-`, the creation time in milliseconds (10 characters), 16 random ones. The
 * alphabet sorts like the time, so ids sort by creation time (the list's order and cursor).
 */
export const newFileId = (now: number): string => `file-${newId('f', now).slice('f_'.length)}`;

/** The creation time written in an id of `newFileId`, or null for anything else. */
export const fileIdTime = (id: string): Date | null => idTime(id, 'file-');

/** Where a file's bytes live, relative to its organization in the object store. */
export const objectKeyOf = (projectId: string, fileId: string): string => `files/${projectId}/${fileId}`;
