import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, type FakeDeployment, startFakeAzure } from '../../../test/fakes/azure-openai.js';
import { azureHttp } from '../../providers/azure/client.js';
import {
  CollectorError,
  collectAzure,
  collectionCsv,
  DEFAULT_INFERENCE_VERSION,
  inferenceVersion,
  judgeProbe,
} from './azure.js';

// SPEC 4.7 deployment-host collector: three probes per dispatchable deployment; true only when
// answered, false only when refused after the baseline succeeded, otherwise blank and non-routable.

const KEY = 'azure-resource-key';
let fake: FakeAzure;
const http = azureHttp({ timeoutMs: 2_000 });

beforeAll(async () => {
  fake = await startFakeAzure({ apiKey: KEY, apiVersion: DEFAULT_INFERENCE_VERSION, deployments: [] });
});
afterAll(() => fake?.close());
beforeEach(() => fake.reset());

const collect = (deployments: FakeDeployment[]) => {
  fake.setDeployments(deployments);
  return collectAzure({ origin: fake.url, secret: KEY, apiVersion: DEFAULT_INFERENCE_VERSION }, http);
};

describe('probe outcomes', () => {
  it('all three answered: chat, tools and streaming true, routable', async () => {
    const c = await collect([{ name: 'gpt4o', model: 'gpt-4o' }]);
    expect(c.rows).toEqual([
      expect.objectContaining({
        model: 'gpt-4o',
        chat: true,
        tools: true,
        streaming: true,
        routable: true,
        reasons: [],
      }),
    ]);
    const probes = fake.requests.filter((r) => r.method === 'POST');
    expect(probes.map((r) => r.body)).toEqual([
      expect.objectContaining({ max_tokens: 1 }),
      expect.objectContaining({
        max_tokens: 1,
        tool_choice: 'auto',
        tools: [expect.objectContaining({ type: 'function' })],
      }),
      expect.objectContaining({ max_tokens: 1, stream: true }),
    ]);
    expect(probes.every((r) => r.query['api-version'] === '2024-06-01')).toBe(true);
    expect(fake.violations).toEqual([]);
  });

  it('tools refused after a good baseline: tools false, still routable', async () => {
    const [row] = (await collect([{ name: 'old', model: 'gpt-35-turbo', script: 'refuse-tools' }])).rows;
    expect(row).toMatchObject({ chat: true, tools: false, streaming: true, routable: true });
    expect(row!.reasons[0]).toMatch(/^tools probe refused: HTTP 400/);
  });

  it('stream refused after a good baseline: streaming false, still routable', async () => {
    const [row] = (await collect([{ name: 'nostream', model: 'o1', script: 'refuse-stream' }])).rows;
    expect(row).toMatchObject({ chat: true, tools: true, streaming: false, routable: true });
  });

  it('baseline refused: nothing is proven, so every cell is blank and the row is not routable', async () => {
    const refused = {
      status: 400,
      body: { error: { code: 'OperationNotSupported', message: 'chat not supported' } },
    };
    const [row] = (await collect([{ name: 'emb', model: 'text-embedding-3-small', script: refused }])).rows;
    expect(row).toMatchObject({ chat: null, tools: null, streaming: null, routable: false });
  });

  it('an uncertain probe (5xx, throttling, no answer) leaves a blank and the row non-routable', () => {
    expect(judgeProbe('tools', { ok: true, answer: { status: 500, text: 'boom' } }).outcome).toBe(
      'uncertain',
    );
    expect(judgeProbe('tools', { ok: true, answer: { status: 429, text: 'slow' } }).outcome).toBe(
      'uncertain',
    );
    expect(judgeProbe('stream', { ok: false, error: 'no answer (ECONNRESET)' }).outcome).toBe('uncertain');
    expect(judgeProbe('stream', { ok: true, answer: { status: 200, text: 'data: {}\n\n' } }).outcome).toBe(
      'uncertain',
    );
    expect(judgeProbe('baseline', { ok: true, answer: { status: 400, text: '{}' } }).outcome).toBe('refused');
  });

  it('a 5xx on one probe after a good baseline: that cell blank, row not routable', async () => {
    const busy = { status: 503, body: { error: { code: 'ServiceUnavailable' } }, when: 'tools' as const };
    const [row] = (await collect([{ name: 'flaky', model: 'gpt-4o', script: busy }])).rows;
    expect(row).toMatchObject({ chat: true, tools: null, streaming: true, routable: false });
  });

  it('a deployment not in the succeeded state is not probed and not routable', async () => {
    const c = await collect([{ name: 'creating', model: 'gpt-4.1', status: 'creating' }]);
    expect(c.rows[0]).toMatchObject({ dispatchable: false, chat: null, routable: false });
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  });
});

describe('the run', () => {
  it('two deployments of one base model stop it', async () => {
    const err = await collect([
      { name: 'a', model: 'gpt-4o' },
      { name: 'b', model: 'gpt-4o' },
    ]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CollectorError);
    expect((err as Error).message).toContain('gpt-4o has two deployments (a and b)');
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it('the inference version: flag, then AZURE_OPENAI_API_VERSION, then 2024-06-01', () => {
    expect(inferenceVersion('2025-01-01', { AZURE_OPENAI_API_VERSION: '2024-10-21' })).toBe('2025-01-01');
    expect(inferenceVersion(undefined, { AZURE_OPENAI_API_VERSION: '2024-10-21' })).toBe('2024-10-21');
    expect(inferenceVersion(undefined, {})).toBe('2024-06-01');
  });

  it('writes the catalog and rates CSV pair: blanks stay blank, responses false, enabled as routable', async () => {
    const refused = { status: 400, body: { error: { code: 'OperationNotSupported' } } };
    const c = await collect([
      { name: 'gpt4o', model: 'gpt-4o', script: 'refuse-tools' },
      { name: 'emb', model: 'text-embedding-3-small', script: refused },
    ]);
    const { catalog, rates } = collectionCsv(c, { effectiveFrom: '2026-01-01' });
    const lines = catalog.trim().split('\n');
    expect(lines[0]).toBe(
      'model,provider_model_id,base_url,display_name,family,release_date,description,chat,embeddings,responses,images,moderations,tools,streaming,reasoning,input_modalities,output_modalities,context_length,max_output_tokens,enabled',
    );
    // Rows follow the deployments' names.
    expect(lines[1]).toBe(
      'text-embedding-3-small,text-embedding-3-small,https://unused.invalid,text-embedding-3-small,text-embedding-3-small,,deployment emb,,,false,,,,,,text,text,,,false',
    );
    expect(lines[2]).toBe(
      'gpt-4o,gpt-4o,https://unused.invalid,gpt-4o,gpt-4o,,deployment gpt4o,true,,false,,,false,true,,text,text,,,true',
    );
    expect(rates.trim().split('\n').slice(3, 5)).toEqual([
      'gpt-4o,standard,input_token,text,0,unbounded,,,,2026-01-01,',
      'gpt-4o,standard,output_token,text,0,unbounded,,,,2026-01-01,',
    ]);
  });

  it('a stated context length fills the context_length column of every row', async () => {
    const c = await collect([{ name: 'gpt4o', model: 'gpt-4o' }]);
    const { catalog } = collectionCsv(c, { effectiveFrom: '2026-01-01', contextLength: 128_000 });
    const header = catalog.split('\n')[0]!.split(',');
    const row = catalog.split('\n')[1]!.split(',');
    expect(row[header.indexOf('context_length')]).toBe('128000');
    expect(row[header.indexOf('max_output_tokens')]).toBe('');
  });
});
