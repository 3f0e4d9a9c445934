import { chunkText, type StaticChunkingStrategy } from './chunking.js';
import { type ExtractionError, type ExtractionInput, extractFileText } from './extract.js';
import type { Attributes } from './filters.js';
import { newGeneration, type VectorChunkStore, type VectorScope } from './store.js';

/**
 * One file into one vector store: extract, chunk, embed, write, publish. The caller (the attach
 * orchestration) supplies the embedding function, which goes through the gateway's own request
 * pipeline; this module never calls a provider. A failure that describes the file comes back as
 * OpenAI's `last_error` ({code, message}); a failure of the engine or of `embed` is thrown, for the
 * caller to retry (with a new generation) or to report as `server_error`.
 */

/** Embeddings of `texts`, in order, one vector each, all of one dimension. */
export type EmbedTexts = (texts: string[]) => Promise<ArrayLike<number>[]>;

export interface IndexFileInput extends ExtractionInput {
  scope: VectorScope;
  fileId: string;
  chunking: StaticChunkingStrategy;
  attributes: Attributes;
  embed: EmbedTexts;
  /** Chunks per embedding call (OpenAI accepts up to 2,048 inputs a request). */
  embedBatch?: number;
  /** Called after each batch is written, for progress reporting. */
  onProgress?: (done: number, total: number) => void;
}

export type IndexFileResult =
  | { ok: true; generation: bigint; chunkCount: number; tokenCount: number }
  | { ok: false; error: ExtractionError };

export const indexFile = async (store: VectorChunkStore, input: IndexFileInput): Promise<IndexFileResult> => {
  const extracted = await extractFileText(input);
  if (!extracted.ok) return extracted;
  const chunks = chunkText(extracted.text, input.chunking);
  const generation = newGeneration();
  const batch = input.embedBatch ?? 256;
  let tokenCount = 0;
  let dimensions: number | null = null;
  for (let start = 0; start < chunks.length; start += batch) {
    const slice = chunks.slice(start, start + batch);
    const vectors = await input.embed(slice.map((c) => c.text));
    if (vectors.length !== slice.length) {
      throw new Error(`embed returned ${vectors.length} vectors for ${slice.length} texts`);
    }
    for (const v of vectors) {
      dimensions ??= v.length;
      if (v.length !== dimensions || v.length === 0) {
        throw new Error(`embed returned vectors of ${v.length} and ${dimensions} dimensions`);
      }
    }
    await store.insertChunks(
      input.scope,
      input.fileId,
      generation,
      slice.map((c, i) => ({
        chunkIndex: c.index,
        text: c.text,
        tokenCount: c.tokens,
        embedding: vectors[i]!,
      })),
    );
    for (const c of slice) tokenCount += c.tokens;
    input.onProgress?.(Math.min(start + batch, chunks.length), chunks.length);
  }
  await store.publishFile(input.scope, {
    fileId: input.fileId,
    generation,
    attributes: input.attributes,
    chunkCount: chunks.length,
    tokenCount,
  });
  return { ok: true, generation, chunkCount: chunks.length, tokenCount };
};
