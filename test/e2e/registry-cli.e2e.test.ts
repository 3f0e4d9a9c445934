import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RATES_COLUMNS } from '../../src/commands/registry/rates.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { runSvc } from '../helpers/svc-process.js';

// SPEC 2.8, 4.7 through the real binary: `svc registry import|upsert|approve|list`, --json,
// one-line refusals with exit code 1.

const FIXTURES = fileURLToPath(new URL('../fixtures/registry/', import.meta.url));
const at = (name: string) => join(FIXTURES, name);

let db: TestDatabase;
let dir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'svc-registry-e2e-'));
  env = { SVC_DATABASE_URL: db.url, SVC_DATA_DIR: dir };
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

const svc = (...args: string[]) => runSvc(['registry', ...args], env);
const importArgs = (name: string, ...extra: string[]) => [
  'import',
  '--adapter',
  'openai',
  '--catalog',
  at(`${name}.catalog.csv`),
  '--rates',
  at(`${name}.rates.csv`),
  ...extra,
];

describe('svc registry', () => {
  it('every subcommand has --help with --json', async () => {
    for (const sub of ['import', 'upsert', 'approve', 'list']) {
      const r = await runSvc(['registry', sub, '--help']);
      expect(r.code, sub).toBe(0);
      expect(r.stdout, sub).toContain('--json');
    }
  });

  it('imports an artifact, then re-applies it without writing anything', async () => {
    const first = await svc(...importArgs('openai'), '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      lane: 'openai',
      changed: true,
      endpoints_added: 5,
      cards_activated: 4,
      cards_flagged: 0,
    });
    const again = await svc(...importArgs('openai'), '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ changed: false, events: 0, endpoints_unchanged: 5 });
  });

  it('prints a summary naming retirements and prices awaiting approval; approve clears them', async () => {
    const r = await svc(...importArgs('openai-v2'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('endpoints: 0 added, 0 updated, 1 retired, 4 unchanged');
    expect(r.stdout).toContain('rate cards: 1 activated, 1 flagged for approval');

    const listed = JSON.parse((await svc('list', '--lane', 'openai', '--json')).stdout) as {
      model: string;
      retired: boolean;
      needs_approval: boolean;
    }[];
    expect(listed.find((e) => e.model === 'o3')?.retired).toBe(true);
    expect(listed.find((e) => e.model === 'gpt-4o')?.needs_approval).toBe(true);

    const approved = await svc('approve', '--lane', 'openai', '--model', 'gpt-4o', '--json');
    expect(JSON.parse(approved.stdout)).toEqual({
      lane: 'openai',
      model: 'gpt-4o',
      approved: ['openai/gpt-4o#2'],
    });
    const table = await svc('list', '--lane', 'openai');
    expect(table.stdout).toMatch(
      /^openai\s+gpt-4o\s+gpt-4o-2024-08-06\s+true\s+false\s+false\s+import\s+2\s+false$/m,
    );
  });

  it('refuses a blank price quoting file, line and column, on one line with exit code 1', async () => {
    const rates = join(dir, 'blank-price.rates.csv');
    await writeFile(
      rates,
      `${RATES_COLUMNS.join(',')}\ngpt-4o,standard,input_token,text,0,unbounded,,,,2025-01-01,\n`,
    );
    const r = await svc(
      'import',
      '--adapter',
      'openai',
      '--catalog',
      at('openai.catalog.csv'),
      '--rates',
      rates,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`svc: ${rates}:2:48: price is blank\n`);
  });

  it('refuses a shared-capability change by code', async () => {
    const r = await svc(
      'import',
      '--adapter',
      'azure',
      '--catalog',
      at('azure-text-only.catalog.csv'),
      '--rates',
      at('azure.rates.csv'),
    );
    expect(r.code).toBe(1);
    // Progress lines may come first; the failure itself is the one `svc:` line, last.
    const failures = r.stderr
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('svc:'));
    expect(failures).toHaveLength(1);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      /^svc: shared_model_capability_change: model gpt-4o: input_modalities text differs from text\|image on lane openai/,
    );
  });

  it('skip-unpriced names each dropped model', async () => {
    const r = await svc(...importArgs('openai', '--lane', 'openai-eu', '--skip-unpriced'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('dropped (unpriced): gpt-3.5-turbo, text-embedding-3-small');
  });

  it('upserts an operator endpoint with per-token prices', async () => {
    const r = await svc(
      'upsert',
      '--adapter',
      'openai',
      '--model',
      'house-model',
      '--provider-model-id',
      'house-v1',
      '--capabilities',
      'chat,tools,streaming',
      '--input-price-per-token',
      '0.000001',
      '--output-price-per-token',
      '0.000004',
      '--json',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      managed_by: 'operator',
      pricing_pinned: true,
      changed: true,
    });
    const bad = await svc(
      'upsert',
      '--adapter',
      'openai',
      '--model',
      'x',
      '--provider-model-id',
      'x',
      '--input-price-per-token',
      '1e-6',
      '--output-price-per-token',
      '0',
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^svc: --input-price-per-token: "1e-6" is not a plain decimal/);
  });
});
