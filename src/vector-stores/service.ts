import { fileIdTime } from '../files/model.js';
import type { ApiKeyIdentity } from '../gateway/auth/api-key-cache.js';
import type { TenantEmbeddings } from '../gateway/tenant-embeddings.js';
import { type ErrorCode, ServiceError } from '../lib/errors.js';
import type { AttachJobs } from './jobs.js';
import {
  DEFAULT_EMBEDDING_MODEL,
  fileBatchIdTime,
  fileBatchObject,
  isExpired,
  type ListPage,
  newFileBatchId,
  newVectorStoreId,
  pageOf,
  type SearchPage,
  type SearchResult,
  type StoredVectorStore,
  type VectorStoreFileBatchObject,
  type VectorStoreFileObject,
  type VectorStoreObject,
  type VectorStoreScope,
  vectorStoreFileObject,
  vectorStoreIdTime,
  vectorStoreObject,
} from './model.js';
import type { AttributeFilters, Embedder, Extractor, FileSource, StoreRef, VectorIndex } from './ports.js';
import type {
  AttachRequest,
  CreateStoreRequest,
  FileListRequest,
  SearchRequest,
  UpdateStoreRequest,
} from './requests.js';
import type { PageQuery, Position, VectorStoreTables } from './store.js';
import { syncFile } from './sync.js';

/**
 * The vector stores of the primary edge (SPEC 4.1 /v1/vector_stores, OpenAI's Vector Stores API):
 * stores and their files in PostgreSQL, every operation scoped to the caller's organization and
 * project; chunks and vectors in the index, written by the attach workers (worker.ts) and searched
 * here with the query embedded through the gateway's own request path.
 */

export interface VectorStoresPorts {
  files: FileSource;
  /** The attach workers' text extraction, for a file's parsed content. */
  extractor: Extractor;
  index: VectorIndex;
  filters: AttributeFilters;
  embedder: Embedder;
  /** Wakes this process's attach workers after an attach. */
  kick: () => void;
}

export interface VectorStoresOptions {
  now?: () => number;
  /** A cleanup that failed without failing the request; the sweep or a worker finishes it. */
  onError?: (err: unknown, what: string) => void;
}

/** The largest file whose parsed content is answered (the attach workers' bound). */
const MAX_CONTENT_BYTES = 64 * 1024 * 1024;

/** Deleted stores one sweep finishes at most. */
const SWEEP_BATCH = 100;

const short = (id: string) => JSON.stringify(id.slice(0, 100));
const storeNotFound = (id: string) =>
  new ServiceError('not_found', `no such vector store: ${short(id)}`, { param: 'vector_store_id' });
const batchNotFound = (id: string, storeId: string) =>
  new ServiceError('not_found', `no file batch ${short(id)} in vector store ${short(storeId)}`, {
    param: 'batch_id',
  });
const fileNotFound = (id: string, storeId: string) =>
  new ServiceError('not_found', `no file ${short(id)} in vector store ${short(storeId)}`, {
    param: 'file_id',
  });

/** The catalogue code of an embeddings answer's status, its own code shown as error.code. */
const embeddingError = (answer: Extract<TenantEmbeddings, { ok: false }>, model: string): ServiceError => {
  const byStatus: Record<number, ErrorCode> = {
    400: answer.code === 'no_compatible_candidate' ? 'no_compatible_candidate' : 'invalid_request_error',
    401: 'unauthenticated',
    402: 'insufficient_funds',
    403: 'policy_denied',
    404: 'unknown_model',
    429: 'rate_limit_error',
    503: 'service_unavailable',
  };
  const code = byStatus[answer.status] ?? 'upstream_error';
  return new ServiceError(code, `embedding the search query with ${model} failed: ${answer.message}`, {
    status: answer.status >= 400 && answer.status < 600 ? answer.status : 502,
    displayCode: answer.code,
  });
};

export class VectorStores {
  private readonly now: () => number;
  private readonly onError: (err: unknown, what: string) => void;

  constructor(
    private readonly tables: VectorStoreTables,
    private readonly jobs: AttachJobs,
    private readonly ports: VectorStoresPorts,
    options: VectorStoresOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.onError = options.onError ?? (() => {});
  }

  // --- stores ---

  async create(scope: VectorStoreScope, r: CreateStoreRequest): Promise<VectorStoreObject> {
    // Every file first: a file that is not the caller's is a 404 before anything is created.
    const files = [];
    for (const fileId of r.fileIds) {
      const file = await this.ports.files.describe(scope, fileId);
      if (!file) throw new ServiceError('not_found', `no such file: ${short(fileId)}`, { param: 'file_ids' });
      files.push({ fileId, filename: file.filename });
    }
    const now = this.now();
    const id = newVectorStoreId(now);
    await this.tables.createStore({
      id,
      scope,
      name: r.name,
      description: r.description,
      embeddingModel: r.embeddingModel ?? DEFAULT_EMBEDDING_MODEL,
      metadata: r.metadata,
      expiresAfterDays: r.expiresAfterDays,
      createdAt: vectorStoreIdTime(id)!,
    });
    for (const f of files)
      await this.tables.attach({
        scope,
        vectorStoreId: id,
        fileId: f.fileId,
        filename: f.filename,
        attributes: {},
        chunking: r.chunking,
        createdAt: new Date(now),
      });
    if (files.length > 0) this.ports.kick();
    return this.retrieve(scope, id);
  }

  async list(scope: VectorStoreScope, q: PageQuery): Promise<ListPage<VectorStoreObject>> {
    const { items, hasMore } = await this.tables.listStores(scope, q);
    const now = this.now();
    return pageOf(
      items.map((s) => vectorStoreObject(s, now)),
      hasMore,
    );
  }

  async retrieve(scope: VectorStoreScope, id: string): Promise<VectorStoreObject> {
    return vectorStoreObject(await this.found(scope, id), this.now());
  }

  async update(scope: VectorStoreScope, id: string, patch: UpdateStoreRequest): Promise<VectorStoreObject> {
    if (!vectorStoreIdTime(id) || !(await this.tables.updateStore(scope, id, patch))) throw storeNotFound(id);
    return this.retrieve(scope, id);
  }

  /** Deletes a store: gone from every read and search at once, its chunks hidden now or by the sweep. */
  async delete(
    scope: VectorStoreScope,
    id: string,
  ): Promise<{ id: string; object: 'vector_store.deleted'; deleted: true }> {
    if (!vectorStoreIdTime(id) || !(await this.tables.markStoreDeleting(scope, id))) throw storeNotFound(id);
    const store = { orgId: scope.orgId, projectId: scope.projectId, vectorStoreId: id };
    try {
      await this.retire(store);
    } catch (err) {
      this.onError(err, `vector store ${id} is deleted; its chunks will be removed by the sweep`);
    }
    return { id, object: 'vector_store.deleted', deleted: true };
  }

  /** Finishes deletions: hides and removes the chunks of stores marked deleting, then their rows. */
  async sweep(): Promise<{ removed: number }> {
    let removed = 0;
    for (const store of await this.tables.deletingStores(SWEEP_BATCH)) {
      try {
        await this.retire(store);
        removed++;
      } catch (err) {
        this.onError(err, `the chunks of deleted vector store ${store.vectorStoreId} are not removed yet`);
      }
    }
    return { removed };
  }

  private async retire(store: StoreRef): Promise<void> {
    await this.ports.index.hideStore(store);
    await this.ports.index.purgeStore(store);
    await this.tables.removeStores([store.vectorStoreId]);
  }

  // --- files of a store ---

  async attach(scope: VectorStoreScope, storeId: string, r: AttachRequest): Promise<VectorStoreFileObject> {
    const store = await this.usable(scope, storeId);
    const file = await this.ports.files.describe(scope, r.fileId);
    if (!file) throw new ServiceError('not_found', `no such file: ${short(r.fileId)}`, { param: 'file_id' });
    const now = new Date(this.now());
    const attached = await this.tables.attach({
      scope,
      vectorStoreId: store.id,
      fileId: r.fileId,
      filename: file.filename,
      attributes: r.attributes,
      chunking: r.chunking,
      createdAt: now,
    });
    if (!attached) throw storeNotFound(storeId);
    if (attached.created) {
      await this.tables.touch(scope, store.id, now);
      this.ports.kick();
    }
    return vectorStoreFileObject(attached.file);
  }

  async listFiles(
    scope: VectorStoreScope,
    storeId: string,
    q: FileListRequest,
    batchId?: string,
  ): Promise<ListPage<VectorStoreFileObject>> {
    await this.found(scope, storeId);
    const position = async (name: 'after' | 'before', fileId: string | null): Promise<Position | null> => {
      if (fileId === null) return null;
      const p = await this.tables.filePosition(scope, storeId, fileId);
      if (!p)
        throw new ServiceError(
          'invalid_request_error',
          `${name} must be the id of a file of this vector store, as in first_id or last_id; ${short(fileId)} is not one`,
          { param: name },
        );
      return p;
    };
    const { items, hasMore } = await this.tables.listFiles(scope, storeId, {
      limit: q.limit,
      order: q.order,
      after: await position('after', q.after),
      before: await position('before', q.before),
      status: q.status,
      ...(batchId === undefined ? {} : { batchId }),
    });
    return pageOf(items.map(vectorStoreFileObject), hasMore);
  }

  async retrieveFile(
    scope: VectorStoreScope,
    storeId: string,
    fileId: string,
  ): Promise<VectorStoreFileObject> {
    await this.found(scope, storeId);
    const file = fileIdTime(fileId) ? await this.tables.getFile(scope, storeId, fileId) : null;
    if (!file) throw fileNotFound(fileId, storeId);
    return vectorStoreFileObject(file);
  }

  async updateFile(
    scope: VectorStoreScope,
    storeId: string,
    fileId: string,
    attributes: Record<string, string | number | boolean>,
  ): Promise<VectorStoreFileObject> {
    await this.found(scope, storeId);
    const file = fileIdTime(fileId)
      ? await this.tables.updateAttributes(scope, storeId, fileId, attributes)
      : null;
    if (!file) throw fileNotFound(fileId, storeId);
    if (file.status === 'completed')
      await syncFile(this.jobs, this.ports.index, { ...scope, vectorStoreId: storeId, fileId });
    return vectorStoreFileObject(file);
  }

  /** Detaches a file (the file itself stays): out of every read and search at once. */
  async detach(
    scope: VectorStoreScope,
    storeId: string,
    fileId: string,
  ): Promise<{ id: string; object: 'vector_store.file.deleted'; deleted: true }> {
    await this.found(scope, storeId);
    const generation = fileIdTime(fileId) ? await this.tables.detach(scope, storeId, fileId) : undefined;
    if (generation === undefined) throw fileNotFound(fileId, storeId);
    const store = { orgId: scope.orgId, projectId: scope.projectId, vectorStoreId: storeId };
    try {
      await this.ports.index.hideFile(store, fileId);
      if (generation !== null) await this.ports.index.discard({ ...store, fileId, generation });
    } catch (err) {
      // Searches show only files completed in PostgreSQL: the file is out of every answer already.
      this.onError(err, `file ${fileId} is detached from ${storeId}; its chunks are not removed yet`);
    }
    return { id: fileId, object: 'vector_store.file.deleted', deleted: true };
  }

  /**
   * A completed file's text as the attach workers extracted it (OpenAI's parsed content), read
   * from the file again: it is what the chunks were cut from.
   */
  async fileContent(
    scope: VectorStoreScope,
    storeId: string,
    fileId: string,
  ): Promise<{
    object: 'vector_store.file_content.page';
    data: { type: 'text'; text: string }[];
    has_more: false;
    next_page: null;
  }> {
    const attached = await this.retrieveFile(scope, storeId, fileId);
    if (attached.status !== 'completed')
      throw new ServiceError(
        'invalid_request_error',
        `file ${short(fileId)} is ${attached.status}: its content is there once it is completed`,
        { param: 'file_id' },
      );
    const file = await this.ports.files.read(scope, fileId, MAX_CONTENT_BYTES);
    if (!file) throw new ServiceError('not_found', `no such file: ${short(fileId)}`, { param: 'file_id' });
    if (!file.bytes)
      throw new ServiceError(
        'payload_too_large',
        `file ${short(fileId)} is larger than the content route reads`,
      );
    const extracted = await this.ports.extractor.extract({ ...file, bytes: file.bytes });
    if (!extracted.ok)
      throw new ServiceError('invalid_request_error', extracted.message, { param: 'file_id' });
    return {
      object: 'vector_store.file_content.page',
      data: [{ type: 'text', text: extracted.text }],
      has_more: false,
      next_page: null,
    };
  }

  // --- file batches ---

  /**
   * Attaches many files at once (each an ordinary attach job), in one transaction; every file must
   * be the caller's first, or nothing is attached.
   */
  async createBatch(
    scope: VectorStoreScope,
    storeId: string,
    files: readonly AttachRequest[],
  ): Promise<VectorStoreFileBatchObject> {
    const store = await this.usable(scope, storeId);
    const named = [];
    for (const f of files) {
      const file = await this.ports.files.describe(scope, f.fileId);
      if (!file)
        throw new ServiceError('not_found', `no such file: ${short(f.fileId)}`, { param: 'file_ids' });
      named.push({ ...f, filename: file.filename });
    }
    const now = this.now();
    const id = newFileBatchId(now);
    const created = await this.tables.createBatch({
      id,
      scope,
      vectorStoreId: store.id,
      files: named,
      createdAt: fileBatchIdTime(id)!,
    });
    if (!created) throw storeNotFound(storeId);
    await this.tables.touch(scope, store.id, new Date(now));
    this.ports.kick();
    return this.retrieveBatch(scope, storeId, id);
  }

  async retrieveBatch(
    scope: VectorStoreScope,
    storeId: string,
    batchId: string,
  ): Promise<VectorStoreFileBatchObject> {
    await this.found(scope, storeId);
    const batch = fileBatchIdTime(batchId) ? await this.tables.getBatch(scope, storeId, batchId) : null;
    if (!batch) throw batchNotFound(batchId, storeId);
    return fileBatchObject(batch);
  }

  /** Cancels the batch's files still in progress; the files it completed stay searchable. */
  async cancelBatch(
    scope: VectorStoreScope,
    storeId: string,
    batchId: string,
  ): Promise<VectorStoreFileBatchObject> {
    await this.found(scope, storeId);
    const cancelled = fileBatchIdTime(batchId)
      ? await this.tables.cancelBatch(scope, storeId, batchId, new Date(this.now()))
      : null;
    if (!cancelled) throw batchNotFound(batchId, storeId);
    const store = { orgId: scope.orgId, projectId: scope.projectId, vectorStoreId: storeId };
    for (const { fileId, generation } of cancelled) {
      // Never published (only completed files are searched): removed here or by the worker that
      // finds its claim gone.
      await this.ports.index
        .discard({ ...store, fileId, generation })
        .catch((err: unknown) =>
          this.onError(err, `cancelled file ${fileId} of ${storeId}: chunks not removed yet`),
        );
    }
    return this.retrieveBatch(scope, storeId, batchId);
  }

  async listBatchFiles(
    scope: VectorStoreScope,
    storeId: string,
    batchId: string,
    q: FileListRequest,
  ): Promise<ListPage<VectorStoreFileObject>> {
    await this.retrieveBatch(scope, storeId, batchId);
    return this.listFiles(scope, storeId, q, batchId);
  }

  // --- search ---

  /**
   * The chunks nearest the query among the store's completed files that pass the filters. The
   * query is embedded with the store's model as an embeddings request of the caller's key (priced
   * and recorded like any other). Every hit is checked against the files' rows as they are now:
   * a file detached a moment ago, or whose attributes no longer pass the filter, is left out.
   */
  async search(key: ApiKeyIdentity, storeId: string, r: SearchRequest): Promise<SearchPage> {
    return {
      object: 'vector_store.search_results.page',
      search_query: r.queries,
      data: await this.searchStores(key, [storeId], r),
      has_more: false,
      next_page: null,
    };
  }

  /**
   * The same over several stores of the caller (hosted file_search names up to ten): one
   * embeddings request per embedding model among them, the best hits of all, best first. Any store
   * the caller cannot see is the 404 of a store that does not exist, before anything is embedded.
   */
  async searchStores(
    key: ApiKeyIdentity,
    storeIds: readonly string[],
    r: SearchRequest,
  ): Promise<SearchResult[]> {
    const scope = { orgId: key.orgId, projectId: key.projectId, apiKeyId: key.apiKeyId };
    const stores: StoredVectorStore[] = [];
    for (const id of new Set(storeIds)) stores.push(await this.usable(scope, id));
    const filter = r.filters === null ? null : this.ports.filters.parse(r.filters);
    const now = new Date(this.now());
    const searchable = [];
    for (const store of stores) {
      const attached = await this.tables.searchable(scope, store.id);
      // A file deleted or expired in /v1/files is out of every search at once (OpenAI: deleting a
      // file removes it from all vector stores).
      const existing = await this.ports.files.existing(
        scope,
        attached.map((f) => f.fileId),
      );
      const files = new Map(attached.filter((f) => existing.has(f.fileId)).map((f) => [f.fileId, f]));
      await this.tables.touch(scope, store.id, now);
      // Nothing to search: no embeddings request is made (and none charged) for it.
      if (files.size > 0) searchable.push({ store, files });
    }
    const vectorsOf = new Map<string, number[][]>();
    for (const { store } of searchable) {
      const model = store.embeddingModel;
      if (vectorsOf.has(model)) continue;
      const answer = await this.ports.embedder.embed(key, model, r.queries);
      if (!answer.ok) throw embeddingError(answer, model);
      vectorsOf.set(model, answer.vectors);
    }
    const results: SearchResult[] = [];
    for (const { store, files } of searchable) {
      const hits = await this.ports.index.search(
        { orgId: scope.orgId, projectId: scope.projectId, vectorStoreId: store.id },
        {
          vectors: vectorsOf.get(store.embeddingModel)!,
          limit: r.maxResults,
          scoreThreshold: r.scoreThreshold,
          filter,
        },
      );
      for (const hit of hits) {
        const file = files.get(hit.fileId);
        if (!file || (filter && !this.ports.filters.matches(filter, file.attributes))) continue;
        if (hit.score < r.scoreThreshold) continue;
        results.push({
          file_id: hit.fileId,
          filename: file.filename,
          score: hit.score,
          attributes: file.attributes,
          content: [{ type: 'text', text: hit.text }],
        });
      }
    }
    // Stable: within one store the index's order stands; across stores, the score decides.
    return results.sort((x, y) => y.score - x.score).slice(0, r.maxResults);
  }

  /** The caller's store `id`; anything else, whoever's and whatever its shape, is the same 404. */
  private async found(scope: VectorStoreScope, id: string): Promise<StoredVectorStore> {
    const store = vectorStoreIdTime(id) ? await this.tables.getStore(scope, id) : null;
    if (!store) throw storeNotFound(id);
    return store;
  }

  /** The caller's store, refused when expired (OpenAI: an expired store cannot be used). */
  private async usable(scope: VectorStoreScope, id: string): Promise<StoredVectorStore> {
    const store = await this.found(scope, id);
    if (isExpired(store, this.now()))
      throw new ServiceError(
        'invalid_request_error',
        `vector store ${id} has expired: it was inactive longer than its expires_after policy allows`,
        { param: 'vector_store_id' },
      );
    return store;
  }
}
