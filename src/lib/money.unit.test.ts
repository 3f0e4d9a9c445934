import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addUsd,
  compareUsd,
  divideRounded,
  formatUsd,
  formatUsdFixed,
  isNegativeUsd,
  isZeroUsd,
  MoneyError,
  maxUsd,
  minUsd,
  mulUsd,
  negateUsd,
  parseUsd,
  perMillionToPerToken,
  perTokenToPerMillion,
  roundUsd,
  subUsd,
  sumUsd,
  tryParseUsd,
  USD_SCALE,
  type Usd,
  usdFromAtto,
} from './money.js';

const CANONICAL = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/;
const fmt = formatUsd;
const p = parseUsd;

describe('parseUsd / formatUsd', () => {
  it.each([
    ['0', '0'],
    ['-0', '0'],
    ['0.000', '0'],
    ['007.50', '7.5'],
    ['1.10', '1.1'],
    ['-12.5', '-12.5'],
    ['0.000000075', '0.000000075'],
    ['0.000000000000000001', '0.000000000000000001'],
    ['3.0000000000000000000000', '3'],
    ['123456789012345678901234567890', '123456789012345678901234567890'],
  ])('%s reads back as %s', (text, canonical) => {
    expect(fmt(p(text))).toBe(canonical);
  });

  it.each([
    ['', 'empty'],
    [' 1', 'plain decimal'],
    ['1 ', 'plain decimal'],
    ['+1', 'plain decimal'],
    ['1e-7', 'no exponent'],
    ['7.5E-8', 'no exponent'],
    ['NaN', 'plain decimal'],
    ['Infinity', 'plain decimal'],
    ['1,5', 'plain decimal'],
    ['1.', 'plain decimal'],
    ['.5', 'plain decimal'],
    ['0x10', 'plain decimal'],
    ['1_000', 'plain decimal'],
    ['--1', 'plain decimal'],
    ['0.0000000000000000001', 'more than 18'],
    ['1'.repeat(81), 'longer than 80'],
  ])('refuses %j naming the problem', (text, message) => {
    const result = tryParseUsd(text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(message);
    expect(() => p(text)).toThrow(MoneyError);
  });

  it.each([[0.1], [Number.NaN], [1n], [null], [undefined], [{}]])('refuses the non-string %s', (value) => {
    expect(() => p(value)).toThrow(/must be a decimal string/);
  });

  it('formats atto-scaled bigints canonically', () => {
    expect(fmt(usdFromAtto(1n))).toBe('0.000000000000000001');
    expect(fmt(usdFromAtto(-(10n ** 18n)))).toBe('-1');
    expect(fmt(usdFromAtto(1_500_000_000_000_000_000n))).toBe('1.5');
    expect(USD_SCALE).toBe(18);
  });

  it('round-trips every atto amount exactly, in canonical form', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), (atto) => {
        const text = fmt(usdFromAtto(atto));
        expect(text).toMatch(CANONICAL);
        expect(p(text)).toBe(atto);
      }),
    );
  });
});

describe('arithmetic', () => {
  it('adds, subtracts, multiplies by integer quantities and sums exactly', () => {
    expect(fmt(addUsd(p('0.1'), p('0.2')))).toBe('0.3');
    expect(fmt(subUsd(p('0.3'), p('0.1')))).toBe('0.2');
    expect(fmt(mulUsd(p('0.000000075'), 1_000_000))).toBe('0.075');
    expect(fmt(mulUsd(p('0.000003'), 123_457n))).toBe('0.370371');
    expect(fmt(sumUsd([p('0.1'), p('0.2'), p('-0.3')]))).toBe('0');
    expect(fmt(negateUsd(p('1.25')))).toBe('-1.25');
  });

  it('refuses a quantity that is not a safe integer', () => {
    expect(() => mulUsd(p('1'), 1.5)).toThrow(MoneyError);
    expect(() => mulUsd(p('1'), Number.MAX_SAFE_INTEGER + 1)).toThrow(/safe integer/);
  });

  it('compares, and picks max and min', () => {
    expect(compareUsd(p('0.1'), p('0.10'))).toBe(0);
    expect(compareUsd(p('-1'), p('0.000000000000000001'))).toBe(-1);
    expect(compareUsd(p('2'), p('1.999999999999999999'))).toBe(1);
    expect(fmt(maxUsd(p('0.5'), p('0.25')))).toBe('0.5');
    expect(fmt(minUsd(p('0.5'), p('0.25')))).toBe('0.25');
    expect(isZeroUsd(p('0.000'))).toBe(true);
    expect(isNegativeUsd(p('-0.01'))).toBe(true);
  });

  it('is associative and commutative where floats are not', () => {
    const amount = fc.bigInt({ min: -(10n ** 24n), max: 10n ** 24n }).map(usdFromAtto);
    fc.assert(
      fc.property(amount, amount, amount, (a, b, c) => {
        expect(addUsd(addUsd(a, b), c)).toBe(addUsd(a, addUsd(b, c)));
        expect(subUsd(addUsd(a, b), b)).toBe(a);
      }),
    );
  });
});

describe('per-million conversion', () => {
  it.each([
    ['0.075', '0.000000075'],
    ['3', '0.000003'],
    ['15.00', '0.000015'],
    ['0.0375', '0.0000000375'],
    ['1.234567891234', '0.000001234567891234'],
  ])('%s per million is %s per token', (perMillion, perToken) => {
    expect(fmt(perMillionToPerToken(p(perMillion)))).toBe(perToken);
    expect(fmt(perTokenToPerMillion(p(perToken)))).toBe(fmt(p(perMillion)));
  });

  it('refuses a per-million price with no exact per-token value', () => {
    expect(() => perMillionToPerToken(p('0.0000000000001'))).toThrow(/more than 12 decimal places/);
  });
});

describe('rounding', () => {
  it.each([
    ['0.125', 2, '0.12'],
    ['0.135', 2, '0.14'],
    ['0.1251', 2, '0.13'],
    ['-0.125', 2, '-0.12'],
    ['-0.135', 2, '-0.14'],
    ['2.5', 0, '2'],
    ['3.5', 0, '4'],
    ['0.0000005', 6, '0'],
    ['0.0000015', 6, '0.000002'],
  ])('half-even rounds %s to %i places as %s', (text, places, expected) => {
    expect(fmt(roundUsd(p(text), places))).toBe(expected);
  });

  it('rounds toward floor and ceil', () => {
    expect(fmt(roundUsd(p('0.121'), 2, 'ceil'))).toBe('0.13');
    expect(fmt(roundUsd(p('-0.121'), 2, 'ceil'))).toBe('-0.12');
    expect(fmt(roundUsd(p('0.129'), 2, 'floor'))).toBe('0.12');
    expect(fmt(roundUsd(p('-0.121'), 2, 'floor'))).toBe('-0.13');
  });

  it('formats a fixed number of places for display', () => {
    expect(formatUsdFixed(p('1.005'), 2)).toBe('1.00');
    expect(formatUsdFixed(p('1.015'), 2)).toBe('1.02');
    expect(formatUsdFixed(p('-0.004'), 2)).toBe('0.00');
    expect(formatUsdFixed(p('-0.006'), 2)).toBe('-0.01');
    expect(formatUsdFixed(p('12'), 0)).toBe('12');
    expect(formatUsdFixed(p('0.000000075'), 9)).toBe('0.000000075');
    expect(() => formatUsdFixed(p('1'), 19)).toThrow(MoneyError);
  });

  it('half-even division agrees with the textbook rule', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }),
        fc.bigInt({ min: 1n, max: 10n ** 6n }),
        (n, d) => {
          const q = divideRounded(n, d, 'half_even');
          const error = n * 2n - q * 2n * d; // 2 * (n - q*d): |error| <= d, ties go to even q
          expect(error <= d && error >= -d).toBe(true);
          if (error === d || error === -d) expect(q % 2n).toBe(0n);
        },
      ),
    );
  });
});

it('keeps the Usd brand off plain bigints at compile time', () => {
  const price: Usd = p('1');
  // @ts-expect-error a bare bigint is not money
  const wrong: Usd = 5n;
  expect(typeof price).toBe('bigint');
  expect(wrong).toBe(5n);
});
