import { MODALITIES, type Modality } from '../../pricing/index.js';
import { type Cell, type Refusal, refuse } from './csv.js';

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no', '']);
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const INSTANT = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** Date.parse rolls 2025-02-30 over into March and refuses month 13: both fail this round trip. */
const isCalendarDate = (value: string): boolean => {
  const ms = DATE.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  return Number.isFinite(ms) && new Date(ms).toISOString().startsWith(value);
};

/**
 * Reads typed values out of the cells of one row and keeps only the first refusal, so a row parser
 * reads every column in a straight line and checks once at the end. After a refusal the returned
 * values are placeholders that the caller discards.
 */
export class CellReader {
  refusal: Refusal | null = null;

  constructor(private readonly file: string) {}

  fail(cell: Pick<Cell, 'line' | 'column'>, message: string): void {
    this.refusal ??= refuse(this.file, cell, message);
  }

  required(cell: Cell, name: string): string {
    const value = cell.value.trim();
    if (value === '') this.fail(cell, `${name} is blank`);
    return value;
  }

  optional(cell: Cell): string | null {
    const value = cell.value.trim();
    return value === '' ? null : value;
  }

  /** SPEC 2.8: a blank boolean cell reads as false. */
  bool(cell: Cell, name: string): boolean {
    const value = cell.value.trim().toLowerCase();
    if (TRUE.has(value)) return true;
    if (!FALSE.has(value)) this.fail(cell, `${name} must be true or false, got "${cell.value}"`);
    return false;
  }

  /** `text|image|audio`, in the canonical order whatever the cell's order; blank reads as text. */
  modalities(cell: Cell, name: string): Modality[] {
    const value = cell.value.trim();
    if (value === '') return ['text'];
    const parts = value.split('|').map((p) => p.trim());
    for (const part of parts) {
      if (!(MODALITIES as readonly string[]).includes(part)) {
        this.fail(cell, `${name}: unknown modality "${part}" (known: ${MODALITIES.join(', ')})`);
        return ['text'];
      }
    }
    return MODALITIES.filter((m) => parts.includes(m));
  }

  /** A required non-negative integer (at least `min`): a blank is refused, never read as zero. */
  count(cell: Cell, name: string, min = 0): number {
    const value = cell.value.trim();
    if (value === '') {
      this.fail(cell, `${name} is blank`);
      return min;
    }
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min) {
      this.fail(cell, `${name} must be an integer of at least ${min}, got "${value}"`);
      return min;
    }
    return n;
  }

  optionalCount(cell: Cell, name: string, min = 0): number | null {
    return cell.value.trim() === '' ? null : this.count(cell, name, min);
  }

  date(cell: Cell, name: string): string | null {
    const value = cell.value.trim();
    if (value === '') return null;
    if (!isCalendarDate(value)) this.fail(cell, `${name} must be a date YYYY-MM-DD, got "${value}"`);
    return value;
  }

  /**
   * An ISO-8601 instant or a bare date (midnight UTC), normalised to `toISOString()` form so two
   * spellings of one instant compare equal when an import is re-applied.
   */
  instant(cell: Cell, name: string): string | null {
    const value = cell.value.trim();
    if (value === '') return null;
    const ms =
      INSTANT.test(value) && isCalendarDate(value.slice(0, 10))
        ? Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value)
        : Number.NaN;
    if (!Number.isFinite(ms)) {
      this.fail(cell, `${name} must be an ISO-8601 date or instant, got "${value}"`);
      return null;
    }
    return new Date(ms).toISOString();
  }
}
