import { createHash } from 'node:crypto';
import { readCatalog } from './catalog.js';
import { type Parsed, parseCsv, refuse } from './csv.js';
import type { Artifact } from './events.js';
import { readRates } from './rates.js';

export interface ArtifactFiles {
  /** Names quoted in refusals (as the operator typed them). */
  catalogFile: string;
  catalogText: string;
  ratesFile: string;
  ratesText: string;
}

/** The same bytes are the same artifact, whatever the files are called. */
export const artifactDigest = (catalogText: string, ratesText: string): string =>
  `sha256:${createHash('sha256').update(catalogText).update('\u0000').update(ratesText).digest('hex')}`;

/**
 * A catalog and rates CSV pair, parsed and checked. The first refusal wins and quotes
 * `FILE:LINE:COLUMN`; a price row for a model without a catalog row is refused at its model cell.
 */
export const readArtifact = (files: ArtifactFiles): Parsed<Artifact> => {
  const catalogTable = parseCsv(files.catalogFile, files.catalogText);
  if (!catalogTable.ok) return catalogTable;
  const catalog = readCatalog(files.catalogFile, catalogTable.value);
  if (!catalog.ok) return catalog;
  const ratesTable = parseCsv(files.ratesFile, files.ratesText);
  if (!ratesTable.ok) return ratesTable;
  const rates = readRates(files.ratesFile, ratesTable.value);
  if (!rates.ok) return rates;

  const models = new Set(catalog.value.map((e) => e.facts.model));
  for (const [model, cell] of rates.value.firstCell) {
    if (!models.has(model)) {
      return {
        ok: false,
        refusal: refuse(
          files.ratesFile,
          cell,
          `price for model ${model}, which has no row in ${files.catalogFile}`,
        ),
      };
    }
  }
  return {
    ok: true,
    value: {
      digest: artifactDigest(files.catalogText, files.ratesText),
      catalog_file: files.catalogFile,
      rates_file: files.ratesFile,
      endpoints: catalog.value.map((e) => e.facts),
      cards: rates.value.cards,
    },
  };
};
