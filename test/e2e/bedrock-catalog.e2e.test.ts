import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../../src/commands/registry/csv.js';
import { type FakeBedrock, startFakeBedrock } from '../fakes/bedrock-runtime.js';
import { foundationModel, inferenceProfile } from '../fakes/bedrock-runtime-control-plane.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { runSvc } from '../helpers/svc-process.js';

// `svc catalog collect bedrock` against a fake control-plane listing
// (SigV4 verified by the fake), the SPEC 4.7 row rules, and an output the registry imports as is.

const listing = {
  models: [
    foundationModel('anthropic.claude-3-haiku-20240307-v1:0', {
      modelName: 'Claude 3 Haiku',
      providerName: 'Anthropic',
    }),
    foundationModel('anthropic.claude-3-haiku-20240307-v1:0:48k', {
      modelName: 'Claude 3 Haiku',
      inferenceTypesSupported: ['PROVISIONED'],
    }),
    foundationModel('anthropic.claude-3-7-sonnet-20250219-v1:0', {
      modelName: 'Claude 3.7 Sonnet',
      inferenceTypesSupported: ['INFERENCE_PROFILE'],
    }),
    foundationModel('anthropic.claude-sonnet-4-20250514-v1:0', {
      modelName: 'Claude Sonnet 4',
      inferenceTypesSupported: ['INFERENCE_PROFILE'],
    }),
    foundationModel('amazon.titan-embed-text-v2:0', { outputModalities: ['EMBEDDING'] }),
    foundationModel('anthropic.claude-v2', { modelName: 'Claude' }),
    foundationModel('anthropic.claude-v2:1', { modelName: 'Claude' }),
    foundationModel('meta.llama3-8b-instruct-v1:0', { modelLifecycle: { status: 'LEGACY' } }),
    foundationModel('mistral.mistral-large-2402-v1:0', { modelName: 'Mistral Large (24.02)' }),
    foundationModel('cohere.command-r-v1:0', { modelName: 'Command R' }),
    foundationModel('amazon.nova-pro-v1:0', { modelName: 'Nova Pro', responseStreamingSupported: false }),
  ],
  profiles: [
    inferenceProfile('us.anthropic.claude-3-7-sonnet-20250219-v1:0', [
      'anthropic.claude-3-7-sonnet-20250219-v1:0',
    ]),
    inferenceProfile('us.anthropic.claude-sonnet-4-20250514-v1:0', [
      'anthropic.claude-sonnet-4-20250514-v1:0',
    ]),
    inferenceProfile('global.anthropic.claude-sonnet-4-20250514-v1:0', [
      'anthropic.claude-sonnet-4-20250514-v1:0',
    ]),
  ],
};

const entry = (
  model: string,
  inferenceType: string,
  unit: string,
  usd: string | string[],
  region = 'us-east-1',
) =>
  JSON.stringify({
    product: { attributes: { regionCode: region, model, inferenceType, feature: 'On-demand Inference' } },
    terms: {
      OnDemand: {
        'SKU.TERM': {
          effectiveDate: '2025-01-01T00:00:00Z',
          priceDimensions: Object.fromEntries(
            (Array.isArray(usd) ? usd : [usd]).map((u, i) => [
              `SKU.TERM.R${i}`,
              { unit, pricePerUnit: { USD: u } },
            ]),
          ),
        },
      },
    },
  });

const priceList = {
  PriceList: [
    entry('Claude 3 Haiku', 'Input tokens', '1K tokens', '0.00025'),
    entry('Claude 3 Haiku', 'Output tokens', '1K tokens', '0.00125'),
    entry('Claude 3 Haiku', 'Batch Input tokens', '1K tokens', '0.000125'),
    entry('Claude 3 Haiku', 'Input tokens', '1K tokens', '0.5', 'eu-west-1'),
    entry('Claude 3.7 Sonnet', 'Input tokens', '1K tokens', '0.003'),
    entry('Claude 3.7 Sonnet', 'Output tokens', '1K tokens', '0.015'),
    entry('Mistral Large 24.02', 'Input tokens', '1K tokens', '0.004'),
    entry('Mistral Large 24.02', 'Output tokens', '1K tokens', '0.012'),
    entry('Command R', 'Input tokens', '1K tokens', ['0.0005', '0.0004']),
    entry('Command R', 'Output tokens', '1K tokens', '0.0015'),
    entry('Nova Pro', 'Input tokens', '1M tokens', '0.8'),
    entry('Nova Pro', 'Output tokens', '1M tokens', '3.2'),
  ],
};

let fake: FakeBedrock;
let denied: FakeBedrock;
let dir: string;
let db: TestDatabase;

beforeAll(async () => {
  fake = await startFakeBedrock({ listing });
  denied = await startFakeBedrock({ listing: { ...listing, profilesDenied: true } });
  dir = await mkdtemp(join(tmpdir(), 'svc-bedrock-catalog-'));
  await writeFile(join(dir, 'prices.json'), JSON.stringify(priceList));
  db = await createTestDatabase();
});
afterAll(async () => {
  await fake?.close();
  await denied?.close();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

const collect = (target: FakeBedrock, out: string, ...extra: string[]) =>
  runSvc(
    [
      'catalog',
      'collect',
      'bedrock',
      '--region',
      'us-east-1',
      '--endpoint-url',
      target.url,
      '--out',
      out,
      ...extra,
    ],
    {
      AWS_ACCESS_KEY_ID: target.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: target.credentials.secretAccessKey,
    },
  );

const rowsOf = async (file: string) => {
  const table = parseCsv(file, await readFile(file, 'utf8'));
  if (!table.ok) throw new Error(table.refusal.message);
  const header = table.value.header.cells.map((c) => c.value);
  return table.value.records.map((r) => Object.fromEntries(r.cells.map((c, i) => [header[i]!, c.value])));
};

describe('svc catalog collect bedrock', () => {
  it('writes rows by the SPEC 4.7 rules and prints every disabled model with its reason', async () => {
    const out = join(dir, 'full');
    const r = await collect(
      fake,
      out,
      '--prices',
      join(dir, 'prices.json'),
      '--context-length',
      '200000',
      '--json',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(fake.violations).toEqual([]);
    const result = JSON.parse(r.stdout) as {
      disabled: { model: string; reason: string }[];
      skipped: { model_id: string; reason: string }[];
      unpriced: { model: string; reason: string }[];
    };
    const catalog = await rowsOf(join(out, 'catalog.csv'));
    const byModel = Object.fromEntries(catalog.map((row) => [row.model, row]));
    expect(Object.keys(byModel).sort()).toEqual([
      'claude-3-7-sonnet-20250219',
      'claude-3-haiku-20240307',
      'claude-3-haiku-20240307-48k',
      'claude-sonnet-4-20250514',
      'command-r',
      'llama3-8b-instruct',
      'mistral-large-2402',
      'nova-pro',
    ]);
    expect(byModel['claude-3-haiku-20240307']).toMatchObject({
      provider_model_id: 'anthropic.claude-3-haiku-20240307-v1:0',
      base_url: 'https://unused.invalid',
      display_name: 'Claude 3 Haiku',
      chat: 'true',
      tools: 'true',
      streaming: 'true',
      embeddings: 'false',
      responses: 'false',
      images: 'false',
      moderations: 'false',
      reasoning: 'false',
      input_modalities: 'text',
      output_modalities: 'text',
      context_length: '200000',
      enabled: 'true',
    });
    expect(byModel['claude-3-7-sonnet-20250219']).toMatchObject({
      provider_model_id: 'us.anthropic.claude-3-7-sonnet-20250219-v1:0',
      enabled: 'true',
    });
    expect(byModel['nova-pro']).toMatchObject({ streaming: 'false', enabled: 'true' });
    for (const m of ['claude-3-haiku-20240307-48k', 'claude-sonnet-4-20250514', 'llama3-8b-instruct'])
      expect(byModel[m]!.enabled, m).toBe('false');
    const reasons = Object.fromEntries(result.disabled.map((d) => [d.model, d.reason]));
    expect(reasons['claude-3-haiku-20240307-48k']).toMatch(/no on-demand invocation .*no inference profile/);
    expect(reasons['claude-sonnet-4-20250514']).toMatch(/2 inference profiles route to it/);
    expect(reasons['llama3-8b-instruct']).toMatch(/LEGACY/);
    const skipped = Object.fromEntries(result.skipped.map((s) => [s.model_id, s.reason]));
    expect(skipped['amazon.titan-embed-text-v2:0']).toMatch(/no text output/);
    expect(skipped['anthropic.claude-v2']).toMatch(/one canonical id claude/);
    expect(skipped['anthropic.claude-v2:1']).toMatch(/one canonical id claude/);

    const rates = await rowsOf(join(out, 'rates.csv'));
    const price = (model: string, meter: string) =>
      rates.find((x) => x.model === model && x.meter === meter)?.price;
    // A price per 1K tokens scaled exactly into the per-million column.
    expect(price('claude-3-haiku-20240307', 'input_token')).toBe('0.25');
    expect(price('claude-3-haiku-20240307', 'output_token')).toBe('1.25');
    expect(price('claude-3-7-sonnet-20250219', 'output_token')).toBe('15');
    expect(price('nova-pro', 'input_token')).toBe('0.8');
    expect(rates.find((x) => x.model === 'nova-pro')).toMatchObject({
      tier: 'standard',
      modality: 'text',
      min_context: '0',
      max_context: 'unbounded',
      effective_from: '2025-01-01',
    });
    const unpriced = Object.fromEntries(result.unpriced.map((u) => [u.model, u.reason]));
    expect(unpriced['mistral-large-2402']).toMatch(/near name "Mistral Large 24.02"/);
    expect(unpriced['command-r']).toMatch(/input_token: 2 price dimensions/);
    expect(rates.some((x) => x.model === 'mistral-large-2402' || x.model === 'command-r')).toBe(false);

    const human = await collect(fake, join(dir, 'human'), '--context-length', '1000');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(
      'disabled claude-sonnet-4-20250514 (anthropic.claude-sonnet-4-20250514-v1:0): 2 inference profiles',
    );
    expect(human.stdout).toContain('no row for amazon.titan-embed-text-v2:0: no text output');

    const imported = await runSvc(
      [
        'registry',
        'import',
        '--adapter',
        'bedrock',
        '--catalog',
        join(out, 'catalog.csv'),
        '--rates',
        join(out, 'rates.csv'),
        '--skip-unpriced',
        '--json',
      ],
      { SVC_DATABASE_URL: db.url, SVC_DATA_DIR: dir },
    );
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ lane: 'bedrock', changed: true });
  });

  it('without the list-inference-profiles action, profile-only models are emitted disabled', async () => {
    const r = await collect(denied, join(dir, 'denied'), '--context-length', '1000', '--json');
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as {
      profiles_listed: boolean;
      disabled: { model: string; reason: string }[];
      notes: string[];
    };
    expect(result.profiles_listed).toBe(false);
    expect(result.disabled.find((d) => d.model === 'claude-3-7-sonnet-20250219')?.reason).toMatch(
      /inference profiles could not be listed/,
    );
    expect(result.notes.join('\n')).toContain('AccessDeniedException');
    expect(result.notes.join('\n')).not.toMatch(/\d{12}|arn:/);
  });

  it('a wrong secret is refused by the listing service and the run fails in one line', async () => {
    const r = await runSvc(
      [
        'catalog',
        'collect',
        'bedrock',
        '--region',
        'us-east-1',
        '--endpoint-url',
        fake.url,
        '--out',
        join(dir, 'bad'),
      ],
      { AWS_ACCESS_KEY_ID: fake.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: 'wrong' },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/InvalidSignatureException/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
