import { idTime, newId } from '../lib/ids.js';

/**
 * The vector stores of the primary edge (SPEC 4.1 /v1/vector_stores) in OpenAI's wire shapes, and
 * the rules that need no I/O: ids, status, expiry.
 */

/** The model a store embeds with when its creator names none. */
export const DEFAULT_EMBEDDING_MODEL = 'text-embedding-3-small';
/** OpenAI's `auto` chunking strategy. */
export const AUTO_CHUNKING: ChunkingStrategy = { maxChunkSizeTokens: 800, chunkOverlapTokens: 400 };

/** The one who acts on vector stores: an API key of one project of one organization. */
export interface VectorStoreScope {
  orgId: string;
  projectId: string;
  apiKeyId: string;
}

export interface ChunkingStrategy {
  maxChunkSizeTokens: number;
  chunkOverlapTokens: number;
}

export type Metadata = Record<string, string>;
export type Attributes = Record<string, string | number | boolean>;

export const FILE_STATUSES = ['in_progress', 'completed', 'failed', 'cancelled'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];
export type ErrorCode = 'server_error' | 'unsupported_file' | 'invalid_file';

export interface FileCounts {
  in_progress: number;
  completed: number;
  failed: number;
  cancelled: number;
  total: number;
}

/** A store as its row holds it, with its files counted. */
export interface StoredVectorStore {
  id: string;
  orgId: string;
  projectId: string;
  name: string;
  description: string | null;
  embeddingModel: string;
  metadata: Metadata;
  expiresAfterDays: number | null;
  createdAt: Date;
  lastActiveAt: Date;
  usageBytes: number;
  fileCounts: FileCounts;
}

/** A file of a store as its row holds it. */
export interface StoredVectorStoreFile {
  vectorStoreId: string;
  fileId: string;
  orgId: string;
  projectId: string;
  apiKeyId: string;
  status: FileStatus;
  filename: string;
  attributes: Attributes;
  chunking: ChunkingStrategy;
  usageBytes: number;
  lastError: { code: ErrorCode; message: string } | null;
  createdAt: Date;
  /** The claim whose chunks a search sees once the file is completed. */
  generation: string | null;
}

export interface VectorStoreObject {
  id: string;
  object: 'vector_store';
  created_at: number;
  name: string;
  description?: string;
  usage_bytes: number;
  file_counts: FileCounts;
  status: 'expired' | 'in_progress' | 'completed';
  expires_after: { anchor: 'last_active_at'; days: number } | null;
  expires_at: number | null;
  last_active_at: number;
  metadata: Metadata;
  /** Service extension: the model every chunk and query of this store is embedded with. */
  embedding_model: string;
}

export interface VectorStoreFileObject {
  id: string;
  object: 'vector_store.file';
  usage_bytes: number;
  created_at: number;
  vector_store_id: string;
  status: FileStatus;
  last_error: { code: ErrorCode; message: string } | null;
  chunking_strategy: {
    type: 'static';
    static: { max_chunk_size_tokens: number; chunk_overlap_tokens: number };
  };
  attributes: Attributes;
}

export interface ListPage<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface SearchResult {
  file_id: string;
  filename: string;
  score: number;
  attributes: Attributes;
  content: { type: 'text'; text: string }[];
}

export interface SearchPage {
  object: 'vector_store.search_results.page';
  search_query: string[];
  data: SearchResult[];
  has_more: false;
  next_page: null;
}

const seconds = (d: Date): number => Math.floor(d.getTime() / 1_000);
const DAY_MS = 86_400_000;

/** When the store expires, or null when it has no expiry policy. */
export const expiresAt = (s: Pick<StoredVectorStore, 'expiresAfterDays' | 'lastActiveAt'>): Date | null =>
  s.expiresAfterDays === null ? null : new Date(s.lastActiveAt.getTime() + s.expiresAfterDays * DAY_MS);

export const isExpired = (s: StoredVectorStore, now: number): boolean => {
  const at = expiresAt(s);
  return at !== null && at.getTime() <= now;
};

export const vectorStoreObject = (s: StoredVectorStore, now: number): VectorStoreObject => {
  const at = expiresAt(s);
  return {
    id: s.id,
    object: 'vector_store',
    created_at: seconds(s.createdAt),
    name: s.name,
    ...(s.description === null ? {} : { description: s.description }),
    usage_bytes: s.usageBytes,
    file_counts: s.fileCounts,
    status: isExpired(s, now) ? 'expired' : s.fileCounts.in_progress > 0 ? 'in_progress' : 'completed',
    expires_after:
      s.expiresAfterDays === null ? null : { anchor: 'last_active_at', days: s.expiresAfterDays },
    expires_at: at ? seconds(at) : null,
    last_active_at: seconds(s.lastActiveAt),
    metadata: s.metadata,
    embedding_model: s.embeddingModel,
  };
};

export const vectorStoreFileObject = (f: StoredVectorStoreFile): VectorStoreFileObject => ({
  id: f.fileId,
  object: 'vector_store.file',
  usage_bytes: f.usageBytes,
  created_at: seconds(f.createdAt),
  vector_store_id: f.vectorStoreId,
  status: f.status,
  last_error: f.status === 'failed' || f.status === 'cancelled' ? f.lastError : null,
  chunking_strategy: {
    type: 'static',
    static: {
      max_chunk_size_tokens: f.chunking.maxChunkSizeTokens,
      chunk_overlap_tokens: f.chunking.chunkOverlapTokens,
    },
  },
  attributes: f.attributes,
});

export const pageOf = <T extends { id: string }>(data: T[], hasMore: boolean): ListPage<T> => ({
  object: 'list',
  data,
  first_id: data[0]?.id ?? null,
  last_id: data.at(-1)?.id ?? null,
  has_more: hasMore,
});

/** A new store id: `vs_`, the creation time in milliseconds (10 characters), 16 random ones. */
export const newVectorStoreId = (now: number): string => newId('vs', now);

/** The creation time written in an id of `newVectorStoreId`, or null for anything else. */
export const vectorStoreIdTime = (id: string): Date | null => idTime(id, 'vs_');

export interface VectorStoreFileBatchObject {
  id: string;
  object: 'vector_store.files_batch';
  created_at: number;
  vector_store_id: string;
  status: 'in_progress' | 'completed' | 'cancelled' | 'failed';
  file_counts: FileCounts;
}

/** A new file batch id: `vsfb_`, the creation time in milliseconds (10 characters), 16 random ones. */
export const newFileBatchId = (now: number): string => newId('vsfb', now);

/** The creation time written in an id of `newFileBatchId`, or null for anything else. */
export const fileBatchIdTime = (id: string): Date | null => idTime(id, 'vsfb_');

/**
 * A batch's status from its files as they are now: cancelled once cancelled; in progress while a
 * file is; failed when every file failed; completed otherwise (OpenAI reports a batch with some
 * failed files as completed, with the failures counted in file_counts).
 */
export const fileBatchObject = (b: {
  id: string;
  vectorStoreId: string;
  createdAt: Date;
  cancelledAt: Date | null;
  fileCounts: FileCounts;
}): VectorStoreFileBatchObject => {
  const c = b.fileCounts;
  return {
    id: b.id,
    object: 'vector_store.files_batch',
    created_at: seconds(b.createdAt),
    vector_store_id: b.vectorStoreId,
    status:
      b.cancelledAt !== null
        ? 'cancelled'
        : c.in_progress > 0
          ? 'in_progress'
          : c.total > 0 && c.failed === c.total
            ? 'failed'
            : 'completed',
    file_counts: c,
  };
};
