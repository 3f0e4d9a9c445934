import type { PinnedPrice } from '../../commands/registry/events.js';
import { tryParseUsd } from '../../lib/money.js';
import { METERS, type Meter, MODALITIES, type Modality } from '../../pricing/index.js';
import { type Adapter, unpricedMeters } from '../../providers/endpoint.js';
import { CliError } from '../output.js';

/**
 * The prices of `svc registry upsert` beyond input and output tokens (SPEC 2.8: an operator's
 * endpoint prices every meter its upstream bills, as exactly as an imported card): named options for
 * the prompt cache, and `--price METER[/MODALITY][@TTL|#TOOL]=USD` for any other row.
 */
export interface ExtraPriceOptions {
  cacheReadPricePerToken?: string;
  cacheWritePricePerToken?: string;
  price?: string[];
}

export const PRICE_SYNTAX = 'METER[/MODALITY][@CACHE_TTL|#TOOL_TYPE]=USD';

/** An exact, non-negative USD amount given on the command line, as written. */
export const usd = (value: string, flag: string): string => {
  const parsed = tryParseUsd(value);
  if (!parsed.ok) throw new CliError(`${flag}: ${parsed.error}`);
  if (parsed.value < 0n) throw new CliError(`${flag} must not be negative`);
  return value;
};

const PRICE_PATTERN = /^([a-z_]+)(?:\/([a-z]+))?(?:@([^=#]+)|#([^=@]+))?=(.+)$/;

/** One `--price` value, e.g. `cache_write_token@1h=0.00000375`, `request=0.01`, `tool_call#web_search=0.01`. */
const parsePrice = (spec: string): PinnedPrice => {
  const m = PRICE_PATTERN.exec(spec.trim());
  if (!m) throw new CliError(`--price ${spec}: expected ${PRICE_SYNTAX}`);
  const [, meter = '', modality = 'text', ttl, tool, price = ''] = m;
  if (!(METERS as readonly string[]).includes(meter)) {
    throw new CliError(`--price ${spec}: unknown meter ${meter} (known: ${METERS.join(', ')})`);
  }
  if (!(MODALITIES as readonly string[]).includes(modality)) {
    throw new CliError(`--price ${spec}: unknown modality ${modality} (known: ${MODALITIES.join(', ')})`);
  }
  return {
    meter: meter as Meter,
    modality: modality as Modality,
    cache_ttl: ttl ?? null,
    tool_type: tool ?? null,
    unit_price: usd(price, `--price ${spec}`),
  };
};

export const extraPrices = (opts: ExtraPriceOptions): PinnedPrice[] => {
  const prices: PinnedPrice[] = [];
  const token = (meter: Meter, value: string | undefined, flag: string) => {
    if (value === undefined) return;
    prices.push({ meter, modality: 'text', cache_ttl: null, tool_type: null, unit_price: usd(value, flag) });
  };
  token('cache_read_token', opts.cacheReadPricePerToken, '--cache-read-price-per-token');
  token('cache_write_token', opts.cacheWritePricePerToken, '--cache-write-price-per-token');
  for (const spec of opts.price ?? []) prices.push(parsePrice(spec));
  return prices;
};

/** What the operator is told when the card leaves a meter unpriced that the adapter's replies report. */
export const unpricedWarning = (
  adapter: Adapter,
  endpoint: string,
  prices: readonly { meter: string }[],
): { unpriced_meters: Meter[]; warning: string | null } => {
  const unpriced = unpricedMeters(adapter, ['input_token', 'output_token', ...prices.map((p) => p.meter)]);
  if (unpriced.length === 0) return { unpriced_meters: [], warning: null };
  const flags = unpriced.map((m) => `--${m.replace(/_token$/, '').replaceAll('_', '-')}-price-per-token`);
  return {
    unpriced_meters: unpriced,
    warning:
      `${adapter} replies report ${unpriced.join(' and ')}, which this card does not price: every reply ` +
      `that reports them is served but fails billing (missing_price), and billing health then quarantines ` +
      `${endpoint} for every tenant (SPEC 3). Price them with ${flags.join(' and ')}.`,
  };
};
