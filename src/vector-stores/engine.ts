import type { AnalyticsStore } from '../analytics/port.js';
import { ServiceError } from '../lib/errors.js';
import { chunkText } from '../vectors/chunking.js';
import { extractFileText } from '../vectors/extract.js';
import { matchesFilter, parseFilter } from '../vectors/filters.js';
import { VectorChunkStore, type VectorStoreOptions } from '../vectors/store.js';
import type { AttributeFilters, Chunker, Extractor, VectorIndex } from './ports.js';

/**
 * The ports of ports.ts bound to the service's own engine (src/vectors): chunking, text
 * extraction, OpenAI's filter syntax, and the chunk index in the analytics store (ClickHouse
 * through the analytics port, embedded chdb or a server).
 */

export const engineChunker: Chunker = {
  chunk: (text, s) =>
    chunkText(text, {
      type: 'static',
      static: { max_chunk_size_tokens: s.maxChunkSizeTokens, chunk_overlap_tokens: s.chunkOverlapTokens },
    }).map((c) => ({ text: c.text, tokens: c.tokens })),
};

export const engineExtractor: Extractor = {
  extract: async (file) => {
    const r = await extractFileText(file);
    return r.ok ? { ok: true, text: r.text } : { ok: false, code: r.error.code, message: r.error.message };
  },
};

export const engineFilters: AttributeFilters = {
  parse: (raw) => {
    const parsed = parseFilter(raw, 'filters');
    if (!parsed.ok) throw new ServiceError('invalid_request_error', parsed.message, { param: parsed.field });
    return parsed.value;
  },
  matches: (filter, attributes) => matchesFilter(filter, attributes),
};

/** The chunk index over one analytics store (migrations/clickhouse/0004_vector_chunks.sql). */
export const engineIndex = (analytics: AnalyticsStore, options: VectorStoreOptions = {}): VectorIndex => {
  const chunks = new VectorChunkStore(analytics, options);
  return {
    insert: (owner, rows) =>
      chunks.insertChunks(
        owner,
        owner.fileId,
        BigInt(owner.generation),
        rows.map((c) => ({ chunkIndex: c.index, text: c.text, tokenCount: c.tokens, embedding: c.vector })),
      ),
    publish: (owner, file) =>
      chunks.publishFile(owner, {
        fileId: owner.fileId,
        generation: BigInt(owner.generation),
        attributes: file.attributes,
        chunkCount: file.chunkCount,
        tokenCount: file.tokenCount,
      }),
    hideFile: async (store, fileId) => {
      await chunks.detachFile(store, fileId);
    },
    discard: (owner) => chunks.purgeFile(owner, owner.fileId, BigInt(owner.generation)),
    hideStore: async (store) => {
      await chunks.deleteStore(store);
    },
    purgeStore: (store) => chunks.purgeStore(store),
    search: async (store, q) => {
      const hits = await chunks.search(store, {
        queryEmbeddings: q.vectors,
        maxNumResults: q.limit,
        scoreThreshold: q.scoreThreshold,
        filter: q.filter,
      });
      return hits.map((h) => ({ fileId: h.fileId, chunkIndex: h.chunkIndex, text: h.text, score: h.score }));
    },
  };
};
