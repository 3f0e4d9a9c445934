import { formatUsd, MoneyError, perMillionToPerToken, tryParseUsd } from '../../lib/money.js';
import {
  checkRateRow,
  compileRateCard,
  isTokenMeter,
  type Meter,
  type Modality,
  RateCardError,
  type RateRowInput,
} from '../../pricing/index.js';
import { CellReader } from './cells.js';
import { type Cell, type CsvTable, type Parsed, type Refusal, readHeader, refuse, rowCells } from './csv.js';
import type { CardSpec } from './events.js';

/** SPEC 2.8, exactly. */
export const RATES_COLUMNS = [
  'model',
  'tier',
  'meter',
  'modality',
  'min_context',
  'max_context',
  'cache_ttl',
  'tool_type',
  'price',
  'effective_from',
  'effective_to',
] as const;
export type RatesColumn = (typeof RATES_COLUMNS)[number];

/** Spelling of an explicitly open last band; a blank max_context is refused like any blank. */
export const UNBOUNDED = 'unbounded';

interface RateLine {
  cells: Record<RatesColumn, Cell>;
  model: string;
  from: string;
  to: string | null;
  /** The row before banding: max_context null only when written `unbounded`. */
  row: Omit<RateRowInput, 'row_id'>;
}

/** RateRowInput fields to the CSV column that holds them, for quoting a refusal. */
const COLUMN_OF: Record<keyof RateRowInput, RatesColumn> = {
  row_id: 'model',
  tier: 'tier',
  meter: 'meter',
  modality: 'modality',
  min_context: 'min_context',
  max_context: 'max_context',
  cache_ttl: 'cache_ttl',
  tool_type: 'tool_type',
  unit_price: 'price',
};

/** Token prices arrive per million tokens and are stored per token, exactly or not at all. */
const unitPrice = (r: CellReader, cell: Cell, meter: string): string => {
  const text = r.required(cell, 'price');
  if (text === '') return '0';
  const parsed = tryParseUsd(text);
  if (!parsed.ok) {
    r.fail(cell, `price: ${parsed.error}`);
    return '0';
  }
  if (!isTokenMeter(meter as Meter)) return formatUsd(parsed.value);
  try {
    return formatUsd(perMillionToPerToken(parsed.value));
  } catch (err) {
    if (!(err instanceof MoneyError)) throw err;
    r.fail(cell, `price: ${err.message}`);
    return '0';
  }
};

const readLine = (file: string, c: Record<RatesColumn, Cell>): Parsed<RateLine> => {
  const r = new CellReader(file);
  const model = r.required(c.model, 'model');
  const tier = r.required(c.tier, 'tier');
  const meter = r.required(c.meter, 'meter');
  const modality = (r.optional(c.modality) ?? 'text') as Modality;
  const min_context = r.count(c.min_context, 'min_context');
  const unbounded = c.max_context.value.trim().toLowerCase() === UNBOUNDED;
  const max_context = unbounded ? null : r.count(c.max_context, 'max_context');
  const unit_price = unitPrice(r, c.price, meter);
  const fromText = r.required(c.effective_from, 'effective_from');
  const from = fromText === '' ? null : r.instant(c.effective_from, 'effective_from');
  const to = r.instant(c.effective_to, 'effective_to');
  if (from !== null && to !== null && Date.parse(to) <= Date.parse(from)) {
    r.fail(c.effective_to, 'effective_to must be after effective_from');
  }
  const row = {
    tier,
    meter: meter as Meter,
    modality,
    min_context,
    max_context,
    cache_ttl: r.optional(c.cache_ttl),
    tool_type: r.optional(c.tool_type),
    unit_price,
  };
  if (r.refusal) return { ok: false, refusal: r.refusal };
  const broken = checkRateRow({ ...row, row_id: '' });
  if (broken !== null) {
    return { ok: false, refusal: refuse(file, c[COLUMN_OF[broken.field]], broken.message) };
  }
  return { ok: true, value: { cells: c, model, from: from as string, to, row } };
};

/** Bands of one meter: (tier, meter, modality, qualifier), with modality folded as pricing folds it. */
const bandKey = (row: RateLine['row']): string => {
  const modality = isTokenMeter(row.meter) ? row.modality : 'text';
  return `${row.tier}:${row.meter}:${modality}:${row.cache_ttl ?? row.tool_type ?? '-'}`;
};

/**
 * Orders the bands of each meter and checks their edges. Bands may share an edge (it prices in the
 * lower band); only the last may be written `unbounded`, and whatever max_context the last band
 * states, it is stored as unbounded (SPEC 2.8: the last band of a meter is unbounded).
 */
const bandRows = (
  file: string,
  lines: RateLine[],
): Parsed<Map<string, RateLine & { banded: RateRowInput }>> => {
  const groups = new Map<string, RateLine[]>();
  for (const line of lines) {
    const key = bandKey(line.row);
    groups.set(key, [...(groups.get(key) ?? []), line]);
  }
  const rows = new Map<string, RateLine & { banded: RateRowInput }>();
  for (const [key, group] of groups) {
    group.sort((a, b) => a.row.min_context - b.row.min_context);
    for (const [i, line] of group.entries()) {
      const next = group[i + 1];
      const row_id = `${key}:${line.row.min_context}`;
      if (next === undefined) {
        rows.set(row_id, { ...line, banded: { ...line.row, max_context: null, row_id } });
        break;
      }
      const fault = bandFault(line, next);
      if (fault !== null) return { ok: false, refusal: refuse(file, fault.cell, fault.message) };
      rows.set(row_id, { ...line, banded: { ...line.row, row_id } });
    }
  }
  return { ok: true, value: rows };
};

const bandFault = (line: RateLine, next: RateLine): { cell: Cell; message: string } | null => {
  if (line.row.max_context === null) {
    return {
      cell: line.cells.max_context,
      message: `only the last band of ${line.row.meter} may be unbounded; line ${next.cells.model.line} starts a higher band`,
    };
  }
  if (next.row.min_context === line.row.min_context) {
    return { cell: next.cells.min_context, message: `duplicates the band on line ${line.cells.model.line}` };
  }
  if (line.row.max_context > next.row.min_context) {
    return {
      cell: next.cells.min_context,
      message: `band overlaps the band on line ${line.cells.model.line} (which ends at ${line.row.max_context})`,
    };
  }
  return null;
};

const overlaps = (a: { from: string; to: string | null }, b: { from: string; to: string | null }) =>
  Date.parse(a.from) < (b.to === null ? Number.POSITIVE_INFINITY : Date.parse(b.to)) &&
  Date.parse(b.from) < (a.to === null ? Number.POSITIVE_INFINITY : Date.parse(a.to));

/** The rows of one card, in file order, under their interval. */
interface CardLines {
  model: string;
  from: string;
  to: string | null;
  lines: RateLine[];
}

const buildCard = (file: string, card: CardLines): Parsed<CardSpec> => {
  const banded = bandRows(file, card.lines);
  if (!banded.ok) return banded;
  const rows = [...banded.value.values()].map((l) => l.banded).sort((a, b) => (a.row_id < b.row_id ? -1 : 1));
  const spec: CardSpec = { model: card.model, effective_from: card.from, effective_to: card.to, rows };
  // The engine's own check is the last word: a card the importer accepts always compiles.
  try {
    compileRateCard({ ...spec, card_id: 'import', revision: 1 });
  } catch (err) {
    if (!(err instanceof RateCardError)) throw err;
    const line = banded.value.get(err.rowId ?? '') ?? card.lines[0]!;
    const column = COLUMN_OF[err.field as keyof RateRowInput] ?? 'model';
    return { ok: false, refusal: refuse(file, line.cells[column], err.message) };
  }
  return { ok: true, value: spec };
};

export interface RatesRead {
  cards: CardSpec[];
  /** Where each model's first price row is, to quote a price without a catalog row. */
  firstCell: Map<string, Cell>;
}

/** Reads the rates CSV into one card per (model, effective interval). */
export const readRates = (file: string, table: CsvTable): Parsed<RatesRead> => {
  const header = readHeader(file, table.header, RATES_COLUMNS);
  if (!header.ok) return header;
  const byCard = new Map<string, CardLines>();
  const firstCell = new Map<string, Cell>();
  for (const record of table.records) {
    const cells = rowCells(file, record, header.value, RATES_COLUMNS.length);
    if (!cells.ok) return cells;
    const line = readLine(file, cells.value);
    if (!line.ok) return line;
    const { model, from, to } = line.value;
    if (!firstCell.has(model)) firstCell.set(model, cells.value.model);
    const key = `${model}\u0000${from}\u0000${to ?? ''}`;
    const card = byCard.get(key) ?? { model, from, to, lines: [] };
    card.lines.push(line.value);
    byCard.set(key, card);
  }
  const cards: CardSpec[] = [];
  const ordered = [...byCard.values()].sort((a, b) =>
    a.model === b.model ? Date.parse(a.from) - Date.parse(b.from) : a.model < b.model ? -1 : 1,
  );
  for (const [i, card] of ordered.entries()) {
    const earlier = ordered.slice(0, i).find((c) => c.model === card.model && overlaps(c, card));
    if (earlier !== undefined) return { ok: false, refusal: intervalClash(file, card, earlier) };
    const built = buildCard(file, card);
    if (!built.ok) return built;
    cards.push(built.value);
  }
  return { ok: true, value: { cards, firstCell } };
};

const intervalClash = (file: string, card: CardLines, earlier: CardLines): Refusal =>
  refuse(
    file,
    card.lines[0]!.cells.effective_from,
    `${card.model}: effective interval from ${card.from} overlaps the one from ${earlier.from} ` +
      `(line ${earlier.lines[0]!.cells.model.line}); corrected prices go on the same interval`,
  );
