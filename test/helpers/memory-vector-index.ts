import { createHash } from 'node:crypto';
import type { ApiKeyIdentity } from '../../src/gateway/auth/api-key-cache.js';
import type { TenantEmbeddings } from '../../src/gateway/tenant-embeddings.js';
import { ServiceError } from '../../src/lib/errors.js';
import type { Attributes } from '../../src/vector-stores/model.js';
import type {
  AttributeFilters,
  Chunker,
  ChunkOwner,
  Embedder,
  Extractor,
  FileSource,
  Filter,
  IndexedChunk,
  StoreRef,
  VectorHit,
  VectorIndex,
  VectorQuery,
} from '../../src/vector-stores/ports.js';

/**
 * In-memory stand-ins for the vector stores' ports (src/vector-stores/ports.ts), so the feature's
 * own logic (tables, attach jobs, search) is tested whatever the state of the engine in src/vectors.
 * The index keeps the engine's contract: chunks are searchable only once their file is published
 * under their generation, until the file or its store is hidden.
 */

const storeKey = (s: StoreRef) => `${s.orgId}/${s.projectId}/${s.vectorStoreId}`;
const fileKey = (s: StoreRef, fileId: string) => `${storeKey(s)}/${fileId}`;

interface Stored extends IndexedChunk {
  owner: ChunkOwner;
}

const cosine = (a: readonly number[], b: readonly number[]): number => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
};

/** OpenAI's filter semantics, small: typed comparisons, in/nin, and/or. */
export const matches = (f: Filter, a: Attributes): boolean => {
  switch (f.type) {
    case 'and':
      return f.filters.every((x) => matches(x, a));
    case 'or':
      return f.filters.some((x) => matches(x, a));
    case 'in':
      return f.value.some((v) => v === a[f.key]);
    case 'nin':
      return !f.value.some((v) => v === a[f.key]);
    case 'ne':
      return !matches({ ...f, type: 'eq' }, a);
    default: {
      const v = a[f.key];
      if (v === undefined || typeof v !== typeof f.value) return false;
      const cmp = v < f.value ? -1 : v > f.value ? 1 : 0;
      return { eq: cmp === 0, gt: cmp > 0, gte: cmp >= 0, lt: cmp < 0, lte: cmp <= 0 }[f.type];
    }
  }
};

export const memoryFilters: AttributeFilters = {
  parse: (raw) => {
    const ok = (f: unknown): f is Filter =>
      typeof f === 'object' &&
      f !== null &&
      (['and', 'or'].includes((f as Filter).type)
        ? Array.isArray((f as { filters?: unknown }).filters) &&
          (f as { filters: unknown[] }).filters.every(ok)
        : typeof (f as { key?: unknown }).key === 'string');
    if (!ok(raw))
      throw new ServiceError('invalid_request_error', 'filters is not a filter', { param: 'filters' });
    return raw;
  },
  matches,
};

export class MemoryVectorIndex implements VectorIndex {
  readonly chunks: Stored[] = [];
  /** The published row of each file: which generation is searchable, with which attributes. */
  readonly published = new Map<string, { generation: string; attributes: Attributes; hidden: boolean }>();
  readonly hiddenStores = new Set<string>();
  /** Called before each insert (a test pauses or changes the world there). */
  beforeInsert: ((owner: ChunkOwner) => Promise<void> | void) | null = null;
  /** Fails every call while set. */
  down: Error | null = null;

  private check(): void {
    if (this.down) throw this.down;
  }

  async insert(owner: ChunkOwner, chunks: readonly IndexedChunk[]): Promise<void> {
    await this.beforeInsert?.(owner);
    this.check();
    for (const c of chunks) this.chunks.push({ ...c, owner });
  }

  async publish(
    owner: ChunkOwner,
    file: { attributes: Attributes; chunkCount: number; tokenCount: number },
  ): Promise<void> {
    this.check();
    this.published.set(fileKey(owner, owner.fileId), {
      generation: owner.generation,
      attributes: file.attributes,
      hidden: false,
    });
  }

  async hideFile(store: StoreRef, fileId: string): Promise<void> {
    this.check();
    const row = this.published.get(fileKey(store, fileId));
    if (row) row.hidden = true;
  }

  async discard(owner: ChunkOwner): Promise<void> {
    this.check();
    for (let i = this.chunks.length - 1; i >= 0; i--) {
      const o = this.chunks[i]!.owner;
      if (fileKey(o, o.fileId) === fileKey(owner, owner.fileId) && o.generation === owner.generation)
        this.chunks.splice(i, 1);
    }
  }

  async hideStore(store: StoreRef): Promise<void> {
    this.check();
    this.hiddenStores.add(storeKey(store));
    for (const [key, row] of this.published) if (key.startsWith(`${storeKey(store)}/`)) row.hidden = true;
  }

  async purgeStore(store: StoreRef): Promise<void> {
    this.check();
    for (let i = this.chunks.length - 1; i >= 0; i--)
      if (storeKey(this.chunks[i]!.owner) === storeKey(store)) this.chunks.splice(i, 1);
  }

  /** The chunks a search of the store could return now. */
  visible(store: StoreRef): Stored[] {
    return this.chunks.filter((c) => {
      const row = this.published.get(fileKey(c.owner, c.owner.fileId));
      return (
        storeKey(c.owner) === storeKey(store) &&
        row !== undefined &&
        !row.hidden &&
        row.generation === c.owner.generation
      );
    });
  }

  /** Chunks of one file in storage, searchable or not. */
  stored(store: StoreRef, fileId: string): Stored[] {
    return this.chunks.filter((c) => fileKey(c.owner, c.owner.fileId) === fileKey(store, fileId));
  }

  async search(store: StoreRef, q: VectorQuery): Promise<VectorHit[]> {
    this.check();
    return this.visible(store)
      .filter((c) => {
        const row = this.published.get(fileKey(c.owner, c.owner.fileId))!;
        return q.filter === null || matches(q.filter, row.attributes);
      })
      .map((c) => ({
        fileId: c.owner.fileId,
        chunkIndex: c.index,
        text: c.text,
        score: Math.max(...q.vectors.map((v) => cosine(v, c.vector))),
      }))
      .filter((h) => h.score >= q.scoreThreshold)
      .sort((a, b) => b.score - a.score || a.fileId.localeCompare(b.fileId) || a.chunkIndex - b.chunkIndex)
      .slice(0, q.limit);
  }
}

/** Paragraphs (blank-line separated) are chunks; tokens are words. */
export const paragraphChunker: Chunker = {
  chunk: (text) =>
    text
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .filter((p) => p !== '')
      .map((p) => ({ text: p, tokens: p.split(/\s+/).length })),
};

/** UTF-8 text without NUL is text; anything else is an invalid file. */
export const textExtractor: Extractor = {
  extract: async ({ filename, bytes }) => {
    const text = bytes.toString('utf8');
    if (bytes.includes(0) || !Buffer.from(text, 'utf8').equals(bytes))
      return { ok: false, code: 'invalid_file', message: `${filename} is not text` };
    return { ok: true, text };
  },
};

/** A bag-of-words vector: texts sharing words point the same way. */
export const wordsVector = (text: string, dimensions = 64): number[] => {
  const v = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const h = createHash('sha256').update(word).digest();
    v[h.readUInt32LE(0) % dimensions]! += 1;
  }
  return v;
};

/** Embeds with `wordsVector`, records every call, and fails or pauses as a test says. */
export class FakeEmbedder implements Embedder {
  readonly calls: { apiKeyId: string; model: string; inputs: string[] }[] = [];
  /** Answers every call with this failure while set. */
  failure: Extract<TenantEmbeddings, { ok: false }> | null = null;
  /** Awaited before each answer. */
  gate: (() => Promise<void>) | null = null;

  async embed(key: ApiKeyIdentity, model: string, inputs: readonly string[], signal?: AbortSignal) {
    this.calls.push({ apiKeyId: key.apiKeyId, model, inputs: [...inputs] });
    await this.gate?.();
    if (signal?.aborted)
      return { ok: false, requestId: 'req_x', status: 499, code: 'cancelled', message: 'cancelled' } as const;
    if (this.failure) return this.failure;
    return { ok: true, requestId: 'req_x', vectors: inputs.map((t) => wordsVector(t)) } as const;
  }
}

/** Files of several projects, in memory. */
export class MemoryFiles implements FileSource {
  readonly files = new Map<string, { filename: string; contentType: string; bytes: Buffer }>();

  put(scope: { orgId: string; projectId: string }, id: string, filename: string, bytes: Buffer | string) {
    this.files.set(`${scope.orgId}/${scope.projectId}/${id}`, {
      filename,
      contentType: 'text/plain',
      bytes: Buffer.from(bytes),
    });
  }

  async existing(scope: { orgId: string; projectId: string }, ids: readonly string[]) {
    return new Set(ids.filter((id) => this.files.has(`${scope.orgId}/${scope.projectId}/${id}`)));
  }

  async describe(scope: { orgId: string; projectId: string }, id: string) {
    const f = this.files.get(`${scope.orgId}/${scope.projectId}/${id}`);
    return f ? { filename: f.filename } : null;
  }

  async read(scope: { orgId: string; projectId: string }, id: string, maxBytes: number) {
    const f = this.files.get(`${scope.orgId}/${scope.projectId}/${id}`);
    if (!f) return null;
    return { ...f, size: f.bytes.length, bytes: f.bytes.length > maxBytes ? null : f.bytes };
  }
}

/** A promise and the function that settles it: a gate a test opens when it is ready. */
export const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
};
