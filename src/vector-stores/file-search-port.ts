import type { FileSearchPort } from '../gateway/file-search-port.js';
import { parseSearch } from './requests.js';
import type { VectorStores } from './service.js';

/**
 * Hosted file_search on /v1/responses (SPEC 4.1, gateway/file-search.ts) served by the vector
 * stores: the tool's query, filters, ranking options and result count are read as a search body
 * (the same bounds and 400s), and the named stores are searched as the caller's, with one
 * embeddings request of the caller's key per embedding model among them.
 */
export const vectorStoresFileSearch = (stores: VectorStores): FileSearchPort => ({
  search: async (key, q) => {
    const request = parseSearch({
      query: q.query,
      max_num_results: q.maxNumResults,
      ...(q.filters === undefined || q.filters === null ? {} : { filters: q.filters }),
      ...(q.rankingOptions === undefined || q.rankingOptions === null
        ? {}
        : { ranking_options: q.rankingOptions }),
    });
    const results = await stores.searchStores(key, q.vectorStoreIds, request);
    return results.map((r) => ({
      file_id: r.file_id,
      filename: r.filename,
      score: r.score,
      attributes: r.attributes,
      text: r.content.map((c) => c.text).join('\n'),
    }));
  },
});
