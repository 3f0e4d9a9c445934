import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { CommandContext } from '../../commands/decider.js';
import { readArtifact } from '../../commands/registry/artifact.js';
import { formatRefusal } from '../../commands/registry/csv.js';
import { LANE_NAME } from '../../commands/registry/events.js';
import {
  approveRateCards,
  importArtifact,
  setQuarantine,
  upsertEndpoint,
} from '../../commands/registry/handler.js';
import type { ImportSummary } from '../../commands/registry/import.js';
import type { PostgresEventStore } from '../../events/postgres/event-store.js';
import { newId } from '../../lib/ids.js';
import { validateOrigin } from '../../lib/origin.js';
import { MODALITIES, type Modality } from '../../pricing/index.js';
import { catchUpRegistry, listEndpoints, sharedFactsFrom } from '../../projections/registry/queries.js';
import {
  type Adapter,
  CAPABILITIES,
  type Capabilities,
  type EndpointFacts,
  isAdapter,
} from '../../providers/endpoint.js';
import { CliError, emit, table } from '../output.js';
import { progress } from '../progress.js';
import { type Database, withEventStore } from '../runtime.js';
import {
  type ExtraPriceOptions,
  extraPrices,
  PRICE_SYNTAX,
  unpricedWarning,
  usd,
} from './registry-prices.js';

const context = (): CommandContext => ({
  commandId: newId('cmd'),
  actor: 'operator:cli',
  now: new Date().toISOString(),
});

const adapterOf = (value: string): Adapter => {
  if (!isAdapter(value))
    throw new CliError(
      `unknown adapter ${value} (known: openai, anthropic, bedrock, bedrock-gov, azure, azure-gov)`,
    );
  return value;
};

/** The lane defaults to the adapter's id; a second environment names its own lane. */
const laneOf = (lane: string | undefined, adapter: Adapter): string => {
  const name = lane ?? adapter;
  if (!LANE_NAME.test(name)) {
    throw new CliError(`--lane ${name}: lower-case letters, digits, '-' and '_' only, at most 63 characters`);
  }
  return name;
};

/** Broken rules from the decider become the one-line CLI failure, code first. */
const withDatabase = <T>(fn: (db: Database, store: PostgresEventStore) => Promise<T>): Promise<T> =>
  withEventStore(({ db, store }) => fn(db, store), { describe: (err) => `${err.code}: ${err.message}` });

const readText = async (path: string, what: string): Promise<string> => {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new CliError(
      `cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
};

const describeImport = (s: ImportSummary & { changed: boolean }): string => {
  const lines = [
    `lane ${s.lane} (${s.adapter}) ${s.changed ? 'imported' : 'unchanged: this artifact is already applied'} ${s.digest}`,
    `endpoints: ${s.endpoints_added} added, ${s.endpoints_updated} updated, ${s.endpoints_retired} retired, ${s.endpoints_unchanged} unchanged`,
    `rate cards: ${s.cards_activated} activated, ${s.cards_flagged} flagged for approval`,
  ];
  if (s.dropped.length > 0) lines.push(`dropped (unpriced): ${s.dropped.join(', ')}`);
  if (s.skipped_operator.length > 0)
    lines.push(`left as the operator wrote them: ${s.skipped_operator.join(', ')}`);
  if (s.cards_flagged > 0)
    lines.push(`approve corrected prices with: svc registry approve --lane ${s.lane} --model <model>`);
  return lines.join('\n');
};

interface ImportOptions {
  lane?: string;
  adapter: string;
  catalog: string;
  rates: string;
  skipUnpriced?: boolean;
  json?: boolean;
}

const runImport = async (opts: ImportOptions) => {
  const adapter = adapterOf(opts.adapter);
  const lane = laneOf(opts.lane, adapter);
  const artifact = readArtifact({
    catalogFile: opts.catalog,
    catalogText: await readText(opts.catalog, 'catalog'),
    ratesFile: opts.rates,
    ratesText: await readText(opts.rates, 'rates'),
  });
  if (!artifact.ok) throw new CliError(formatRefusal(artifact.refusal));
  // Steps: read, catch the read model up, decide and append, project the new events.
  const bar = progress(`registry import ${lane}`, { quiet: opts.json });
  bar.update(1, 4);
  const result = await withDatabase(async (db, store) => {
    // Other lanes' facts must be current before the shared-capability check reads them.
    await catchUpRegistry(db.pool);
    bar.update(2, 4);
    const imported = await importArtifact(
      store,
      sharedFactsFrom(db.pool),
      { lane, adapter, artifact: artifact.value, skipUnpriced: opts.skipUnpriced === true },
      context(),
    );
    bar.update(3, 4);
    await catchUpRegistry(db.pool);
    bar.update(4, 4);
    return imported;
  }).finally(() => bar.stop());
  const summary = { ...result.summary, changed: result.events.length > 0, events: result.events.length };
  emit(opts.json, summary, describeImport);
};

const countOption = (value: string | undefined, flag: string): number | null => {
  if (value === undefined) return null;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new CliError(`${flag} must be a positive integer`);
  return n;
};

const modalitiesOption = (value: string, flag: string): Modality[] => {
  const parts = value.split(/[|,]/).map((p) => p.trim());
  const unknown = parts.find((p) => !(MODALITIES as readonly string[]).includes(p));
  if (unknown !== undefined)
    throw new CliError(`${flag}: unknown modality ${unknown} (known: ${MODALITIES.join(', ')})`);
  return MODALITIES.filter((m) => parts.includes(m));
};

export const capabilitiesOption = (value: string): Capabilities => {
  const parts = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const unknown = parts.find((p) => !(CAPABILITIES as readonly string[]).includes(p));
  if (unknown !== undefined) {
    throw new CliError(`--capabilities: unknown capability ${unknown} (known: ${CAPABILITIES.join(', ')})`);
  }
  return Object.fromEntries(CAPABILITIES.map((c) => [c, parts.includes(c)])) as Capabilities;
};

interface UpsertOptions extends ExtraPriceOptions {
  lane?: string;
  adapter: string;
  model: string;
  providerModelId: string;
  baseUrl?: string;
  displayName?: string;
  capabilities: string;
  inputModalities: string;
  outputModalities: string;
  contextLength?: string;
  maxOutputTokens?: string;
  disabled?: boolean;
  inputPricePerToken: string;
  outputPricePerToken: string;
  json?: boolean;
}

/**
 * An operator's endpoint with pinned prices (`svc registry upsert`, and `svc demo`'s lane), the
 * registry read model brought up to date before (shared facts) and after (the answer).
 */
export const upsertByHand = async (
  db: Database,
  store: PostgresEventStore,
  input: Parameters<typeof upsertEndpoint>[2],
) => {
  await catchUpRegistry(db.pool);
  const r = await upsertEndpoint(store, sharedFactsFrom(db.pool), input, context());
  await catchUpRegistry(db.pool);
  return r;
};

const runUpsert = async (opts: UpsertOptions) => {
  const adapter = adapterOf(opts.adapter);
  const lane = laneOf(opts.lane, adapter);
  let baseUrl: string | null = null;
  if (opts.baseUrl !== undefined) {
    const origin = validateOrigin(opts.baseUrl, '--base-url');
    if (!origin.ok) throw new CliError(origin.message);
    baseUrl = origin.value;
  }
  const endpoint: EndpointFacts = {
    model: opts.model,
    provider_model_id: opts.providerModelId,
    base_url: baseUrl,
    display_name: opts.displayName ?? opts.model,
    family: '',
    release_date: null,
    description: '',
    capabilities: capabilitiesOption(opts.capabilities),
    input_modalities: modalitiesOption(opts.inputModalities, '--input-modalities'),
    output_modalities: modalitiesOption(opts.outputModalities, '--output-modalities'),
    context_length: countOption(opts.contextLength, '--context-length'),
    max_output_tokens: countOption(opts.maxOutputTokens, '--max-output-tokens'),
    enabled: opts.disabled !== true,
  };
  const input = {
    lane,
    adapter,
    endpoint,
    inputPricePerToken: usd(opts.inputPricePerToken, '--input-price-per-token'),
    outputPricePerToken: usd(opts.outputPricePerToken, '--output-price-per-token'),
    extraPrices: extraPrices(opts),
  };
  const unpriced = unpricedWarning(adapter, `${lane}/${opts.model}`, input.extraPrices);
  const result = await withDatabase((db, store) => upsertByHand(db, store, input));
  const card = result.events.find((e) => e.type === 'RateCardActivated');
  emit(
    opts.json,
    {
      lane,
      model: opts.model,
      managed_by: 'operator',
      pricing_pinned: true,
      changed: result.events.length > 0,
      card_id: card?.type === 'RateCardActivated' ? card.data.card_id : null,
      unpriced_meters: unpriced.unpriced_meters,
      warnings: unpriced.warning === null ? [] : [unpriced.warning],
    },
    (r) =>
      r.changed
        ? `upserted ${r.lane}/${r.model} (operator-managed, pricing pinned)${r.card_id ? `; rate card ${r.card_id} activated` : ''}`
        : `${r.lane}/${r.model} unchanged`,
  );
  if (unpriced.warning !== null) process.stderr.write(`svc: warning: ${unpriced.warning}\n`);
};

const runApprove = async (opts: { lane: string; model: string; json?: boolean }) => {
  const result = await withDatabase(async (db, store) => {
    const r = await approveRateCards(store, { lane: opts.lane, model: opts.model }, context());
    await catchUpRegistry(db.pool);
    return r;
  });
  const approved = result.events.flatMap((e) => (e.type === 'RateCardApproved' ? [e.data.card_id] : []));
  emit(opts.json, { lane: opts.lane, model: opts.model, approved }, (r) =>
    r.approved.length > 0
      ? `approved ${r.approved.join(', ')}`
      : `${r.lane}/${r.model}: no rate card awaits approval`,
  );
};

const runList = async (opts: { lane?: string; json?: boolean }) => {
  const rows = await withDatabase((db) => listEndpoints(db.pool, opts.lane));
  emit(opts.json, rows, (r) =>
    r.length === 0
      ? 'no endpoints'
      : table(r as unknown as Record<string, unknown>[], [
          'lane',
          'model',
          'provider_model_id',
          'enabled',
          'retired',
          'quarantined',
          'managed_by',
          'revision',
          'needs_approval',
          'unpriced_meters',
        ]),
  );
};

export const registerRegistryCommands = (program: Command): void => {
  const registry = program
    .command('registry')
    .description('upstream endpoints and rate cards: import artifacts, upsert by hand, approve, list');

  registry
    .command('import')
    .description('apply a catalog and rates CSV pair to a lane; re-applying the same pair changes nothing')
    .requiredOption('--adapter <adapter>', 'openai, anthropic, bedrock, bedrock-gov, azure or azure-gov')
    .option('--lane <lane>', 'lane name (default: the adapter id); a second environment is a second lane')
    .requiredOption('--catalog <file>', 'catalog CSV')
    .requiredOption('--rates <file>', 'rates CSV (token prices in USD per million tokens)')
    .option('--skip-unpriced', 'import only models priced on both input_token and output_token')
    .option('--json', 'print JSON')
    .action(runImport);

  registry
    .command('upsert')
    .description('write one endpoint by hand (managed_by=operator, pricing_pinned=true)')
    .requiredOption('--adapter <adapter>', 'openai, anthropic, bedrock, bedrock-gov, azure or azure-gov')
    .option('--lane <lane>', 'lane name (default: the adapter id)')
    .requiredOption('--model <model>', 'canonical model id')
    .requiredOption('--provider-model-id <id>', "the upstream's own model id or deployment base model")
    .option('--base-url <url>', 'lane default origin for this endpoint')
    .option('--display-name <name>', 'display name (default: the model id)')
    .option('--capabilities <list>', `comma-separated: ${CAPABILITIES.join(',')}`, 'chat,streaming')
    .option('--input-modalities <list>', 'text|image|audio', 'text')
    .option('--output-modalities <list>', 'text|image|audio', 'text')
    .option('--context-length <n>', 'context window in tokens')
    .option('--max-output-tokens <n>', 'output ceiling in tokens')
    .option('--disabled', 'write the endpoint out of rotation')
    .requiredOption('--input-price-per-token <usd>', 'USD per input token, exact decimal')
    .requiredOption('--output-price-per-token <usd>', 'USD per output token, exact decimal')
    .option('--cache-read-price-per-token <usd>', 'USD per prompt-cache read token, exact decimal')
    .option('--cache-write-price-per-token <usd>', 'USD per prompt-cache write token (every cache lifetime)')
    .option(
      '--price <spec>',
      `any other rate row, repeatable: ${PRICE_SYNTAX}, e.g. cache_write_token@1h=0.000006, input_token/audio=0.00004, request=0.01, tool_call#web_search=0.01`,
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--json', 'print JSON')
    .action(runUpsert);

  registry
    .command('approve')
    .description('clear the approval flag of corrected rate cards of one model')
    .requiredOption('--lane <lane>', 'lane name')
    .requiredOption('--model <model>', 'canonical model id')
    .option('--json', 'print JSON')
    .action(runApprove);

  registry
    .command('list')
    .description('list endpoints with their state and latest rate card')
    .option('--lane <lane>', 'only this lane')
    .option('--json', 'print JSON')
    .action(runList);

  const models = program
    .command('models')
    .description('routing state of registry endpoints (billing-health quarantine)');
  for (const [name, type, description] of [
    ['quarantine', 'QuarantineEndpoint', 'take an endpoint out of rotation for every tenant'],
    ['unquarantine', 'UnquarantineEndpoint', 'return a quarantined endpoint to rotation (SPEC 3)'],
  ] as const) {
    models
      .command(name)
      .description(description)
      .requiredOption('--lane <lane>', 'lane name')
      .requiredOption('--model <model>', 'canonical model id')
      .option('--json', 'print JSON')
      .action(async (opts: { lane: string; model: string; json?: boolean }) => {
        const changed = await withDatabase(async (db, store) => {
          const data = { lane: opts.lane, model: opts.model };
          const command =
            type === 'QuarantineEndpoint'
              ? ({
                  type,
                  data: {
                    ...data,
                    failures: 0,
                    total: 0,
                    window_minutes: 0,
                    min_failures: 0,
                    min_ratio_bps: 0,
                  },
                } as const)
              : ({ type, data } as const);
          const r = await setQuarantine(store, command, {
            commandId: newId('cmd'),
            actor: 'cli',
            now: new Date().toISOString(),
          });
          await catchUpRegistry(db.pool);
          return r.events.length > 0;
        });
        emit(
          opts.json,
          { lane: opts.lane, model: opts.model, quarantined: type === 'QuarantineEndpoint', changed },
          (r) =>
            `${r.lane}/${r.model} ${r.quarantined ? 'quarantined' : 'back in rotation'}${r.changed ? '' : ' (unchanged)'}`,
        );
      });
  }
};
