import { ServiceError } from '../lib/errors.js';
import { formatUsd, parseUsd } from '../lib/money.js';

/** A half-open UTC window [from, to); either end may be open on list routes. */
export interface TimeWindow {
  from: Date | null;
  to: Date | null;
}

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$/;
const DAY_MS = 86_400_000;

/** `2026-11-01` means that day's UTC midnight; otherwise an RFC 3339 instant with its offset. */
export const parseInstant = (value: string | undefined, param: string): Date | null => {
  if (value === undefined || value === '') return null;
  const ok = DATE_RE.test(value) || RFC3339_RE.test(value);
  const at = ok ? new Date(DATE_RE.test(value) ? `${value}T00:00:00Z` : value) : null;
  if (!at || Number.isNaN(at.getTime()))
    throw new ServiceError(
      'bad_request',
      `${param} must be a UTC date (YYYY-MM-DD) or an RFC 3339 timestamp`,
      {
        param,
      },
    );
  return at;
};

export const parseWindow = (q: { from?: string; to?: string }): TimeWindow => {
  const window = { from: parseInstant(q.from, 'from'), to: parseInstant(q.to, 'to') };
  if (window.from && window.to && window.to <= window.from)
    throw new ServiceError('bad_request', 'to must be after from (to is exclusive)', { param: 'to' });
  return window;
};

/** Exports need both ends and at most `maxDays` days between them (SPEC 8). */
export const parseBoundedWindow = (
  q: { from?: string; to?: string },
  maxDays: number,
): { from: Date; to: Date } => {
  const w = parseWindow(q);
  if (!w.from) throw new ServiceError('bad_request', 'from is required', { param: 'from' });
  if (!w.to) throw new ServiceError('bad_request', 'to is required', { param: 'to' });
  if (w.to.getTime() - w.from.getTime() > maxDays * DAY_MS)
    throw new ServiceError('bad_request', `the window from..to may span at most ${maxDays} days`, {
      param: 'to',
    });
  return { from: w.from, to: w.to };
};

/** A calendar month `YYYY-MM` that has ended (UTC) before `now`: reports cover only closed months. */
export const parseClosedMonth = (value: string | undefined, now: Date): { from: Date; to: Date } => {
  const m = value ? /^(\d{4})-(0[1-9]|1[0-2])$/.exec(value) : null;
  if (!m) throw new ServiceError('bad_request', 'month must be YYYY-MM', { param: 'month' });
  const from = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, 1));
  const to = new Date(Date.UTC(Number(m[1]), Number(m[2]), 1));
  if (to > now)
    throw new ServiceError(
      'bad_request',
      `month ${value} is not closed yet; reports cover closed months only`,
      {
        param: 'month',
      },
    );
  return { from, to };
};

export const parsePage = (
  q: { limit?: string; offset?: string },
  defaults = { limit: 50, max: 500 },
): { limit: number; offset: number } => {
  const int = (v: string | undefined, fallback: number, param: string, min: number, max: number) => {
    if (v === undefined || v === '') return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new ServiceError('bad_request', `${param} must be an integer from ${min} to ${max}`, { param });
    return n;
  };
  return {
    limit: int(q.limit, defaults.limit, 'limit', 1, defaults.max),
    offset: int(q.offset, 0, 'offset', 0, 10_000_000),
  };
};

/** The engine returns Decimal(38, 18) as text with trailing zeros; answers use the canonical form. */
export const money = (value: unknown): string =>
  formatUsd(parseUsd(value === null || value === undefined ? '0' : value));

export const int = (value: unknown): number => Number(value ?? 0);
