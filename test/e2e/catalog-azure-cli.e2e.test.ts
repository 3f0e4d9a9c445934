import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../fakes/azure-openai.js';
import { runSvc } from '../helpers/svc-process.js';

// `svc catalog collect azure --context-length` (SPEC 2.8, 4.7): the stated context
// length lands in the catalog's context_length column; a value that is not a positive integer is
// refused before any deployment is probed.

const KEY = 'azure-resource-key';
const API_VERSION = '2024-10-21';
let fake: FakeAzure;
let dir: string;

beforeAll(async () => {
  fake = await startFakeAzure({
    apiKey: KEY,
    apiVersion: API_VERSION,
    deployments: [{ name: 'gpt4o-prod', model: 'gpt-4o' }],
  });
  dir = await mkdtemp(join(tmpdir(), 'svc-azure-context-'));
});
afterAll(async () => {
  await fake?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => fake.reset());

const collect = (extra: string[]) =>
  runSvc(
    [
      'catalog',
      'collect',
      'azure',
      '--base-url',
      fake.url,
      '--api-version',
      API_VERSION,
      '--catalog',
      join(dir, 'catalog.csv'),
      '--rates',
      join(dir, 'rates.csv'),
      ...extra,
    ],
    { AZURE_OPENAI_API_KEY: KEY },
  );

describe('svc catalog collect azure --context-length', () => {
  it('writes the value into context_length and reports it', async () => {
    const r = await collect(['--context-length', '128000', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ context_length: 128000 });
    const [header, row] = (await readFile(join(dir, 'catalog.csv'), 'utf8')).split('\n');
    expect(row!.split(',')[header!.split(',').indexOf('context_length')]).toBe('128000');
    expect(fake.violations).toEqual([]);
  });

  it('without it the column stays blank and the summary says so', async () => {
    const r = await collect([]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('give --context-length');
    const [header, row] = (await readFile(join(dir, 'catalog.csv'), 'utf8')).split('\n');
    expect(row!.split(',')[header!.split(',').indexOf('context_length')]).toBe('');
  });

  it('refuses a value that is not a positive integer before probing anything', async () => {
    for (const bad of ['0', '-5', '1.5', '1e5', 'lots', '']) {
      const r = await collect(['--context-length', bad]);
      expect(r.code, bad).not.toBe(0);
      expect(r.stderr, bad).toContain('--context-length must be a positive integer');
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('is documented in --help', async () => {
    const r = await runSvc(['catalog', 'collect', 'azure', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--context-length <n>\s+context_length in tokens for every row/);
  });
});
