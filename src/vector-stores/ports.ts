import type { ApiKeyIdentity } from '../gateway/auth/api-key-cache.js';
import type { TenantEmbeddings } from '../gateway/tenant-embeddings.js';
import type { Attributes, ChunkingStrategy, ErrorCode, VectorStoreScope } from './model.js';

/**
 * What the vector stores need from the rest of the service, each as narrow as the feature uses it.
 * `engine.ts` binds the chunking, extraction, filter and index ports to src/vectors; the role binds
 * the others (files, keys, embeddings) to the gateway's own pieces.
 */

/** One store in the index. */
export interface StoreRef {
  orgId: string;
  projectId: string;
  vectorStoreId: string;
}

/**
 * The chunks of one attach run: one file in one store, under the generation of the claim that
 * wrote them (a decimal UInt64, unique per claim).
 */
export interface ChunkOwner extends StoreRef {
  fileId: string;
  generation: string;
}

export interface IndexedChunk {
  /** The chunk's position in its file, from 0. */
  index: number;
  text: string;
  tokens: number;
  vector: number[];
}

export interface VectorHit {
  fileId: string;
  chunkIndex: number;
  text: string;
  /** Cosine similarity, higher is nearer. */
  score: number;
}

/** OpenAI's attribute filter syntax (comparison and compound filters), as read by `AttributeFilters`. */
export type Filter =
  | { type: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte'; key: string; value: string | number | boolean }
  | { type: 'in' | 'nin'; key: string; value: (string | number)[] }
  | { type: 'and' | 'or'; filters: Filter[] };

export interface VectorQuery {
  /** One or more query vectors; a chunk scores its best similarity to any of them. */
  vectors: readonly number[][];
  limit: number;
  /** Hits scoring below this are left out (0 keeps every hit). */
  scoreThreshold: number;
  filter: Filter | null;
}

/**
 * The chunk vectors (src/vectors/store.ts over the analytics store). Chunks are searchable only
 * once their file is published under their generation, and until the file is hidden.
 */
export interface VectorIndex {
  /** Writes chunks of one attach run; none is searchable before `publish`. */
  insert(owner: ChunkOwner, chunks: readonly IndexedChunk[]): Promise<void>;
  /** Makes the owner's generation the file's searchable chunks, with these attributes. */
  publish(
    owner: ChunkOwner,
    file: { attributes: Attributes; chunkCount: number; tokenCount: number },
  ): Promise<void>;
  /** Hides whatever chunks of the file are searchable. */
  hideFile(store: StoreRef, fileId: string): Promise<void>;
  /** Removes the chunk rows of one attach run (never published, or hidden since). */
  discard(owner: ChunkOwner): Promise<void>;
  /** Hides every chunk of a store, at once. */
  hideStore(store: StoreRef): Promise<void>;
  /** Removes every row of a hidden store. */
  purgeStore(store: StoreRef): Promise<void>;
  /** The nearest searchable chunks of the store's files that pass `filter`, best first. */
  search(store: StoreRef, query: VectorQuery): Promise<VectorHit[]>;
}

/** Splits extracted text into chunks of at most `maxChunkSizeTokens` tokens, overlapping as asked. */
export interface Chunker {
  chunk(text: string, strategy: ChunkingStrategy): { text: string; tokens: number }[];
}

export type Extraction = { ok: true; text: string } | { ok: false; code: ErrorCode; message: string };

/** A file's text, by its name, declared type and bytes (text, Markdown, JSON, PDF...). */
export interface Extractor {
  extract(file: { filename: string; contentType: string; bytes: Buffer }): Promise<Extraction>;
}

/**
 * The filter syntax: `parse` throws a ServiceError (400, naming the field under `filters`) for a
 * filter it cannot read; `matches` is the same test in memory, over one file's attributes.
 */
export interface AttributeFilters {
  parse(raw: unknown): Filter;
  matches(filter: Filter, attributes: Attributes): boolean;
}

/** One embeddings request of a tenant's key through the gateway's request path (gateway/tenant-embeddings.ts). */
export interface Embedder {
  embed(
    key: ApiKeyIdentity,
    model: string,
    inputs: readonly string[],
    signal?: AbortSignal,
  ): Promise<TenantEmbeddings>;
}

/** An API key still in force, by id (gateway/auth/api-key-cache.ts); null once revoked. */
export type KeySource = (apiKeyId: string) => ApiKeyIdentity | null;

/** The Files module (src/files) as the vector stores read it: a project's file and its bytes. */
export interface FileSource {
  /** The caller's file, or null when it is not one (another project's, deleted, never existed). */
  describe(scope: VectorStoreScope, fileId: string): Promise<{ filename: string } | null>;
  /** Of `fileIds`, the caller's files that still exist (not deleted, not expired). */
  existing(scope: VectorStoreScope, fileIds: readonly string[]): Promise<Set<string>>;
  /**
   * Its name, declared type, size and bytes (null bytes when it is larger than `maxBytes`, which
   * are then not read); null when the file is gone.
   */
  read(
    scope: VectorStoreScope,
    fileId: string,
    maxBytes: number,
  ): Promise<{ filename: string; contentType: string; size: number; bytes: Buffer | null } | null>;
}
