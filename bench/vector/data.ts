/**
 * Synthetic inputs of bench/vector: documents to attach, a fake embedding function, and the SQL
 * that generates clustered embeddings inside the engine for the large search sets.
 */

/** FNV-1a over UTF-16 code units: a stable seed per text. */
const fnv1a = (text: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
};

/**
 * The fake embedding model: a deterministic pseudo-random unit vector per text (xorshift32, sum of
 * uniforms for a near-normal coordinate), so identical texts embed identically and attach
 * throughput is measured without a provider.
 */
export const fakeEmbed =
  (dimensions: number) =>
  async (texts: string[]): Promise<Float32Array[]> =>
    texts.map((text) => {
      let x = fnv1a(text) || 1;
      const next = () => {
        x ^= x << 13;
        x >>>= 0;
        x ^= x >>> 17;
        x ^= x << 5;
        x >>>= 0;
        return x / 4294967296;
      };
      const v = new Float32Array(dimensions);
      let norm = 0;
      for (let i = 0; i < dimensions; i++) {
        const c = next() + next() + next() - 1.5;
        v[i] = c;
        norm += c * c;
      }
      const scale = 1 / Math.sqrt(norm);
      for (let i = 0; i < dimensions; i++) v[i]! *= scale;
      return v;
    });

const WORDS = (
  'vector store chunk embedding search cosine similarity gateway tenant project organization file ' +
  'attach detach filter attribute score threshold ranking query model token overlap window text ' +
  'document extract markdown json portable format page paragraph sentence index cluster signature ' +
  'hamming distance exact approximate neighbour latency throughput benchmark machine core memory the ' +
  'a of and to in is for with on that by this be are from at as it or an'
).split(' ');

/** A Markdown document of about `bytes` bytes: headings, paragraphs of pseudo-English, a list. */
export const markdownDocument = (seed: number, bytes: number): string => {
  let x = seed * 2654435761 + 1;
  const pick = () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return WORDS[x % WORDS.length]!;
  };
  const parts: string[] = [`# Document ${seed}\n`];
  let size = parts[0]!.length;
  let section = 0;
  while (size < bytes) {
    const words = Array.from({ length: 60 + (x % 60) }, pick);
    const paragraph =
      section % 5 === 0
        ? `\n## Section ${section}\n\n- ${words.slice(0, 8).join(' ')}\n- ${words.slice(8, 16).join(' ')}\n`
        : `\n${words.join(' ')}.\n`;
    parts.push(paragraph);
    size += paragraph.length;
    section += 1;
  }
  return parts.join('');
};

/**
 * SQL for a clustered unit-ish embedding of `dimensions` floats for row `n` (an SQL expression):
 * `clusters` centre directions plus noise of 0.6 the centre's scale, a shape closer to real
 * embeddings (topics) than uniform noise, which no index can search well.
 */
export const clusteredEmbeddingSql = (n: string, dimensions: number, clusters: number): string => {
  const raw = `arrayMap(i -> ((cityHash64(${n} % ${clusters}, i) % 2000001) / 1e6 - 1) + 0.6 * ((cityHash64(${n}, i, 7) % 2000001) / 1e6 - 1), range(${dimensions}))`;
  // The norm does not depend on x: the engine computes it once per row, not per element.
  return `arrayMap(x -> toFloat32(x / sqrt(arraySum(y -> y * y, ${raw}))), ${raw})`;
};
