import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAnthropic, message, startFakeAnthropic } from '../fakes/anthropic-upstream.js';
import { connect, envelopesOf } from '../fakes/anthropic-upstream-gateway.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { metricSum } from '../helpers/outside.js';
import { runSvc } from '../helpers/svc-process.js';

// An operator's hand-written endpoint prices every meter its upstream bills (SPEC 2.8): a Claude
// model upserted with input and output prices alone fails billing on every reply that reports
// prompt-cache tokens, and billing health would quarantine it for every tenant (SPEC 3, 4.1 rule
// 10). The upsert prices the cache meters exactly, and says so loudly when it does not: on the
// upsert itself, in `svc registry list` and in /metrics.

const TENANT_KEY = 'sk-ant-tenant-byok';
let fake: FakeAnthropic;
let gw: GatewayEnv;

const claude = (model: string, extra: string[]) => [
  'registry',
  'upsert',
  '--adapter',
  'anthropic',
  '--model',
  model,
  '--provider-model-id',
  'claude-sonnet-4-5-20250929',
  '--base-url',
  fake.url,
  '--capabilities',
  'chat,streaming,tools',
  '--input-price-per-token',
  '0.000003',
  '--output-price-per-token',
  '0.000015',
  ...extra,
];

const cachedUsage = {
  input_tokens: 100,
  output_tokens: 20,
  cache_read_input_tokens: 1_000,
  cache_creation_input_tokens: 300,
  cache_creation: { ephemeral_5m_input_tokens: 200, ephemeral_1h_input_tokens: 100 },
};

const chat = async (model: string) => {
  fake.enqueue(message({ usage: cachedUsage }));
  const res = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
  });
  await res.text();
  return { status: res.status, id: res.headers.get('x-svc-request-id') as string };
};

beforeAll(async () => {
  fake = await startFakeAnthropic({ requireKey: TENANT_KEY });
  gw = await startGatewayEnv();
  await connect(gw, 'anthropic', TENANT_KEY);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('svc registry upsert prices every meter a Claude reply reports (SPEC 2.8, 3, 4.1 rule 10)', () => {
  it('input and output prices alone: the upsert warns, names the unpriced meters, and the list shows them', async () => {
    const r = await runSvc(claude('claude-plain', []), gw.env);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: anthropic replies report cache_read_token and cache_write_token/);
    expect(r.stderr).toMatch(/--cache-read-price-per-token and --cache-write-price-per-token/);
    const json = await gw.svc(claude('claude-plain', []));
    expect(json.unpriced_meters).toEqual(['cache_read_token', 'cache_write_token']);
    expect(json.warnings).toHaveLength(1);
    const list = (await gw.svc(['registry', 'list'])) as unknown as Record<string, unknown>[];
    expect(list.find((e) => e.model === 'claude-plain')?.unpriced_meters).toEqual([
      'cache_read_token',
      'cache_write_token',
    ]);
    const text = await runSvc(['registry', 'list'], gw.env);
    expect(text.stdout).toMatch(/unpriced_meters/);
    expect(text.stdout).toMatch(/claude-plain.*cache_read_token,cache_write_token/);
  });

  it('cache prices by hand, per lifetime with --price: priced exactly, nothing unpriced', async () => {
    const json = await gw.svc(
      claude('claude-cached', [
        '--cache-read-price-per-token',
        '0.0000003',
        '--cache-write-price-per-token',
        '0.00000375',
        '--price',
        'cache_write_token@1h=0.000006',
      ]),
    );
    expect(json.unpriced_meters).toEqual([]);
    expect(json.warnings).toEqual([]);
    const list = (await gw.svc(['registry', 'list'])) as unknown as Record<string, unknown>[];
    expect(list.find((e) => e.model === 'claude-cached')?.unpriced_meters).toEqual([]);
  });

  it('a reply with cache tokens: priced on the full card, failed billing (and counted in /metrics) on the partial one', async () => {
    await eventually(async () => (await chat('claude-cached')).status === 200, 10_000, 'the snapshot');
    const before = await metricSum(
      gw.serve.httpUrl,
      /^svc_gateway_billing_failed_total\{.*model="claude-plain".*reason="missing_price"/,
    );
    const cached = await chat('claude-cached');
    const plain = await chat('claude-plain');
    expect([cached.status, plain.status]).toEqual([200, 200]);
    const envelopes = await envelopesOf(gw, [cached.id, plain.id]);
    const priced = envelopes.get(cached.id)!;
    expect(priced.billing.status).toBe('priced');
    const lines = priced.cost_lines.map((l) => [l.meter, l.quantity, l.amount]);
    // 100 input, 20 output, 1,000 cache reads, 200 five-minute and 100 one-hour cache writes.
    expect(lines).toEqual(
      expect.arrayContaining([
        ['input_token', 100, '0.0003'],
        ['output_token', 20, '0.0003'],
        ['cache_read_token', 1000, '0.0003'],
        ['cache_write_token', 200, '0.00075'],
        ['cache_write_token', 100, '0.0006'],
      ]),
    );
    expect(priced.total_cost_usd).toBe('0.00225');
    const failed = envelopes.get(plain.id)!;
    expect(failed.billing).toMatchObject({ status: 'failed', reason: 'missing_price' });
    const after = await metricSum(
      gw.serve.httpUrl,
      /^svc_gateway_billing_failed_total\{.*model="claude-plain".*reason="missing_price"/,
    );
    expect(after - (Number.isNaN(before) ? 0 : before)).toBe(1);
  });

  it('a malformed --price is refused with the syntax, and a meter priced twice is refused', async () => {
    const bad = await runSvc(claude('claude-bad', ['--price', 'cache_read_token']), gw.env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/expected METER\[\/MODALITY\]\[@CACHE_TTL\|#TOOL_TYPE\]=USD/);
    const twice = await runSvc(
      claude('claude-bad', ['--cache-read-price-per-token', '0.1', '--price', 'cache_read_token=0.2']),
      gw.env,
    );
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toMatch(/priced twice/);
    const ttl = await runSvc(claude('claude-bad', ['--price', 'input_token@1h=0.1']), gw.env);
    expect(ttl.stderr).toMatch(/cache_ttl qualifies only cache_write_token rows/);
  });
});
