import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { validateOrigin } from '../../lib/origin.js';
import { withOwnPool } from '../../providers/azure/client.js';
import { DEFAULT_DOMAIN } from '../../providers/azure/origin.js';
import { controlPlaneOrigin, isRegion } from '../../providers/bedrock/origin.js';
import {
  type Collection,
  CollectorError,
  collectAzure,
  collectionCsv,
  INFERENCE_VERSION_ENV,
  inferenceVersion,
} from '../catalog/azure.js';
import { CollectError, describeRun, runCollect } from '../catalog/bedrock-run.js';
import { CliError, emit } from '../output.js';
import { progress } from '../progress.js';

interface AzureCollectOptions {
  provider: string;
  resource?: string;
  domain?: string;
  baseUrl?: string;
  projectEndpoint?: string;
  apiKey?: string;
  apiVersion?: string;
  discoveryApiVersion?: string;
  contextLength?: string;
  catalog: string;
  rates: string;
  json?: boolean;
}

/** The data-plane origin: an explicit --base-url, else https://{resource}.{domain}. */
const azureOrigin = (opts: AzureCollectOptions): string => {
  if (opts.provider !== 'azure' && opts.provider !== 'azure-gov')
    throw new CliError(`--provider must be azure or azure-gov, not ${opts.provider}`);
  const value =
    opts.baseUrl ??
    (opts.resource === undefined
      ? undefined
      : `https://${opts.resource}.${opts.domain ?? DEFAULT_DOMAIN[opts.provider]}`);
  if (value === undefined) throw new CliError('give --resource (or --base-url for a custom origin)');
  const origin = validateOrigin(value, opts.baseUrl === undefined ? '--resource' : '--base-url');
  if (!origin.ok) throw new CliError(origin.message);
  return origin.value;
};

/** --context-length of every collector: a whole number of tokens, at least one. */
const contextLengthOption = (value: string | undefined): number | null => {
  if (value === undefined) return null;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new CliError(
      `--context-length must be a positive integer number of tokens, not ${JSON.stringify(value)}`,
    );
  return n;
};

const describeCollection = (
  c: Collection & { catalog_file: string; rates_file: string; context_length: number | null },
): string => {
  const lines = [`deployments listed from ${c.listing_url}; probes used api-version ${c.api_version}`];
  for (const r of c.rows) {
    const caps = `chat=${r.chat ?? '?'} tools=${r.tools ?? '?'} streaming=${r.streaming ?? '?'}`;
    lines.push(
      `  ${r.model} (deployment ${r.deployment}): ${r.routable ? 'routable' : 'NOT routable'}, ${caps}`,
    );
    for (const reason of r.reasons) lines.push(`    ${reason}`);
  }
  for (const s of c.skipped) lines.push(`  skipped deployment ${s.deployment}: ${s.reason}`);
  lines.push(
    `wrote ${c.rows.length} rows to ${c.catalog_file} and ${c.rates_file}`,
    c.context_length === null
      ? 'context_length and prices are not in the listing: fill them (or give --context-length) before svc registry import'
      : `context_length ${c.context_length} on every row; prices are not in the listing: fill them before svc registry import`,
  );
  return lines.join('\n');
};

const collectAzureCommand = async (opts: AzureCollectOptions) => {
  const origin = azureOrigin(opts);
  const contextLength = contextLengthOption(opts.contextLength);
  const secret = opts.apiKey ?? process.env.AZURE_OPENAI_API_KEY;
  if (!secret) throw new CliError('give --api-key or set AZURE_OPENAI_API_KEY');
  const bar = progress('probing deployments', { quiet: opts.json });
  let collected: Collection;
  try {
    collected = await withOwnPool((http) =>
      collectAzure(
        {
          origin,
          secret,
          apiVersion: inferenceVersion(opts.apiVersion),
          ...(opts.projectEndpoint === undefined ? {} : { projectEndpoint: opts.projectEndpoint }),
          ...(opts.discoveryApiVersion === undefined
            ? {}
            : { discoveryApiVersion: opts.discoveryApiVersion }),
        },
        http,
        (done, total) => bar.update(done, total),
      ),
    );
  } catch (err) {
    if (err instanceof CollectorError) throw new CliError(err.message);
    throw err;
  } finally {
    bar.stop();
  }
  const csv = collectionCsv(collected, {
    effectiveFrom: new Date().toISOString().slice(0, 10),
    contextLength,
  });
  await writeFile(opts.catalog, csv.catalog);
  await writeFile(opts.rates, csv.rates);
  emit(
    opts.json,
    { ...collected, context_length: contextLength, catalog_file: opts.catalog, rates_file: opts.rates },
    describeCollection,
  );
};

interface BedrockCollectOptions {
  region: string;
  out: string;
  endpointUrl?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  prices?: string;
  modelFacts?: string;
  contextLength?: string;
  effectiveFrom?: string;
  json?: boolean;
}

const collectBedrockCommand = async (opts: BedrockCollectOptions) => {
  if (!isRegion(opts.region)) throw new CliError(`--region ${opts.region} is not a region name`);
  const accessKeyId = opts.accessKeyId ?? process.env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = opts.secretAccessKey ?? process.env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey)
    throw new CliError(
      'give --access-key-id and --secret-access-key, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY',
    );
  let origin = controlPlaneOrigin(opts.region);
  if (opts.endpointUrl !== undefined) {
    const checked = validateOrigin(opts.endpointUrl, '--endpoint-url');
    if (!checked.ok) throw new CliError(checked.message);
    origin = checked.value;
  }
  const contextLength = contextLengthOption(opts.contextLength);
  if (opts.effectiveFrom !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(opts.effectiveFrom))
    throw new CliError('--effective-from must be a date YYYY-MM-DD');
  const bar = progress('listing models', { quiet: opts.json });
  try {
    const result = await runCollect({
      region: opts.region,
      origin,
      credentials: { access_key_id: accessKeyId, secret_access_key: secretAccessKey },
      outDir: opts.out,
      pricesFile: opts.prices ?? null,
      modelFactsFile: opts.modelFacts ?? null,
      contextLength,
      effectiveFrom: opts.effectiveFrom ?? null,
      onProgress: (done, total) => bar.update(done, total),
    });
    bar.stop();
    emit(opts.json, result, describeRun);
  } catch (err) {
    bar.stop();
    if (err instanceof CollectError) throw new CliError(err.message);
    throw err;
  }
};

/** Catalog generation tools (SPEC 4.7): each collector writes a catalog and rates CSV pair. */
export const registerCatalogCommands = (program: Command): void => {
  const collect = program
    .command('catalog')
    .description('catalog generation tools for operators')
    .command('collect')
    .description('derive a catalog and rates CSV pair from a live provider');
  collect
    .command('azure')
    .description(
      'rows from the live deployment listing; each deployment probed for chat, tools and streaming',
    )
    .option('--provider <provider>', 'azure or azure-gov (selects the default domain)', 'azure')
    .option('--resource <name>', 'resource name: the origin is https://<resource>.<domain>')
    .option('--domain <suffix>', 'host suffix (default: the lane default domain)')
    .option('--base-url <origin>', 'data-plane origin override')
    .option('--project-endpoint <url>', 'project URL: its deployment listing is tried first')
    .option('--api-key <key>', 'resource api key (default: env AZURE_OPENAI_API_KEY)')
    .option(
      '--api-version <version>',
      `probe inference api-version (default: env ${INFERENCE_VERSION_ENV} or 2024-06-01)`,
    )
    .option('--discovery-api-version <version>', 'listing api-version override')
    .option(
      '--context-length <n>',
      'context_length in tokens for every row (the listing does not state it; blank when absent)',
    )
    .requiredOption('--catalog <file>', 'catalog CSV to write')
    .requiredOption('--rates <file>', 'rates CSV to write')
    .option('--json', 'print JSON')
    .action(collectAzureCommand);
  collect
    .command('bedrock')
    .description('rows from the foundation-model and inference-profile listings of one region')
    .requiredOption('--region <region>', 'region to list (also the signing region)')
    .option('--out <dir>', 'directory for catalog.csv and rates.csv', '.')
    .option('--endpoint-url <origin>', 'control-plane origin override (default: the regional host)')
    .option('--access-key-id <id>', 'access key id (default: env AWS_ACCESS_KEY_ID)')
    .option('--secret-access-key <key>', 'secret access key (default: env AWS_SECRET_ACCESS_KEY)')
    .option(
      '--prices <file>',
      'price-list JSON (GetProducts PriceList entries) for exact on-demand token prices',
    )
    .option('--context-length <n>', 'context_length for every row (the listing does not state it)')
    .option('--model-facts <file>', 'JSON: model id -> {context_length, max_output_tokens}')
    .option('--effective-from <date>', 'rate-card start (default: the price terms, else today)')
    .option('--json', 'print JSON')
    .action(collectBedrockCommand);
};
