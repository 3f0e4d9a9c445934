import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../fakes/azure-openai.js';
import { connect, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { runSvc } from '../helpers/svc-process.js';

// Azure OpenAI (SPEC 4.7) with the real `openai` SDK against `svc serve` and a fake Azure resource: chat through a
// deployment (buffered, streamed), fallback from a connection_not_configured candidate, and
// deployment discovery over HTTP and the CLI (SPEC 4.6, 4.7).

const KEY = 'azure-resource-key';
const API_VERSION = '2024-10-21';
let fake: FakeAzure;
let gw: GatewayEnv;
let client: OpenAI;
let connectionId: string;

const chat = (model: string) =>
  fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'ping' }] }),
  });

const discover = (apply: boolean) =>
  fetch(`${gw.serve.httpUrl}/api/provider-keys/${connectionId}/discover`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ apply }),
  });

beforeAll(async () => {
  fake = await startFakeAzure({
    apiKey: KEY,
    apiVersion: API_VERSION,
    projectPath: '/api/projects/p1',
    deployments: [
      { name: 'gpt4o-prod', model: 'gpt-4o' },
      { name: 'mini-prod', model: 'gpt-4o-mini' },
    ],
  });
  gw = await startGatewayEnv({ SVC_GATEWAY_RETRIES: '1', SVC_GATEWAY_RETRY_BACKOFF_MS: '5' });
  for (const model of ['gpt-4o', 'gpt-4.1', 'gpt-4o-mini']) {
    await gw.svc([
      'registry',
      'upsert',
      '--lane',
      'azure',
      '--adapter',
      'azure',
      '--model',
      model,
      '--provider-model-id',
      model,
      '--capabilities',
      'chat,streaming,tools',
      '--input-price-per-token',
      '0.0000025',
      '--output-price-per-token',
      '0.00001',
    ]);
  }
  const conn = await connect(gw, {
    provider: 'azure',
    secret: KEY,
    baseUrl: fake.url,
    metadata: {
      resource: 'myres',
      api_version: API_VERSION,
      deployments: { 'gpt-4o': 'gpt4o-prod' },
      project_endpoint: `${fake.url}/api/projects/p1`,
    },
  });
  connectionId = conn.id as string;
  client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  await eventually(async () => (await chat('gpt-4o')).status === 200, 5_000, 'gateway snapshots');
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe('chat through an azure deployment', () => {
  it('buffered: the deployment path, api-version and api-key upstream; the canonical model back', async () => {
    const r = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hello deployment' }],
    });
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('gpt-4o');
    expect(r.choices[0]!.message.content).toBe('hello deployment');
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/openai/deployments/gpt4o-prod/chat/completions');
    expect(sent.query).toEqual({ 'api-version': API_VERSION });
    expect(sent.headers['api-key']).toBe(KEY);
    expect(sent.headers.authorization).toBeUndefined();
    expect(fake.violations).toEqual([]);
  });

  it('streamed: chunks relayed in the primary shape, usage asked upstream', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'one two three' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      expect(chunk.model).toBe('gpt-4o');
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('one two three');
    expect(usage?.completion_tokens).toBe(3);
    expect(fake.requests.at(-1)!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(fake.violations).toEqual([]);
  });

  it('a model with no deployment mapping falls back to the next candidate without an upstream call', async () => {
    const r = await client.chat.completions.create({
      model: 'gpt-4.1,gpt-4o',
      messages: [{ role: 'user', content: 'fall forward' }],
    });
    expect(r.model).toBe('gpt-4o');
    expect(fake.requests.map((q) => q.path)).toEqual(['/openai/deployments/gpt4o-prod/chat/completions']);
  });

  it('alone, the unmapped model is 503 connection_not_configured', async () => {
    const err = (await client.chat.completions
      .create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect((err.error as { code: string }).code).toBe('connection_not_configured');
    expect(err.message).toContain('gpt-4.1');
    expect(fake.requests).toHaveLength(0);
  });
});

describe('deployment discovery', () => {
  it('HTTP report-only classifies; apply maps the new deployment and the gateway routes it', async () => {
    const report = await discover(false);
    expect(report.status).toBe(200);
    const body = (await report.json()) as {
      surface: string;
      deployments: { name: string; classification: string }[];
      applied: boolean;
    };
    expect(body.surface).toBe('projects');
    expect(body.deployments.map((d) => [d.name, d.classification])).toEqual([
      ['gpt4o-prod', 'mapped'],
      ['mini-prod', 'mappable'],
    ]);
    expect(body.applied).toBe(false);
    expect((await chat('gpt-4o-mini')).status).toBe(503);

    const applied = await discover(true);
    expect(applied.status).toBe(200);
    expect(((await applied.json()) as { counts: { added: number } }).counts.added).toBe(1);
    await eventually(async () => (await chat('gpt-4o-mini')).status === 200, 5_000, 'the new mapping');
    expect(fake.requests.at(-1)!.path).toBe('/openai/deployments/mini-prod/chat/completions');
  });

  it('the CLI reports the same for the tenant connection; a non-boolean apply is a 400', async () => {
    const cli = await gw.svc(['connections', 'discover', connectionId]);
    expect(cli).toMatchObject({ counts: { mapped: 2, mappable: 0 }, applied: false });
    const human = await runSvc(['connections', 'discover', connectionId], gw.env);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('mini-prod');
    const bad = await fetch(`${gw.serve.httpUrl}/api/provider-keys/${connectionId}/discover`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ apply: 'yes' }),
    });
    expect(bad.status).toBe(400);
  });

  it('when no listing answers, the 502 names every URL tried', async () => {
    fake.failListing('projects', 401);
    fake.failListing('data-plane', 500);
    const r = await discover(false);
    expect(r.status).toBe(502);
    const body = (await r.json()) as { error: string; message: string };
    expect(body.error).toBe('upstream_error');
    const { message } = body;
    expect(message).toContain(`${fake.url}/api/projects/p1/deployments?api-version=2025-05-01 -> HTTP 401`);
    expect(message).toContain(`${fake.url}/openai/deployments?api-version=2023-03-15-preview -> HTTP 500`);
  });
});

describe('operator commands', () => {
  it('svc keys platform discover --apply maps the platform key', async () => {
    await gw.svc([
      'keys',
      'platform',
      'set',
      '--provider',
      'azure',
      '--secret',
      KEY,
      '--base-url',
      fake.url,
      '--metadata',
      JSON.stringify({ resource: 'myres', api_version: API_VERSION }),
    ]);
    const report = await gw.svc(['keys', 'platform', 'discover', '--provider', 'azure', '--apply']);
    expect(report).toMatchObject({ surface: 'data-plane', applied: true, counts: { added: 2 } });
    expect(report.mappings).toEqual({ 'gpt-4o': 'gpt4o-prod', 'gpt-4o-mini': 'mini-prod' });
  });

  it('svc catalog collect azure probes each deployment with the env inference version and writes the pair', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-azure-collect-'));
    try {
      const catalog = join(dir, 'catalog.csv');
      const rates = join(dir, 'rates.csv');
      const r = await runSvc(
        [
          'catalog',
          'collect',
          'azure',
          '--base-url',
          fake.url,
          '--catalog',
          catalog,
          '--rates',
          rates,
          '--json',
        ],
        { ...gw.env, AZURE_OPENAI_API_KEY: KEY, AZURE_OPENAI_API_VERSION: API_VERSION },
      );
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as {
        api_version: string;
        rows: { model: string; routable: boolean }[];
      };
      expect(out.api_version).toBe(API_VERSION);
      expect(out.rows.map((row) => [row.model, row.routable])).toEqual([
        ['gpt-4o', true],
        ['gpt-4o-mini', true],
      ]);
      expect((await readFile(catalog, 'utf8')).split('\n')[1]).toContain(
        'gpt-4o,gpt-4o,https://unused.invalid',
      );
      expect((await readFile(rates, 'utf8')).split('\n')).toHaveLength(6);
      expect(fake.requests.filter((q) => q.method === 'POST')).toHaveLength(6);
      expect(fake.violations).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
