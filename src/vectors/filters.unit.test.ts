import { describe, expect, it } from 'vitest';
import {
  attributeColumns,
  compileFilter,
  type Filter,
  matchesFilter,
  parseAttributes,
  parseFilter,
  SqlParams,
} from './filters.js';

describe('parseAttributes', () => {
  it('accepts up to 16 string, number and boolean values', () => {
    const sixteen = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`k${i}`, i % 2 === 0 ? `v${i}` : i]),
    );
    expect(parseAttributes(sixteen)).toEqual({ ok: true, value: sixteen });
    expect(parseAttributes(undefined)).toEqual({ ok: true, value: {} });
    expect(parseAttributes({ a: true, b: 'x'.repeat(512) }).ok).toBe(true);
  });

  it.each([
    [Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 1])), 'attributes', 'at most 16'],
    [{ ['k'.repeat(65)]: 1 }, 'attributes', '1 to 64'],
    [{ a: 'x'.repeat(513) }, 'attributes.a', 'at most 512'],
    [{ a: null }, 'attributes.a', 'string, a number or a boolean'],
    [{ a: [1] }, 'attributes.a', 'string, a number or a boolean'],
    [{ a: Number.NaN }, 'attributes.a', 'finite'],
    [[1], 'attributes', 'object'],
  ])('refuses %j', (value, field, words) => {
    const result = parseAttributes(value);
    expect(result).toMatchObject({ ok: false, field });
    if (!result.ok) expect(result.message).toContain(words);
  });

  it('splits values by type for the map columns', () => {
    expect(attributeColumns({ s: 'x', n: 2.5, b: false })).toEqual({
      attr_string: { s: 'x' },
      attr_number: { n: 2.5 },
      attr_bool: { b: false },
    });
  });
});

describe('parseFilter', () => {
  it('accepts comparison and nested compound filters', () => {
    const filter = {
      type: 'and',
      filters: [
        { type: 'eq', key: 'a', value: 'x' },
        {
          type: 'or',
          filters: [
            { type: 'gte', key: 'n', value: 3 },
            { type: 'nin', key: 'c', value: ['p', 2] },
          ],
        },
      ],
    };
    expect(parseFilter(filter)).toEqual({ ok: true, value: filter });
  });

  it.each([
    [{ type: 'like', key: 'a', value: 'x' }, 'filters.type'],
    [{ type: 'eq', value: 'x' }, 'filters.key'],
    [{ type: 'eq', key: 'a', value: null }, 'filters.value'],
    [{ type: 'eq', key: 'a', value: { x: 1 } }, 'filters.value'],
    [{ type: 'gt', key: 'a', value: true }, 'filters.value'],
    [{ type: 'in', key: 'a', value: 'x' }, 'filters.value'],
    [{ type: 'in', key: 'a', value: [true] }, 'filters.value'],
    [{ type: 'and', filters: [] }, 'filters.filters'],
    [{ type: 'or', filters: [{ type: 'eq', key: 'a', value: 1 }, 'x'] }, 'filters.filters[1]'],
  ])('refuses %j naming %s', (value, field) => {
    expect(parseFilter(value)).toMatchObject({ ok: false, field });
  });

  it('bounds depth and size', () => {
    let deep: unknown = { type: 'eq', key: 'a', value: 1 };
    for (let i = 0; i < 10; i++) deep = { type: 'and', filters: [deep] };
    expect(parseFilter(deep).ok).toBe(false);
    const wide = {
      type: 'or',
      filters: Array.from({ length: 200 }, () => ({ type: 'eq', key: 'a', value: 1 })),
    };
    expect(parseFilter(wide).ok).toBe(false);
  });
});

describe('compileFilter', () => {
  it('binds every key and value as a parameter, never in the SQL text', () => {
    const params = new SqlParams('f');
    const hostile = "x' OR 1=1 --";
    const filter: Filter = {
      type: 'or',
      filters: [
        { type: 'eq', key: hostile, value: hostile },
        { type: 'in', key: hostile, value: [hostile, 1] },
        { type: 'ne', key: 'flag', value: true },
      ],
    };
    const sql = compileFilter(filter, params);
    expect(sql).not.toContain(hostile);
    expect(sql).not.toContain("'");
    expect(Object.values(params.values)).toContain(hostile);
    expect(params.values).toMatchObject({ f3: [hostile], f5: [1], f7: true });
    expect(sql).toBe(
      '((mapContains(attr_string, {f0:String}) AND attr_string[{f0:String}] = {f1:String}) OR ' +
        '((mapContains(attr_string, {f2:String}) AND has({f3:Array(String)}, attr_string[{f2:String}])) OR ' +
        '(mapContains(attr_number, {f4:String}) AND has({f5:Array(Float64)}, attr_number[{f4:String}]))) OR ' +
        'NOT ((mapContains(attr_bool, {f6:String}) AND attr_bool[{f6:String}] = {f7:Bool})))',
    );
    expect(compileFilter(null, params)).toBe('true');
    expect(compileFilter({ type: 'in', key: 'a', value: [] }, params)).toBe('false');
  });
});

describe('matchesFilter (the reference for the SQL)', () => {
  const attrs = { author: 'ada', year: 2024, draft: false, date: '2024-05-01' };
  it.each<[Filter, boolean]>([
    [{ type: 'eq', key: 'author', value: 'ada' }, true],
    [{ type: 'eq', key: 'year', value: '2024' }, false],
    [{ type: 'ne', key: 'missing', value: 'x' }, true],
    [{ type: 'gt', key: 'date', value: '2024-01-31' }, true],
    [{ type: 'lt', key: 'year', value: 2024 }, false],
    [{ type: 'lte', key: 'year', value: 2024 }, true],
    [{ type: 'eq', key: 'draft', value: false }, true],
    [{ type: 'in', key: 'year', value: [2023, 2024] }, true],
    [{ type: 'nin', key: 'missing', value: ['x'] }, true],
    [
      {
        type: 'and',
        filters: [
          { type: 'eq', key: 'author', value: 'ada' },
          { type: 'gt', key: 'year', value: 2030 },
        ],
      },
      false,
    ],
    [
      {
        type: 'or',
        filters: [
          { type: 'eq', key: 'author', value: 'bob' },
          { type: 'gt', key: 'year', value: 2000 },
        ],
      },
      true,
    ],
  ])('%j -> %s', (filter, expected) => {
    expect(matchesFilter(filter, attrs)).toBe(expected);
  });
});
