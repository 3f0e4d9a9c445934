import { isPlainObject, rejectUnknownKeys } from '../lib/fields.js';
import { invalid, type Validated, valid } from '../lib/validated.js';
import { type Attributes, type Filter, parseFilter } from './filters.js';

/**
 * The search options of POST /v1/vector_stores/{id}/search (SPEC 4.1) in OpenAI's shape, and the
 * result items of its `vector_store.search_results.page`. The query text itself, and its
 * embedding, are the route's; this module reads the rest.
 */

export const DEFAULT_MAX_NUM_RESULTS = 10;
export const MAX_MAX_NUM_RESULTS = 50;

export const RANKERS = ['auto', 'none', 'default-2024-11-15'] as const;
export type Ranker = (typeof RANKERS)[number];

export interface SearchOptions {
  maxNumResults: number;
  /**
   * Accepted for compatibility; every ranker ranks by the cosine similarity of the embeddings
   * (there is no second-pass reranking model), so they return the same order.
   */
  ranker: Ranker;
  /** Hits scoring below this (0..1) are dropped; 0 drops only chunks pointing away from the query. */
  scoreThreshold: number;
  filter: Filter | null;
}

/** Reads `max_num_results`, `ranking_options` and `filters` of a search body (other keys are the route's). */
export const parseSearchOptions = (body: Record<string, unknown>): Validated<SearchOptions> => {
  let maxNumResults = DEFAULT_MAX_NUM_RESULTS;
  const max = body.max_num_results;
  if (max !== undefined && max !== null) {
    if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_MAX_NUM_RESULTS) {
      return invalid('max_num_results', `must be an integer between 1 and ${MAX_MAX_NUM_RESULTS}`);
    }
    maxNumResults = max;
  }
  let ranker: Ranker = 'auto';
  let scoreThreshold = 0;
  const ranking = body.ranking_options;
  if (ranking !== undefined && ranking !== null) {
    if (!isPlainObject(ranking)) return invalid('ranking_options', 'must be an object');
    const unknown = rejectUnknownKeys(
      'ranking_options',
      ranking,
      ['ranker', 'score_threshold'],
      'ranking_options',
    );
    if (!unknown.ok) return unknown;
    if (ranking.ranker !== undefined && ranking.ranker !== null) {
      if (typeof ranking.ranker !== 'string' || !(RANKERS as readonly string[]).includes(ranking.ranker)) {
        return invalid('ranking_options.ranker', `must be one of ${RANKERS.join(', ')}`);
      }
      ranker = ranking.ranker as Ranker;
    }
    const threshold = ranking.score_threshold;
    if (threshold !== undefined && threshold !== null) {
      if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold < 0 || threshold > 1) {
        return invalid('ranking_options.score_threshold', 'must be a number between 0 and 1');
      }
      scoreThreshold = threshold;
    }
  }
  let filter: Filter | null = null;
  if (body.filters !== undefined && body.filters !== null) {
    const parsed = parseFilter(body.filters, 'filters');
    if (!parsed.ok) return parsed;
    filter = parsed.value;
  }
  return valid({ maxNumResults, ranker, scoreThreshold, filter });
};

/** One hit as the engine returns it (store.ts). */
export interface SearchHit {
  fileId: string;
  chunkIndex: number;
  /** Cosine similarity of the chunk's embedding and the query's (the best one, for several). */
  score: number;
  text: string;
  attributes: Attributes;
}

/** An item of `vector_store.search_results.page.data`. */
export interface SearchResultItem {
  file_id: string;
  filename: string;
  score: number;
  attributes: Attributes;
  content: { type: 'text'; text: string }[];
}

/**
 * Hits in OpenAI's item shape. `filenames` maps file ids to names (the route holds the file
 * metadata); a file missing from it (deleted meanwhile) has its hits dropped.
 */
export const toSearchResultItems = (
  hits: readonly SearchHit[],
  filenames: ReadonlyMap<string, string>,
): SearchResultItem[] =>
  hits.flatMap((hit) => {
    const filename = filenames.get(hit.fileId);
    if (filename === undefined) return [];
    return [
      {
        file_id: hit.fileId,
        filename,
        score: hit.score,
        attributes: hit.attributes,
        content: [{ type: 'text' as const, text: hit.text }],
      },
    ];
  });
