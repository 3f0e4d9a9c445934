import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AccessKeyPair } from '../../providers/bedrock/credentials.js';

import { type Collection, collectionCsv, deriveCollection, type ModelFacts } from './bedrock.js';
import { fetchListing, ListingError } from './bedrock-listing.js';
import { PriceFileError, readPriceList } from './bedrock-prices.js';

/**
 * One run of `svc catalog collect bedrock`: read the optional inputs, list, derive, write
 * catalog.csv and rates.csv into the output directory. Every expected failure is a CollectError
 * with a one-line message for the CLI.
 */

export class CollectError extends Error {}

export interface RunOptions {
  region: string;
  origin: string;
  credentials: AccessKeyPair;
  outDir: string;
  pricesFile: string | null;
  modelFactsFile: string | null;
  contextLength: number | null;
  effectiveFrom: string | null;
  onProgress?: (done: number, total: number) => void;
}

export type RunResult = Collection & { catalog_file: string; rates_file: string; models_listed: number };

const readText = async (path: string, what: string): Promise<string> => {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new CollectError(
      `cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
};

const readModelFacts = async (path: string): Promise<Record<string, ModelFacts>> => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readText(path, 'model facts'));
  } catch (err) {
    if (err instanceof CollectError) throw err;
    throw new CollectError(`the model facts file ${path} is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new CollectError(
      `the model facts file ${path} must map model ids to {context_length, max_output_tokens}`,
    );
  const out: Record<string, ModelFacts> = {};
  for (const [model, facts] of Object.entries(parsed)) {
    const f = (facts ?? {}) as Record<string, unknown>;
    const count = (k: string) => {
      const v = f[k];
      if (v === undefined) return undefined;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
        throw new CollectError(`${path}: ${model}.${k} must be a positive integer`);
      return v;
    };
    const context = count('context_length');
    const maxOutput = count('max_output_tokens');
    out[model] = {
      ...(context === undefined ? {} : { context_length: context }),
      ...(maxOutput === undefined ? {} : { max_output_tokens: maxOutput }),
    };
  }
  return out;
};

export const runCollect = async (o: RunOptions): Promise<RunResult> => {
  let prices = null;
  if (o.pricesFile !== null) {
    try {
      prices = readPriceList(await readText(o.pricesFile, 'prices'));
    } catch (err) {
      if (err instanceof PriceFileError) throw new CollectError(`${o.pricesFile}: ${err.message}`);
      throw err;
    }
  }
  const modelFacts = o.modelFactsFile === null ? {} : await readModelFacts(o.modelFactsFile);
  let listing: Awaited<ReturnType<typeof fetchListing>>;
  try {
    listing = await fetchListing({
      origin: o.origin,
      region: o.region,
      credentials: o.credentials,
      onPage: (pages) => o.onProgress?.(pages, pages + 1),
    });
  } catch (err) {
    if (err instanceof ListingError) throw new CollectError(err.message);
    throw err;
  }
  const collection = deriveCollection(listing, {
    region: o.region,
    prices,
    contextLength: o.contextLength,
    modelFacts,
    effectiveFrom: o.effectiveFrom,
    today: new Date().toISOString().slice(0, 10),
  });
  const csv = collectionCsv(collection);
  await mkdir(o.outDir, { recursive: true });
  const catalogFile = join(o.outDir, 'catalog.csv');
  const ratesFile = join(o.outDir, 'rates.csv');
  await writeFile(catalogFile, csv.catalog);
  await writeFile(ratesFile, csv.rates);
  o.onProgress?.(1, 1);
  return {
    ...collection,
    catalog_file: catalogFile,
    rates_file: ratesFile,
    models_listed: listing.models.length,
  };
};

/** The human summary: every disabled, skipped and unpriced model with its reason. */
export const describeRun = (r: RunResult): string => {
  const routable = r.rows.filter((row) => row.enabled).length;
  const lines = [
    `${r.models_listed} models listed in ${r.region}${r.profiles_listed ? '' : ' (inference profiles not listed)'}`,
    `${r.rows.length} rows: ${routable} routable, ${r.disabled.length} disabled; ${r.skipped.length} models without a row`,
    `${r.priced.length} priced, ${r.unpriced.length} left out of rates.csv`,
  ];
  for (const d of r.disabled) lines.push(`  disabled ${d.model} (${d.model_id}): ${d.reason}`);
  for (const s of r.skipped) lines.push(`  no row for ${s.model_id}: ${s.reason}`);
  for (const u of r.unpriced) lines.push(`  unpriced ${u.model}: ${u.reason}`);
  for (const n of r.notes) lines.push(`  note: ${n}`);
  lines.push(`wrote ${r.catalog_file} and ${r.rates_file}`);
  if (r.unpriced.length > 0)
    lines.push(
      'unpriced models import with: svc registry import --skip-unpriced (or add their prices by hand)',
    );
  return lines.join('\n');
};
