import type { ApiKeyIdentity } from './auth/api-key-cache.js';

/**
 * What hosted file_search (file-search.ts, SPEC 4.1) asks of the vector stores: a port of the
 * request path's dependencies (GatewayDeps.fileSearch), apart from the code that uses it.
 */
export interface FileSearchHit {
  file_id: string;
  filename: string;
  score: number;
  attributes: Record<string, string | number | boolean> | null;
  text: string;
}

export interface FileSearchQuery {
  vectorStoreIds: string[];
  query: string;
  maxNumResults: number;
  filters: unknown;
  rankingOptions: unknown;
}

/** Search over a project's vector stores; a store the key's project cannot see rejects with a 404 ServiceError. */
export interface FileSearchPort {
  search(key: ApiKeyIdentity, query: FileSearchQuery): Promise<FileSearchHit[]>;
}
