import { describe, expect, it } from 'vitest';
import { parseSearchOptions, type SearchHit, toSearchResultItems } from './search.js';

describe('parseSearchOptions', () => {
  it('defaults to 10 results, the auto ranker, no threshold and no filter', () => {
    expect(parseSearchOptions({ query: 'q' })).toEqual({
      ok: true,
      value: { maxNumResults: 10, ranker: 'auto', scoreThreshold: 0, filter: null },
    });
  });

  it('reads max_num_results, ranking_options and filters', () => {
    const body = {
      query: 'q',
      max_num_results: 50,
      ranking_options: { ranker: 'default-2024-11-15', score_threshold: 0.4 },
      filters: { type: 'eq', key: 'a', value: 1 },
    };
    expect(parseSearchOptions(body)).toEqual({
      ok: true,
      value: { maxNumResults: 50, ranker: 'default-2024-11-15', scoreThreshold: 0.4, filter: body.filters },
    });
  });

  it.each([
    [{ max_num_results: 0 }, 'max_num_results'],
    [{ max_num_results: 51 }, 'max_num_results'],
    [{ max_num_results: 2.5 }, 'max_num_results'],
    [{ ranking_options: { ranker: 'best' } }, 'ranking_options.ranker'],
    [{ ranking_options: { score_threshold: 1.5 } }, 'ranking_options.score_threshold'],
    [{ ranking_options: { score_threshold: -0.1 } }, 'ranking_options.score_threshold'],
    [{ ranking_options: { other: 1 } }, 'ranking_options.other'],
    [{ filters: { type: 'eq', key: 'a' } }, 'filters.value'],
  ])('refuses %j naming %s', (body, field) => {
    expect(parseSearchOptions(body)).toMatchObject({ ok: false, field });
  });
});

describe('toSearchResultItems', () => {
  it('renders OpenAI result items and drops hits of files without a name', () => {
    const hits: SearchHit[] = [
      { fileId: 'file_1', chunkIndex: 0, score: 0.9, text: 'one', attributes: { a: 1 } },
      { fileId: 'file_gone', chunkIndex: 0, score: 0.8, text: 'two', attributes: {} },
    ];
    expect(toSearchResultItems(hits, new Map([['file_1', 'doc.pdf']]))).toEqual([
      {
        file_id: 'file_1',
        filename: 'doc.pdf',
        score: 0.9,
        attributes: { a: 1 },
        content: [{ type: 'text', text: 'one' }],
      },
    ]);
  });
});
