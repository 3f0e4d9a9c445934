import { describe, expect, it } from 'vitest';
import { vectorsProblem } from './tenant-embeddings.js';

// Vector store embeddings are stored as they come back: a malformed answer is named (a 502), never
// stored with holes or mixed dimensions.
describe('vectorsProblem', () => {
  it('puts the vectors in input order', () => {
    expect(
      vectorsProblem(
        [
          { index: 1, embedding: [0, 1] },
          { index: 0, embedding: [1, 0] },
        ],
        2,
      ),
    ).toEqual([
      [1, 0],
      [0, 1],
    ]);
  });

  it.each([
    [[{ index: 0, embedding: [1] }], 2, '1 vectors for 2 inputs'],
    [
      [
        { index: 0, embedding: [1] },
        { index: 0, embedding: [1] },
      ],
      2,
      'two vectors for input 0',
    ],
    [
      [
        { index: -1, embedding: [1] },
        { index: 0, embedding: [1] },
      ],
      2,
      'index -1',
    ],
    [
      [
        { index: 0, embedding: [1] },
        { index: 2, embedding: [1] },
      ],
      2,
      'index 2',
    ],
    [[{ index: 0, embedding: 'AAAA' }], 1, 'not a non-empty array'],
    [[{ index: 0, embedding: [] }], 1, 'not a non-empty array'],
    [[{ index: 0, embedding: [1, null] }], 1, 'not a non-empty array'],
    [
      [
        { index: 0, embedding: [1, 2] },
        { index: 1, embedding: [1] },
      ],
      2,
      'vectors of 2 and 1 dimensions',
    ],
  ])('names a malformed answer: %j', (data, inputs, message) => {
    expect(vectorsProblem(data, inputs)).toEqual(expect.stringContaining(message));
  });
});
