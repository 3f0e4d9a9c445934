import { describe, expect, it } from 'vitest';
import { newFileId } from '../files/model.js';
import { ServiceError } from '../lib/errors.js';
import { newVectorStoreId, vectorStoreIdTime } from './model.js';
import {
  parseAttach,
  parseCreateStore,
  parseFileList,
  parseSearch,
  parseStoreList,
  parseUpdateFile,
  parseUpdateStore,
} from './requests.js';

// The bodies and query strings of /v1/vector_stores: OpenAI's bounds, a 400 naming the parameter
// for anything else (never a value that would fail later as a 500), and the service's defaults.

const refusal = (call: () => unknown): { param: string | null; message: string; status: number } => {
  try {
    call();
  } catch (err) {
    if (err instanceof ServiceError) return { param: err.param, message: err.message, status: err.status };
    throw err;
  }
  throw new Error('accepted');
};

describe('create and modify', () => {
  it('defaults: no name, auto chunking, the default embedding model left to the service', () => {
    expect(parseCreateStore(undefined)).toEqual({
      name: '',
      description: null,
      fileIds: [],
      expiresAfterDays: null,
      chunking: { maxChunkSizeTokens: 800, chunkOverlapTokens: 400 },
      metadata: {},
      embeddingModel: null,
    });
    expect(
      parseCreateStore({
        name: 'docs',
        file_ids: ['file-a', 'file-a', 'file-b'],
        expires_after: { anchor: 'last_active_at', days: 7 },
        chunking_strategy: {
          type: 'static',
          static: { max_chunk_size_tokens: 400, chunk_overlap_tokens: 200 },
        },
        metadata: { team: 'search' },
        embedding_model: 'text-embedding-3-large',
      }),
    ).toMatchObject({
      fileIds: ['file-a', 'file-b'],
      expiresAfterDays: 7,
      chunking: { maxChunkSizeTokens: 400, chunkOverlapTokens: 200 },
      embeddingModel: 'text-embedding-3-large',
    });
  });

  it.each([
    [{ expires_after: { anchor: 'created_at', days: 1 } }, 'expires_after.anchor'],
    [{ expires_after: { anchor: 'last_active_at', days: 366 } }, 'expires_after.days'],
    [{ expires_after: { anchor: 'last_active_at', days: 1.5 } }, 'expires_after.days'],
    [{ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
    [{ metadata: { ['k'.repeat(65)]: 'v' } }, `metadata.${'k'.repeat(65)}`],
    [{ metadata: { k: 'v'.repeat(513) } }, 'metadata.k'],
    [{ metadata: { k: 1 } }, 'metadata.k'],
    [
      {
        chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 99, chunk_overlap_tokens: 0 } },
      },
      'chunking_strategy.static.max_chunk_size_tokens',
    ],
    [
      {
        chunking_strategy: {
          type: 'static',
          static: { max_chunk_size_tokens: 400, chunk_overlap_tokens: 201 },
        },
      },
      'chunking_strategy.static.chunk_overlap_tokens',
    ],
    [{ chunking_strategy: { type: 'other' } }, 'chunking_strategy.type'],
    [{ name: 'a\u0000b' }, 'name'],
    [{ name: '\ud800' }, 'name'],
    [{ colour: 'blue' }, 'colour'],
    [{ file_ids: 'file-a' }, 'file_ids'],
  ])('refuses %j naming %s', (body, param) => {
    const r = refusal(() => parseCreateStore(body));
    expect(r.status).toBe(400);
    expect(r.param).toBe(param);
  });

  it('modify: fields left out stay, null clears; only name, expires_after and metadata', () => {
    expect(parseUpdateStore({})).toEqual({});
    expect(parseUpdateStore({ name: null, expires_after: null, metadata: null })).toEqual({
      name: '',
      expiresAfterDays: null,
      metadata: {},
    });
    expect(refusal(() => parseUpdateStore({ description: 'x' })).param).toBe('description');
    expect(refusal(() => parseUpdateStore({ embedding_model: 'x' })).param).toBe('embedding_model');
  });

  it('a store embeds with one model: a fallback list, svc/auto or a padded name is a 400', () => {
    for (const embedding_model of ['a,b', 'svc/auto', ' text-embedding-3-small', 'text embedding'])
      expect(refusal(() => parseCreateStore({ embedding_model })).param).toBe('embedding_model');
    expect(parseCreateStore({ embedding_model: 'openai/text-embedding-3-large' })).toMatchObject({
      embeddingModel: 'openai/text-embedding-3-large',
    });
  });
});

describe('files', () => {
  it('attach: attributes are strings up to 512, numbers or booleans, at most 16', () => {
    expect(parseAttach({ file_id: 'file-x', attributes: { a: 'x', b: 2.5, c: false } })).toEqual({
      fileId: 'file-x',
      attributes: { a: 'x', b: 2.5, c: false },
      chunking: { maxChunkSizeTokens: 800, chunkOverlapTokens: 400 },
    });
    expect(refusal(() => parseAttach({})).param).toBe('file_id');
    expect(refusal(() => parseAttach({ file_id: 'f', attributes: { a: { b: 1 } } })).param).toBe(
      'attributes.a',
    );
    expect(refusal(() => parseAttach({ file_id: 'f', attributes: { a: 'x'.repeat(513) } })).param).toBe(
      'attributes.a',
    );
    expect(refusal(() => parseAttach([])).param).toBe('body');
    expect(parseUpdateFile({ attributes: null })).toEqual({});
    expect(refusal(() => parseUpdateFile({})).param).toBe('attributes');
  });

  it('list: limit 1..100 (20), order, a status filter, cursors that are file ids', () => {
    expect(parseFileList({})).toEqual({ limit: 20, order: 'desc', after: null, before: null, status: null });
    const id = newFileId(Date.now());
    expect(parseFileList({ limit: '100', order: 'asc', after: id, filter: 'failed' })).toEqual({
      limit: 100,
      order: 'asc',
      after: id,
      before: null,
      status: 'failed',
    });
    expect(refusal(() => parseFileList({ limit: '101' })).param).toBe('limit');
    expect(refusal(() => parseFileList({ filter: 'detached' })).param).toBe('filter');
    expect(refusal(() => parseFileList({ before: 'vs_x' })).param).toBe('before');
    expect(refusal(() => parseFileList({ after: [id, id] })).param).toBe('after');
  });
});

describe('stores list', () => {
  it('cursors are positions read from the store id', () => {
    const id = newVectorStoreId(1_700_000_000_123);
    expect(vectorStoreIdTime(id)?.getTime()).toBe(1_700_000_000_123);
    expect(parseStoreList({ before: id })).toEqual({
      limit: 20,
      order: 'desc',
      after: null,
      before: { id, createdAt: new Date(1_700_000_000_123) },
    });
    expect(refusal(() => parseStoreList({ after: 'file-abc' })).param).toBe('after');
    expect(refusal(() => parseStoreList({ limit: '0' })).param).toBe('limit');
    expect(refusal(() => parseStoreList({ order: 'up' })).param).toBe('order');
  });
});

describe('search', () => {
  it('a string or strings; 1..50 results (10); a threshold 0..1; rewrite_query true refused', () => {
    expect(parseSearch({ query: 'x' })).toEqual({
      queries: ['x'],
      filters: null,
      maxResults: 10,
      scoreThreshold: 0,
    });
    expect(
      parseSearch({
        query: ['a', 'b'],
        max_num_results: 50,
        ranking_options: { ranker: 'none', score_threshold: 0.5 },
        rewrite_query: false,
        filters: { type: 'eq', key: 'k', value: 1 },
      }),
    ).toEqual({
      queries: ['a', 'b'],
      filters: { type: 'eq', key: 'k', value: 1 },
      maxResults: 50,
      scoreThreshold: 0.5,
    });
    expect(refusal(() => parseSearch({ query: '' })).param).toBe('query');
    expect(refusal(() => parseSearch({ query: [] })).param).toBe('query');
    expect(refusal(() => parseSearch({ query: 'x', max_num_results: 51 })).param).toBe('max_num_results');
    expect(refusal(() => parseSearch({ query: 'x', ranking_options: { score_threshold: 1.5 } })).param).toBe(
      'ranking_options.score_threshold',
    );
    const rewrite = refusal(() => parseSearch({ query: 'x', rewrite_query: true }));
    expect(rewrite).toMatchObject({ param: 'rewrite_query', status: 400 });
    expect(rewrite.message).toMatch(/not supported/);
  });
});
