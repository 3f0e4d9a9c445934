import { validateOrigin } from '../../lib/origin.js';
import { CAPABILITIES, type EndpointFacts, NO_BASE_URL } from '../../providers/endpoint.js';
import { CellReader } from './cells.js';
import { type Cell, type CsvTable, type Parsed, readHeader, refuse, rowCells } from './csv.js';

export const CATALOG_COLUMNS = [
  'model',
  'provider_model_id',
  'base_url',
  'display_name',
  'family',
  'release_date',
  'description',
  ...CAPABILITIES,
  'input_modalities',
  'output_modalities',
  'context_length',
  'max_output_tokens',
  'enabled',
] as const;
export type CatalogColumn = (typeof CATALOG_COLUMNS)[number];

const MODEL_ID = /^[^\s\p{Cc}]{1,200}$/u;

export interface CatalogEntry {
  facts: EndpointFacts;
  /** Where the row's model cell is, for refusals that concern the whole model. */
  at: Cell;
}

const baseUrl = (reader: CellReader, cell: Cell): string | null => {
  const value = reader.optional(cell);
  if (value === null || value.replace(/\/+$/, '') === NO_BASE_URL) return null;
  const origin = validateOrigin(value, 'base_url');
  if (!origin.ok) {
    reader.fail(cell, origin.message);
    return null;
  }
  return origin.value;
};

const readRow = (file: string, c: Record<CatalogColumn, Cell>): Parsed<EndpointFacts> => {
  const r = new CellReader(file);
  const model = r.required(c.model, 'model');
  if (model !== '' && !MODEL_ID.test(model))
    r.fail(c.model, 'model must not contain spaces or control characters');
  const capabilities = Object.fromEntries(
    CAPABILITIES.map((name) => [name, r.bool(c[name], name)]),
  ) as EndpointFacts['capabilities'];
  const facts: EndpointFacts = {
    model,
    provider_model_id: r.required(c.provider_model_id, 'provider_model_id'),
    base_url: baseUrl(r, c.base_url),
    display_name: c.display_name.value.trim() || model,
    family: c.family.value.trim(),
    release_date: r.date(c.release_date, 'release_date'),
    description: c.description.value.trim(),
    capabilities,
    input_modalities: r.modalities(c.input_modalities, 'input_modalities'),
    output_modalities: r.modalities(c.output_modalities, 'output_modalities'),
    context_length: r.count(c.context_length, 'context_length', 1),
    max_output_tokens: r.optionalCount(c.max_output_tokens, 'max_output_tokens', 1),
    enabled: r.bool(c.enabled, 'enabled'),
  };
  return r.refusal ? { ok: false, refusal: r.refusal } : { ok: true, value: facts };
};

/** One entry per model; a model listed twice is refused at its second row. */
export const readCatalog = (file: string, table: CsvTable): Parsed<CatalogEntry[]> => {
  const header = readHeader(file, table.header, CATALOG_COLUMNS);
  if (!header.ok) return header;
  const entries: CatalogEntry[] = [];
  const seen = new Map<string, number>();
  for (const record of table.records) {
    const cells = rowCells(file, record, header.value, CATALOG_COLUMNS.length);
    if (!cells.ok) return cells;
    const row = readRow(file, cells.value);
    if (!row.ok) return row;
    const earlier = seen.get(row.value.model);
    if (earlier !== undefined) {
      return {
        ok: false,
        refusal: refuse(
          file,
          cells.value.model,
          `model ${row.value.model} is already listed on line ${earlier}`,
        ),
      };
    }
    seen.set(row.value.model, record.line);
    entries.push({ facts: row.value, at: cells.value.model });
  }
  return { ok: true, value: entries };
};
