import { z } from 'zod';
import { parseLimit, parseOrder, queryRecord, singleParam } from '../files/list-query.js';
import { fileIdTime } from '../files/model.js';
import { ServiceError } from '../lib/errors.js';
import { fieldOf, unstorableIn } from '../lib/storable.js';
import {
  type Attributes,
  AUTO_CHUNKING,
  type ChunkingStrategy,
  FILE_STATUSES,
  type FileStatus,
  type Metadata,
  vectorStoreIdTime,
} from './model.js';
import type { Position } from './store.js';

/**
 * The bodies and query strings of /v1/vector_stores (OpenAI's Vector Stores API), read once at the
 * edge: a value this service cannot honour is a 400 naming the parameter, never a 500 later on.
 * Unknown body fields are refused like OpenAI refuses them, so a misspelt option is not ignored.
 */

const invalid = (param: string, message: string) =>
  new ServiceError('invalid_request_error', message, { param });

/** OpenAI's bounds on metadata and attributes: 16 pairs, keys of 64 characters, strings of 512. */
const MAX_PAIRS = 16;
const MAX_KEY = 64;
const MAX_VALUE = 512;
/** Files one create may attach at once (OpenAI's file_ids bound). */
const MAX_FILE_IDS = 500;
/** Files one file batch may attach (OpenAI's bound on file_ids and files). */
const MAX_BATCH_FILES = 2_000;
/** Queries one search may embed at once. */
const MAX_QUERIES = 16;

const pairs = <V extends z.ZodType>(value: V, what: string) =>
  z
    .record(z.string().max(MAX_KEY, `keys must be at most ${MAX_KEY} characters`), value)
    .refine((r) => Object.keys(r).length <= MAX_PAIRS, `${what} holds at most ${MAX_PAIRS} pairs`);

const metadata = pairs(
  z.string(`values must be strings`).max(MAX_VALUE, `values must be at most ${MAX_VALUE} characters`),
  'metadata',
);
const attributes = pairs(
  z.union(
    [z.string().max(MAX_VALUE, `strings must be at most ${MAX_VALUE} characters`), z.number(), z.boolean()],
    {
      error: 'values must be strings, numbers or booleans',
    },
  ),
  'attributes',
);

const expiresAfter = z.strictObject({
  anchor: z.literal('last_active_at', "the only anchor is 'last_active_at'"),
  days: z.int('days must be an integer from 1 to 365').min(1).max(365),
});

const chunkingStrategy = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('auto') }),
    z.strictObject({
      type: z.literal('static'),
      static: z
        .strictObject({
          max_chunk_size_tokens: z.int().min(100).max(4096),
          chunk_overlap_tokens: z.int().min(0),
        })
        .refine((s) => s.chunk_overlap_tokens <= s.max_chunk_size_tokens / 2, {
          message: 'chunk_overlap_tokens must not exceed half of max_chunk_size_tokens',
          path: ['chunk_overlap_tokens'],
        }),
    }),
  ],
  { error: "type must be 'auto' or 'static'" },
);

const fileIdSchema = z.string().min(1).max(128);

const createStoreSchema = z.strictObject({
  name: z.string().max(256).optional(),
  description: z.string().max(512).optional(),
  file_ids: z.array(fileIdSchema).max(MAX_FILE_IDS).optional(),
  expires_after: expiresAfter.nullish(),
  chunking_strategy: chunkingStrategy.optional(),
  metadata: metadata.nullish(),
  /** Service extension: the model the store embeds with, fixed for its life. */
  // One model, named exactly: a fallback list or svc/auto could embed one file with another model
  // (another vector space, perhaps another dimension) than the store's other files and queries.
  embedding_model: z
    .string()
    .min(1)
    .max(256)
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/,
      'embedding_model names one model: no spaces and no fallback list',
    )
    .refine((m) => m !== 'svc/auto', 'embedding_model names one model, not svc/auto')
    .optional(),
});

const updateStoreSchema = z.strictObject({
  name: z.string().max(256).nullish(),
  expires_after: expiresAfter.nullish(),
  metadata: metadata.nullish(),
});

const attachSchema = z.strictObject({
  file_id: fileIdSchema,
  attributes: attributes.nullish(),
  chunking_strategy: chunkingStrategy.optional(),
});

const batchSchema = z.strictObject({
  file_ids: z.array(fileIdSchema).min(1).max(MAX_BATCH_FILES).optional(),
  files: z.array(attachSchema).min(1).max(MAX_BATCH_FILES).optional(),
  attributes: attributes.nullish(),
  chunking_strategy: chunkingStrategy.optional(),
});

const updateFileSchema = z.strictObject({ attributes: attributes.nullable() });

const searchSchema = z.strictObject({
  query: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(MAX_QUERIES)], {
    error: `query must be a non-empty string or an array of 1 to ${MAX_QUERIES} non-empty strings`,
  }),
  filters: z.unknown().optional(),
  max_num_results: z.int().min(1).max(50).optional(),
  ranking_options: z
    .strictObject({
      ranker: z.enum(['none', 'auto', 'default-2024-11-15']).optional(),
      score_threshold: z.number().min(0).max(1).optional(),
    })
    .optional(),
  rewrite_query: z.boolean().optional(),
});

/** Parses with zod after checking every string can be stored; the first problem is a 400 naming its field. */
const parse = <T extends z.ZodType>(schema: T, body: unknown): z.infer<T> => {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalid('body', 'the request body must be a JSON object');
  const bad = unstorableIn(body);
  if (bad) throw invalid(fieldOf(bad.path), `${fieldOf(bad.path)} ${bad.problem}`);
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const field = fieldOf([...(issue.path as (string | number)[]), issue.keys[0]!]);
    throw invalid(field, `unrecognized request argument supplied: ${field}`);
  }
  const field = fieldOf(issue.path as (string | number)[]);
  if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined'))
    throw invalid(field, `missing required parameter: ${field}`);
  throw invalid(field, `${field}: ${issue.message}`);
};

const chunkingOf = (c: z.infer<typeof chunkingStrategy> | undefined): ChunkingStrategy =>
  c?.type === 'static'
    ? {
        maxChunkSizeTokens: c.static.max_chunk_size_tokens,
        chunkOverlapTokens: c.static.chunk_overlap_tokens,
      }
    : AUTO_CHUNKING;

export interface CreateStoreRequest {
  name: string;
  description: string | null;
  fileIds: string[];
  expiresAfterDays: number | null;
  chunking: ChunkingStrategy;
  metadata: Metadata;
  embeddingModel: string | null;
}

export const parseCreateStore = (body: unknown): CreateStoreRequest => {
  const b = parse(createStoreSchema, body ?? {});
  return {
    name: b.name ?? '',
    description: b.description ?? null,
    fileIds: [...new Set(b.file_ids ?? [])],
    expiresAfterDays: b.expires_after?.days ?? null,
    chunking: chunkingOf(b.chunking_strategy),
    metadata: b.metadata ?? {},
    embeddingModel: b.embedding_model ?? null,
  };
};

export interface UpdateStoreRequest {
  name?: string;
  expiresAfterDays?: number | null;
  metadata?: Metadata;
}

/** Fields left out stay as they are; a null expiry removes it, null metadata clears it. */
export const parseUpdateStore = (body: unknown): UpdateStoreRequest => {
  const b = parse(updateStoreSchema, body ?? {});
  return {
    ...(b.name !== undefined ? { name: b.name ?? '' } : {}),
    ...(b.expires_after !== undefined ? { expiresAfterDays: b.expires_after?.days ?? null } : {}),
    ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
  };
};

export interface AttachRequest {
  fileId: string;
  attributes: Attributes;
  chunking: ChunkingStrategy;
}

export const parseAttach = (body: unknown): AttachRequest => {
  const b = parse(attachSchema, body);
  return { fileId: b.file_id, attributes: b.attributes ?? {}, chunking: chunkingOf(b.chunking_strategy) };
};

/**
 * `POST /v1/vector_stores/{id}/file_batches`: `file_ids` with one `attributes` and
 * `chunking_strategy` for all, or `files`, each with its own (OpenAI: mutually exclusive; the
 * batch-wide two are refused beside `files` rather than ignored). A file named twice is attached
 * once, as first named.
 */
export const parseCreateBatch = (body: unknown): AttachRequest[] => {
  const b = parse(batchSchema, body);
  if ((b.file_ids === undefined) === (b.files === undefined))
    throw invalid(
      b.file_ids === undefined ? 'file_ids' : 'files',
      'give exactly one of file_ids and files: file_ids for files that share attributes and chunking_strategy, files for each its own',
    );
  if (b.files && (b.attributes != null || b.chunking_strategy !== undefined))
    throw invalid(
      b.attributes != null ? 'attributes' : 'chunking_strategy',
      'attributes and chunking_strategy apply to file_ids; with files, give them for each file',
    );
  const requested = b.files
    ? b.files.map((f) => ({
        fileId: f.file_id,
        attributes: f.attributes ?? {},
        chunking: chunkingOf(f.chunking_strategy),
      }))
    : b.file_ids!.map((fileId) => ({
        fileId,
        attributes: b.attributes ?? {},
        chunking: chunkingOf(b.chunking_strategy),
      }));
  const seen = new Set<string>();
  return requested.filter((r) => !seen.has(r.fileId) && seen.add(r.fileId));
};

export const parseUpdateFile = (body: unknown): Attributes => parse(updateFileSchema, body).attributes ?? {};

export interface SearchRequest {
  queries: string[];
  /** The raw filter, for the filter port to read; null when none was given. */
  filters: unknown;
  maxResults: number;
  scoreThreshold: number;
}

/**
 * A search. `ranking_options.ranker` is accepted and does not change the order (results are ranked
 * by similarity alone); `rewrite_query: true` is refused, since no query is rewritten here.
 */
export const parseSearch = (body: unknown): SearchRequest => {
  const b = parse(searchSchema, body);
  if (b.rewrite_query === true)
    throw invalid(
      'rewrite_query',
      'rewrite_query is not supported by this gateway: the query is searched as given; send false or leave it out',
    );
  return {
    queries: typeof b.query === 'string' ? [b.query] : b.query,
    filters: b.filters ?? null,
    maxResults: b.max_num_results ?? 10,
    scoreThreshold: b.ranking_options?.score_threshold ?? 0,
  };
};

/** OpenAI's bounds on a vector stores page: 1 to 100, 20 by default. */
export const PAGE_LIMIT_MAX = 100;
export const PAGE_LIMIT_DEFAULT = 20;

export interface ListRequest {
  limit: number;
  order: 'asc' | 'desc';
  after: string | null;
  before: string | null;
}

const cursor = (q: Record<string, unknown>, name: 'after' | 'before'): string | null => {
  const value = singleParam(q, name);
  if (value === undefined || value === '') return null;
  return value;
};

const listOf = (query: unknown): ListRequest & { q: Record<string, unknown> } => {
  const q = queryRecord(query);
  return {
    q,
    limit: parseLimit(q, PAGE_LIMIT_MAX, PAGE_LIMIT_DEFAULT),
    order: parseOrder(q),
    after: cursor(q, 'after'),
    before: cursor(q, 'before'),
  };
};

/**
 * `GET /v1/vector_stores?limit=&order=&after=&before=`. Store ids carry their creation time, so a
 * cursor is a position, as for files (src/files/list-query.ts): any well-formed id works, whether
 * or not it still exists or ever was the caller's.
 */
export const parseStoreList = (
  query: unknown,
): { limit: number; order: 'asc' | 'desc'; after: Position | null; before: Position | null } => {
  const l = listOf(query);
  const position = (name: 'after' | 'before', id: string | null): Position | null => {
    if (id === null) return null;
    const createdAt = vectorStoreIdTime(id);
    if (!createdAt)
      throw invalid(
        name,
        `${name} must be the id of a vector store (vs_...), as in first_id or last_id; got ${JSON.stringify(id.slice(0, 100))}`,
      );
    return { id, createdAt };
  };
  return {
    limit: l.limit,
    order: l.order,
    after: position('after', l.after),
    before: position('before', l.before),
  };
};

/**
 * `GET /v1/vector_stores/{id}/files?limit=&order=&after=&before=&filter=`. The cursors are file ids
 * of the store; the service turns them into positions (their attach time).
 */
export type FileListRequest = ListRequest & { status: FileStatus | null };

export const parseFileList = (query: unknown): FileListRequest => {
  const l = listOf(query);
  for (const name of ['after', 'before'] as const) {
    const id = l[name];
    if (id !== null && !fileIdTime(id))
      throw invalid(
        name,
        `${name} must be the id of a file of this vector store (file-...), as in first_id or last_id; got ${JSON.stringify(id.slice(0, 100))}`,
      );
  }
  const filter = singleParam(l.q, 'filter') ?? null;
  if (filter !== null && !(FILE_STATUSES as readonly string[]).includes(filter))
    throw invalid(
      'filter',
      `filter must be one of ${FILE_STATUSES.join(', ')}; got ${JSON.stringify(filter)}`,
    );
  return {
    limit: l.limit,
    order: l.order,
    after: l.after,
    before: l.before,
    status: filter as FileStatus | null,
  };
};
