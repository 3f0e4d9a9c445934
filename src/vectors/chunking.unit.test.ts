import { describe, expect, it } from 'vitest';
import {
  chunkText,
  countTokens,
  DEFAULT_CHUNKING_STRATEGY,
  parseChunkingStrategy,
  type StaticChunkingStrategy,
  tokenEnds,
} from './chunking.js';

const statik = (max: number, overlap: number): StaticChunkingStrategy => ({
  type: 'static',
  static: { max_chunk_size_tokens: max, chunk_overlap_tokens: overlap },
});

describe('parseChunkingStrategy', () => {
  it('resolves absent and auto to 800 tokens overlapping by 400', () => {
    expect(parseChunkingStrategy(undefined)).toEqual({ ok: true, value: statik(800, 400) });
    expect(parseChunkingStrategy({ type: 'auto' })).toEqual({ ok: true, value: DEFAULT_CHUNKING_STRATEGY });
  });

  it('accepts static within OpenAI bounds', () => {
    const body = { type: 'static', static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 50 } };
    expect(parseChunkingStrategy(body)).toEqual({ ok: true, value: statik(100, 50) });
    expect(parseChunkingStrategy(statik(4096, 0))).toEqual({ ok: true, value: statik(4096, 0) });
  });

  it.each([
    [
      { type: 'static', static: { max_chunk_size_tokens: 99, chunk_overlap_tokens: 0 } },
      'chunking_strategy.static.max_chunk_size_tokens',
      '100 and 4096',
    ],
    [
      { type: 'static', static: { max_chunk_size_tokens: 4097, chunk_overlap_tokens: 0 } },
      'chunking_strategy.static.max_chunk_size_tokens',
      '100 and 4096',
    ],
    [
      { type: 'static', static: { max_chunk_size_tokens: 800.5, chunk_overlap_tokens: 0 } },
      'chunking_strategy.static.max_chunk_size_tokens',
      'integer',
    ],
    [
      { type: 'static', static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 401 } },
      'chunking_strategy.static.chunk_overlap_tokens',
      'half',
    ],
    [
      { type: 'static', static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: -1 } },
      'chunking_strategy.static.chunk_overlap_tokens',
      'between',
    ],
    [
      { type: 'static', static: { max_chunk_size_tokens: 800 } },
      'chunking_strategy.static.chunk_overlap_tokens',
      'required',
    ],
    [{ type: 'static' }, 'chunking_strategy.static', 'object'],
    [
      { type: 'static', static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 0, extra: 1 } },
      'chunking_strategy.static.extra',
      'not a known field',
    ],
    [{ type: 'other' }, 'chunking_strategy.type', "'auto' or 'static'"],
    [{ type: 'auto', static: {} }, 'chunking_strategy.static', 'not a known field'],
    ['auto', 'chunking_strategy', 'object'],
  ])('refuses %j naming the parameter', (body, field, words) => {
    const result = parseChunkingStrategy(body);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.field).toBe(field);
    expect(result.message.startsWith(field)).toBe(true);
    expect(result.message).toContain(words);
  });
});

describe('token approximation', () => {
  it('counts words, numbers, punctuation and wide scripts deterministically', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello')).toBe(1);
    expect(countTokens('Hello world')).toBe(2);
    expect(countTokens('encJsonRow')).toBe(3); // 10 letters are 2 tokens, but 2 case changes make 3
    expect(countTokens('12345678')).toBe(3); // digits in groups of three
    expect(countTokens('向量存储')).toBe(4);
    expect(countTokens('a, b.')).toBe(4);
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
    expect(countTokens(text)).toBe(countTokens(text));
  });

  it('tokens tile the text exactly, without splitting a surrogate pair', () => {
    const text = 'Ünïcödé 😀😀😀😀😀😀 text\n\n  indented {"json": [1, 2, 3]} aGVsbG8gd29ybGQ= 日本語';
    const ends = tokenEnds(text);
    expect(ends.length).toBe(countTokens(text));
    expect(ends[ends.length - 1]).toBe(text.length);
    let previous = 0;
    for (const end of ends) {
      expect(end).toBeGreaterThan(previous);
      const code = text.charCodeAt(end - 1);
      expect(code >= 0xd800 && code <= 0xdbff).toBe(false);
      previous = end;
    }
  });
});

describe('chunkText', () => {
  const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

  it('keeps a short text whole and drops whitespace-only text', () => {
    expect(chunkText('A short note.', statik(100, 50))).toEqual([
      { index: 0, text: 'A short note.', tokens: 4 },
    ]);
    expect(chunkText('   \n\n  ', statik(100, 0))).toEqual([]);
    expect(chunkText('', DEFAULT_CHUNKING_STRATEGY)).toEqual([]);
  });

  it('cuts windows of max tokens that start max - overlap tokens apart', () => {
    // "w0" is one piece of 1 letter-token + 1 digit-token; " w1" likewise.
    const text = words(500);
    const total = countTokens(text);
    const chunks = chunkText(text, statik(100, 40));
    expect(chunks.map((c) => c.index)).toEqual(chunks.map((_, i) => i));
    expect(chunks.slice(0, -1).every((c) => c.tokens === 100)).toBe(true);
    expect(chunks.length).toBe(Math.ceil((total - 100) / 60) + 1);
    // Consecutive chunks share exactly the overlap: the next one starts 60 tokens in.
    const ends = tokenEnds(text);
    expect(chunks[1]!.text).toBe(text.slice(ends[59], ends[159]));
    expect(chunks[0]!.text.endsWith(chunks[1]!.text.slice(0, ends[99]! - ends[59]!))).toBe(true);
    expect(text.endsWith(chunks.at(-1)!.text)).toBe(true);
  });

  it('without overlap the chunks concatenate back to the text', () => {
    const text = `# Title\n\n${words(1000)}\n\nEnd.`;
    const chunks = chunkText(text, statik(128, 0));
    expect(chunks.map((c) => c.text).join('')).toBe(text);
  });

  it('refuses a strategy whose overlap leaves no progress', () => {
    expect(() => chunkText('x', statik(100, 100))).toThrow(RangeError);
  });
});
