import { describe, expect, it } from 'vitest';
import { fieldOf, MAX_STORABLE_DEPTH, unstorableIn, unstorableText } from './storable.js';

// What PostgreSQL's text and jsonb refuse (SPEC 7: such input is a 400 naming the field, not a 500).

describe('storable text', () => {
  it('refuses NUL and unpaired surrogates; keeps everything else, pairs included', () => {
    expect(unstorableText('a\u0000b')).toMatch(/NUL/);
    expect(unstorableText('\ud800')).toMatch(/unpaired surrogate/);
    expect(unstorableText('a\udfffb')).toMatch(/unpaired surrogate/);
    expect(unstorableText('\ude00\ud83d')).toMatch(/unpaired surrogate/);
    for (const ok of ['', 'plain', '😀', '\ud83d\ude00', '\u202e', '\uffff', 'é\u0301', '\u0001'])
      expect(unstorableText(ok)).toBeNull();
  });

  it('names the first value, key or nesting level a store would refuse, by its path', () => {
    expect(unstorableIn({ a: 'ok', b: [1, { c: 'x\u0000' }] })).toEqual({
      path: ['b', 1, 'c'],
      problem: expect.stringMatching(/NUL/),
    });
    expect(unstorableIn({ ok: 1, 'k\ud800': 2 })).toEqual({
      path: ['k\ud800'],
      problem: expect.stringMatching(/^\(as a key\)/),
    });
    expect(unstorableIn({ first: '\u0000', second: '\ud800' })?.path).toEqual(['first']);
    expect(unstorableIn({ a: [true, null, 1.5, 'fine'], b: {} })).toBeNull();
    expect(unstorableIn('\u0000')?.path).toEqual([]);
  });

  it('bounds nesting without recursion: a value 100,000 levels deep is refused, not a stack overflow', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const bad = unstorableIn({ deep });
    expect(bad?.path.length).toBe(MAX_STORABLE_DEPTH);
    expect(bad?.problem).toMatch(/levels deep/);
    let fine: unknown = 'leaf';
    for (let i = 0; i < MAX_STORABLE_DEPTH - 1; i++) fine = [fine];
    expect(unstorableIn({ fine })).toBeNull();
  });

  it('writes a path as a field name', () => {
    expect(fieldOf([])).toBe('body');
    expect(fieldOf(['metadata', 'deployments', 'gpt-4o'])).toBe('metadata.deployments.gpt-4o');
    expect(fieldOf(['messages', 0, 'content'])).toBe('messages.0.content');
  });
});
