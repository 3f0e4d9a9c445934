import { ServiceError } from '../../lib/errors.js';
import { formatUsd, tryParseUsd, USD_SCALE, usdFromAtto } from '../../lib/money.js';

const ATTO_PER_CENT = 10n ** BigInt(USD_SCALE - 2);

/** The provider charges whole cents: an amount with a fraction of a cent is refused, not rounded. */
export const centsOf = (amountUsd: string, param = 'amount_usd'): number => {
  const parsed = tryParseUsd(amountUsd);
  if (!parsed.ok) throw new ServiceError('bad_request', `${param}: ${parsed.error}`, { param });
  if (parsed.value % ATTO_PER_CENT !== 0n)
    throw new ServiceError('bad_request', `${param} must be whole cents (at most 2 decimal places)`, {
      param,
    });
  const cents = parsed.value / ATTO_PER_CENT;
  if (cents > BigInt(Number.MAX_SAFE_INTEGER))
    throw new ServiceError('bad_request', `${param} is too large`, { param });
  return Number(cents);
};

export const usdOfCents = (cents: number): string => formatUsd(usdFromAtto(BigInt(cents) * ATTO_PER_CENT));

/** Provider limits for one USD payment: 0.50 to 999,999.99. */
export const TOPUP_MIN_CENTS = 50;
export const TOPUP_MAX_CENTS = 99_999_999;

export const checkTopUpAmount = (amountUsd: string): number => {
  const cents = centsOf(amountUsd);
  if (cents < TOPUP_MIN_CENTS || cents > TOPUP_MAX_CENTS)
    throw new ServiceError('bad_request', 'amount_usd must be between 0.50 and 999999.99', {
      param: 'amount_usd',
    });
  return cents;
};
