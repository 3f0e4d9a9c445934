/**
 * Exact USD amounts (STYLE.md rule 9): a scaled bigint, never a JS number.
 *
 * The scale is 10^-18 USD ("atto-USD"). Per-token prices are per-million prices divided by 10^6, so
 * a per-million price with up to 12 decimal places still has an exact per-token value, and a
 * per-token price times an integer token count stays exact at the same scale. Realistic prices
 * (0.000000075 USD/token, per-million prices with 4-6 decimals) use a fraction of those digits, so
 * the scale leaves headroom without ever needing a rounding rule inside pricing.
 *
 * The brand keeps a raw bigint (a token count, a byte count) from being mistaken for money; JSON
 * cannot serialize a bigint, so money can only leave the process as a formatted decimal string.
 */

declare const usdBrand: unique symbol;
export type Usd = bigint & { readonly [usdBrand]: 'atto-usd' };

export const USD_SCALE = 18;
const UNIT = 10n ** BigInt(USD_SCALE);
const MILLION = 1_000_000n;
/** Longer inputs are refused before BigInt parsing so a hostile cell cannot cost quadratic time. */
const MAX_TEXT_LENGTH = 80;
const PLAIN_DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

export class MoneyError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = 'MoneyError';
  }
}

export type RoundingMode = 'half_even' | 'floor' | 'ceil';

export type UsdParseResult = { ok: true; value: Usd } | { ok: false; error: string };

export const ZERO_USD = 0n as Usd;

export const usdFromAtto = (atto: bigint): Usd => atto as Usd;
export const attoOf = (amount: Usd): bigint => amount;

/**
 * Parses a plain decimal string: digits, at most one point followed by digits, an optional leading
 * minus. Exponents, `+`, spaces, separators, `NaN`/`Infinity` and non-strings are refused because
 * each of them is a sign that a float or a locale touched the value on its way here.
 */
export const tryParseUsd = (text: unknown): UsdParseResult => {
  if (typeof text !== 'string') {
    return { ok: false, error: `money must be a decimal string, got ${typeof text}` };
  }
  if (text.length === 0) return { ok: false, error: 'money must not be empty' };
  if (text.length > MAX_TEXT_LENGTH) {
    return { ok: false, error: `money text is longer than ${MAX_TEXT_LENGTH} characters` };
  }
  const match = PLAIN_DECIMAL.exec(text);
  if (match === null) {
    return {
      ok: false,
      error: `"${text}" is not a plain decimal (digits with an optional point and leading minus; no exponent)`,
    };
  }
  const [, sign, whole, fraction = ''] = match;
  let digits = fraction;
  if (digits.length > USD_SCALE) {
    if (/[1-9]/.test(digits.slice(USD_SCALE))) {
      return { ok: false, error: `"${text}" has more than ${USD_SCALE} significant decimal places` };
    }
    digits = digits.slice(0, USD_SCALE);
  }
  const magnitude = BigInt(whole as string) * UNIT + BigInt(digits.padEnd(USD_SCALE, '0'));
  return { ok: true, value: (sign === '-' ? -magnitude : magnitude) as Usd };
};

export const parseUsd = (text: unknown): Usd => {
  const result = tryParseUsd(text);
  if (!result.ok) throw new MoneyError(result.error);
  return result.value;
};

/** Canonical form: no exponent, no leading `+`, no trailing fractional zeros, `0` for zero. */
export const formatUsd = (amount: Usd): string => {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString();
  let whole: string;
  let fraction: string;
  if (digits.length > USD_SCALE) {
    whole = digits.slice(0, digits.length - USD_SCALE);
    fraction = digits.slice(digits.length - USD_SCALE);
  } else {
    whole = '0';
    fraction = digits.padStart(USD_SCALE, '0');
  }
  let end = fraction.length;
  while (end > 0 && fraction.charCodeAt(end - 1) === 48) end--;
  const text = end === 0 ? whole : `${whole}.${fraction.slice(0, end)}`;
  return negative ? `-${text}` : text;
};

/** Display form with exactly `decimals` places, rounded (half-even unless told otherwise). */
export const formatUsdFixed = (amount: Usd, decimals: number, mode: RoundingMode = 'half_even'): string => {
  const rounded = roundUsd(amount, decimals, mode);
  const negative = rounded < 0n;
  const digits = (negative ? -rounded : rounded).toString().padStart(USD_SCALE + 1, '0');
  const whole = digits.slice(0, digits.length - USD_SCALE);
  const fraction = digits.slice(digits.length - USD_SCALE, digits.length - USD_SCALE + decimals);
  const text = decimals === 0 ? whole : `${whole}.${fraction}`;
  return negative ? `-${text}` : text;
};

const checkDecimals = (decimals: number): void => {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > USD_SCALE) {
    throw new MoneyError(`decimal places must be an integer from 0 to ${USD_SCALE}, got ${decimals}`);
  }
};

/** Integer division of `numerator` by a positive `divisor`, rounded by `mode`. */
export const divideRounded = (numerator: bigint, divisor: bigint, mode: RoundingMode): bigint => {
  if (divisor <= 0n) throw new MoneyError('divisor must be positive');
  const quotient = numerator / divisor; // truncates toward zero
  const remainder = numerator % divisor;
  if (remainder === 0n) return quotient;
  const negative = numerator < 0n;
  switch (mode) {
    case 'floor':
      return negative ? quotient - 1n : quotient;
    case 'ceil':
      return negative ? quotient : quotient + 1n;
    case 'half_even': {
      const twice = (negative ? -remainder : remainder) * 2n;
      const awayFromZero = twice > divisor || (twice === divisor && quotient % 2n !== 0n);
      if (!awayFromZero) return quotient;
      return negative ? quotient - 1n : quotient + 1n;
    }
    default:
      return assertNeverMode(mode);
  }
};

const assertNeverMode = (mode: never): never => {
  throw new MoneyError(`unknown rounding mode ${String(mode)}`);
};

/** Rounds to `decimals` places of a dollar (2 = cents, 6 = micro-USD), keeping the atto scale. */
export const roundUsd = (amount: Usd, decimals: number, mode: RoundingMode = 'half_even'): Usd => {
  checkDecimals(decimals);
  const step = 10n ** BigInt(USD_SCALE - decimals);
  return (divideRounded(amount, step, mode) * step) as Usd;
};

const toQuantity = (quantity: bigint | number): bigint => {
  if (typeof quantity === 'bigint') return quantity;
  if (!Number.isSafeInteger(quantity)) {
    throw new MoneyError(`quantity must be a safe integer, got ${String(quantity)}`);
  }
  return BigInt(quantity);
};

export const addUsd = (a: Usd, b: Usd): Usd => (a + b) as Usd;
export const subUsd = (a: Usd, b: Usd): Usd => (a - b) as Usd;
export const negateUsd = (a: Usd): Usd => -a as Usd;
/** Price times a count (tokens, requests, images). Exact: the product stays at the atto scale. */
export const mulUsd = (price: Usd, quantity: bigint | number): Usd => (price * toQuantity(quantity)) as Usd;

export const sumUsd = (amounts: Iterable<Usd>): Usd => {
  let total = 0n;
  for (const amount of amounts) total += amount;
  return total as Usd;
};

export const compareUsd = (a: Usd, b: Usd): -1 | 0 | 1 => (a < b ? -1 : a > b ? 1 : 0);
export const maxUsd = (a: Usd, b: Usd): Usd => (a >= b ? a : b);
export const minUsd = (a: Usd, b: Usd): Usd => (a <= b ? a : b);
export const isZeroUsd = (a: Usd): boolean => a === 0n;
export const isNegativeUsd = (a: Usd): boolean => a < 0n;

/**
 * USD per million tokens to USD per token. Refuses rather than rounds: a price that cannot be
 * represented exactly per token (more than 12 decimal places per million) is a data error.
 */
export const perMillionToPerToken = (perMillion: Usd): Usd => {
  if (perMillion % MILLION !== 0n) {
    throw new MoneyError(
      `${formatUsd(perMillion)} USD per million tokens has more than ${USD_SCALE - 6} decimal places; ` +
        'its per-token price would not be exact',
    );
  }
  return (perMillion / MILLION) as Usd;
};

export const perTokenToPerMillion = (perToken: Usd): Usd => (perToken * MILLION) as Usd;
