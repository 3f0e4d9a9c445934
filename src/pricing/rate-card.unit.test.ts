import { describe, expect, it } from 'vitest';
import { rateRow, VERSIONED_CARDS } from '../../test/fixtures/pricing/pricing.fixtures.js';
import { checkRateRow, compileRateCard, findRate, RateCardError, selectRateCard } from './rate-card.js';
import type { RateCardInput, RateRowInput } from './types.js';

const cardWith = (rows: RateRowInput[], interval: Partial<RateCardInput> = {}): RateCardInput => ({
  card_id: 'c',
  model: 'm',
  revision: 1,
  effective_from: '2025-01-01T00:00:00Z',
  effective_to: null,
  rows,
  ...interval,
});

describe('checkRateRow', () => {
  it.each([
    [{ ...rateRow('r', 'input_token', 'text', '1'), tier: '' }, 'tier'],
    [{ ...rateRow('r', 'input_token', 'text', '1'), meter: 'input_tokens' }, 'meter'],
    [{ ...rateRow('r', 'input_token', 'text', '1'), modality: 'video' }, 'modality'],
    [rateRow('r', 'input_token', 'text', '1', { min: -1 }), 'min_context'],
    [rateRow('r', 'input_token', 'text', '1', { min: 10, max: 9 }), 'max_context'],
    [rateRow('r', 'input_token', 'text', '1', { ttl: '5m' }), 'cache_ttl'],
    [rateRow('r', 'tool_call', 'text', '1'), 'tool_type'],
    [rateRow('r', 'input_token', 'text', '1', { tool: 'web_search' }), 'tool_type'],
    [rateRow('r', 'input_token', 'text', '3e-6'), 'unit_price'],
    [rateRow('r', 'input_token', 'text', ''), 'unit_price'],
    [rateRow('r', 'input_token', 'text', '-0.1'), 'unit_price'],
  ] as [RateRowInput, string][])('refuses a bad %#: field %s', (row, field) => {
    expect(checkRateRow(row)?.field).toBe(field);
  });

  it('accepts a well-formed row', () => {
    expect(checkRateRow(rateRow('r', 'cache_write_token', 'text', '0.00000375', { ttl: '1h' }))).toBeNull();
  });
});

describe('compileRateCard', () => {
  it('refuses a broken row naming card, row and field', () => {
    const error = (() => {
      try {
        compileRateCard(cardWith([rateRow('bad', 'input_token', 'text', 'NaN')]));
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(RateCardError);
    expect(error).toMatchObject({ cardId: 'c', rowId: 'bad', field: 'unit_price' });
  });

  it('refuses bands that overlap beyond a shared edge, and a second unbounded band', () => {
    const overlapping = [
      rateRow('a', 'input_token', 'text', '1', { max: 300 }),
      rateRow('b', 'input_token', 'text', '2', { min: 200 }),
    ];
    expect(() => compileRateCard(cardWith(overlapping))).toThrow(/overlap/);
    const twoOpen = [
      rateRow('a', 'input_token', 'text', '1'),
      rateRow('b', 'input_token', 'text', '2', { min: 5 }),
    ];
    expect(() => compileRateCard(cardWith(twoOpen))).toThrow(/overlap/);
  });

  it('refuses an empty or unreadable interval', () => {
    expect(() => compileRateCard(cardWith([], { effective_to: '2025-01-01T00:00:00Z' }))).toThrow(/after/);
    expect(() => compileRateCard(cardWith([], { effective_from: 'soon' }))).toThrow(/not an instant/);
  });

  it('sorts bands whatever the row order and treats gaps as the band above', () => {
    const card = compileRateCard(
      cardWith([
        rateRow('high', 'input_token', 'text', '0.3', { min: 2000, max: 3000 }),
        rateRow('low', 'input_token', 'text', '0.1', { max: 1000 }),
        rateRow('mid', 'input_token', 'text', '0.2', { min: 1500, max: 2000 }),
      ]),
    );
    const at = (prompt: number) => findRate(card, 'standard', 'input_token', 'text', prompt)?.row.row_id;
    expect([at(0), at(1000), at(1001), at(1500), at(2000), at(2001), at(10_000)]).toEqual([
      'low',
      'low',
      'mid',
      'mid',
      'mid',
      'high',
      'high',
    ]);
  });

  it('freezes what it compiled, so lines cannot rewrite a card', () => {
    const card = compileRateCard(cardWith([rateRow('r', 'input_token', 'text', '1')]));
    const rate = findRate(card, 'standard', 'input_token', 'text', 0);
    expect(Object.isFrozen(rate?.provenance)).toBe(true);
    expect(Object.isFrozen(rate?.row)).toBe(true);
  });
});

describe('selectRateCard', () => {
  const pick = (at: string) => selectRateCard(VERSIONED_CARDS, Date.parse(at))?.card_id;
  it('picks the highest revision in force, from inclusive and to exclusive', () => {
    expect(pick('2024-12-31T23:59:59.999Z')).toBeUndefined();
    expect(pick('2025-01-01T00:00:00Z')).toBe('v1-corrected');
    expect(pick('2025-07-01T00:00:00Z')).toBe('v2');
    expect(pick('2099-01-01T00:00:00Z')).toBe('v2');
  });
});
