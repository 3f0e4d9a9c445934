import type { Command } from 'commander';
import { describeError } from '../../lib/errors.js';
import { makeControlPlane } from '../../roles/control-plane.js';
import { makeWalletService } from '../../roles/wallet.js';
import { ECHO_MODEL, type EchoUpstream, startEchoUpstream } from '../demo/echo-upstream.js';
import { type ApiTarget, callApi } from '../http-client.js';
import { CliError, emit } from '../output.js';
import { ownHttpUrl, readConfig, withEventStore } from '../runtime.js';
import { capabilitiesOption, upsertByHand } from './registry.js';
import { usd } from './registry-prices.js';
import { bootstrap } from './tenancy.js';

/**
 * `svc demo`: a newcomer's first request start to finish, without a provider account. Beside a
 * running `svc serve` (or `npm start`) it starts a local OpenAI-compatible echo upstream, wires the
 * lane `demo` to it (a registry endpoint and a platform key), makes the workspace Demo with a key
 * and a funded wallet, sends one chat request through the gateway, and shows what the service made
 * of it: the reply, its cost, the wallet's ledger charge and the request row of the query API.
 * Everything it does is what the README's quickstart does by hand, one command at a time.
 */

export const DEMO_LANE = 'demo';
export const DEMO_MODEL = 'demo-echo';
const DEMO_PRICES = { input: '0.000001', output: '0.000002', cacheRead: '0.0000005' };
const operator = { id: 'cli' };
const admin = { id: 'admin' };
const DEMO = { workspace: 'Demo', org: 'Demo', project: 'Demo' };

interface DemoOptions {
  url?: string;
  echoPort: string;
  funding: string;
  once?: boolean;
  json?: boolean;
}

interface Setup {
  workspace_id: string;
  org_id: string;
  project_id: string;
  api_key_id: string;
  api_key: string;
  funded: { amount_usd: string; already: boolean };
  adminToken: string;
}

const say = (opts: DemoOptions, line: string) => {
  if (!opts.json) process.stderr.write(`${line}\n`);
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a value, or fails with `what` after `ms`. */
const until = async <T>(ms: number, what: string, fn: () => Promise<T | undefined>): Promise<T> => {
  const deadline = Date.now() + ms;
  let last = '';
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = `: ${describeError(err)}`;
    }
    if (Date.now() > deadline) throw new CliError(`${what} did not happen within ${ms / 1000} s${last}`);
    await sleep(250);
  }
};

/** The workspace, the lane and its key, the wallet: each step is idempotent, so a second demo reuses them. */
const setUp = (opts: DemoOptions, echo: EchoUpstream): Promise<Setup> =>
  withEventStore(async ({ store, db, secrets, config }) => {
    const cp = makeControlPlane(store, db.pool, secrets.masterKey, undefined, {
      allowPrivateDestinations: true,
    });
    const tenant = await bootstrap(cp, DEMO, 'demo');
    say(
      opts,
      `  workspace Demo ${tenant.workspace_id}, project ${tenant.project_id}, API key ${tenant.api_key_id}`,
    );

    await upsertByHand(db, store, {
      lane: DEMO_LANE,
      adapter: 'openai',
      endpoint: {
        model: DEMO_MODEL,
        provider_model_id: ECHO_MODEL,
        base_url: echo.url,
        display_name: 'Demo echo (svc demo)',
        family: '',
        release_date: null,
        description: 'A local echo upstream started by svc demo; it answers with the last user message.',
        capabilities: capabilitiesOption('chat,streaming'),
        input_modalities: ['text'],
        output_modalities: ['text'],
        context_length: 128_000,
        max_output_tokens: 4_096,
        enabled: true,
      },
      inputPricePerToken: DEMO_PRICES.input,
      outputPricePerToken: DEMO_PRICES.output,
      extraPrices: [
        {
          meter: 'cache_read_token',
          modality: 'text',
          cache_ttl: null,
          tool_type: null,
          unit_price: DEMO_PRICES.cacheRead,
        },
      ],
    });
    await cp.setPlatformKey(operator, {
      provider: 'openai',
      lane: DEMO_LANE,
      secret: 'sk-svc-demo-echo',
      metadata: undefined,
      baseUrl: echo.url,
    });
    say(
      opts,
      `  lane ${DEMO_LANE}: model ${DEMO_MODEL} on the echo upstream ${echo.url}, at ${DEMO_PRICES.input} USD an input token and ${DEMO_PRICES.output} an output token`,
    );

    const wallet = makeWalletService(store, db.pool, config, null);
    const grant = await wallet.grant(admin, tenant.workspace_id, {
      amountUsd: opts.funding,
      reason: 'svc demo: first funding of the Demo workspace',
      idempotencyKey: 'svc-demo-funding',
      via: 'cli',
    });
    const balance = await wallet.reads.balance(tenant.workspace_id);
    say(
      opts,
      `  wallet: ${grant.created ? `granted ${grant.transaction.amount_usd} USD` : 'funded by an earlier svc demo'}; balance ${balance.balance_usd} USD`,
    );
    return {
      ...tenant,
      funded: { amount_usd: grant.transaction.amount_usd, already: !grant.created },
      adminToken: secrets.adminToken,
    };
  });

interface FirstReply {
  request_id: string;
  status: number;
  content: string;
  usage: unknown;
}

/** The first request; the gateway loads a new key and model within a second or two, so early refusals are retried. */
const firstRequest = (url: string, setup: Setup, question: string): Promise<FirstReply> =>
  until(30_000, 'a first answer from the gateway', async () => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${setup.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: DEMO_MODEL, messages: [{ role: 'user', content: question }] }),
      signal: AbortSignal.timeout(15_000),
    });
    const body = (await res.json().catch(() => null)) as {
      choices?: { message?: { content?: string } }[];
      usage?: unknown;
      error?: { message?: string };
    } | null;
    // Not loaded yet: the key (401), the model (404), the platform key or the funding (402, 503).
    if (res.status !== 200) {
      if ([401, 402, 404, 503].includes(res.status)) return undefined;
      throw new CliError(`the gateway answered ${res.status}: ${body?.error?.message ?? 'no error message'}`);
    }
    return {
      request_id: res.headers.get('x-svc-request-id') ?? '',
      status: res.status,
      content: body?.choices?.[0]?.message?.content ?? '',
      usage: body?.usage,
    };
  });

const runDemo = async (opts: DemoOptions) => {
  const config = readConfig();
  const url = (opts.url ?? ownHttpUrl(config.SVC_HTTP_HOST, config.SVC_HTTP_PORT)).replace(/\/+$/, '');
  usd(opts.funding, '--funding');
  const echoPort = Number(opts.echoPort);
  if (!Number.isInteger(echoPort) || echoPort < 0 || echoPort > 65_535)
    throw new CliError(`--echo-port must be a port number (0 for any free one), not ${opts.echoPort}`);
  const live = await fetch(`${url}/livez`, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
  if (!live?.ok)
    throw new CliError(
      `no svc answers at ${url}: start it in another terminal with npm start (or svc serve), or name it with --url`,
    );

  say(opts, `svc demo against ${url}`);
  const echo = await startEchoUpstream({ port: echoPort });
  try {
    say(opts, '1. a local OpenAI-compatible echo upstream, the Demo workspace, its key and wallet');
    const setup = await setUp(opts, echo);

    say(opts, `2. a first request: POST ${url}/v1/chat/completions with model ${DEMO_MODEL}`);
    const reply = await firstRequest(url, setup, 'Hello from svc demo!');
    say(opts, `  ${reply.status} ${JSON.stringify(reply.content)} (x-svc-request-id ${reply.request_id})`);

    say(
      opts,
      '3. its request row in the query API and its charge in the wallet ledger (recorded within seconds)',
    );
    // Until ingest has recorded it, the row is a 404: `until` tries again.
    const api: ApiTarget = { url, token: setup.adminToken };
    const row = await until(60_000, `the request row of ${reply.request_id}`, () =>
      callApi<Record<string, unknown>>(
        api,
        'the query API',
        'GET',
        `/api/requests/${reply.request_id}?org_id=${setup.org_id}`,
      ),
    );
    const ledger = `/api/workspaces/${setup.workspace_id}/wallet/transactions?limit=50`;
    const charge = await until(60_000, `the ledger charge of ${reply.request_id}`, async () => {
      const lines = await callApi<{ data: { kind: string; id: string; amount_usd: string }[] }>(
        api,
        'the wallet API',
        'GET',
        ledger,
      );
      return lines.data.find((l) => l.kind === 'charge' && l.id === reply.request_id);
    });
    const wallet = await callApi<{ balance_usd?: string }>(
      api,
      'the wallet API',
      'GET',
      `/api/workspaces/${setup.workspace_id}/wallet`,
    );

    const out = {
      url,
      echo_upstream: echo.url,
      model: DEMO_MODEL,
      workspace_id: setup.workspace_id,
      org_id: setup.org_id,
      project_id: setup.project_id,
      api_key_id: setup.api_key_id,
      api_key: setup.api_key,
      funding: setup.funded,
      reply: { request_id: reply.request_id, content: reply.content, usage: reply.usage },
      request: {
        status: row.status,
        model_served: row.model_served,
        provider: row.provider,
        prompt_tokens: row.prompt_tokens,
        completion_tokens: row.completion_tokens,
        total_cost_usd: row.total_cost_usd,
        billing_status: row.billing_status,
        funding: row.funding,
      },
      ledger_charge: charge,
      balance_usd: wallet.balance_usd ?? null,
      serving: opts.once !== true,
    };
    emit(opts.json, out, (o) =>
      [
        `  request ${o.reply.request_id}: ${String(o.request.status)}, ${String(o.request.prompt_tokens)} + ${String(o.request.completion_tokens)} tokens, cost ${String(o.request.total_cost_usd)} USD (${String(o.request.billing_status)}, ${String(o.request.funding)})`,
        `  ledger: charge ${o.ledger_charge.amount_usd} USD; balance ${o.balance_usd ?? '?'} USD`,
        '',
        'Call it yourself (the API key is shown once; store it now):',
        `  curl ${o.url}/v1/chat/completions -H 'authorization: Bearer ${o.api_key}' \\`,
        `    -H 'content-type: application/json' -d '{"model":"${o.model}","messages":[{"role":"user","content":"hi"}]}'`,
        `  new OpenAI({ baseURL: '${o.url}/v1', apiKey: '${o.api_key}' })`,
        `  the rows: curl '${o.url}/api/requests?org_id=${o.org_id}' -H 'authorization: Bearer <admin_token>'`,
        o.serving
          ? `The echo upstream answers on ${o.echo_upstream} until Ctrl-C; after that the model ${o.model} has no upstream until the next svc demo.`
          : `The echo upstream has stopped (--once); the model ${o.model} has no upstream until the next svc demo.`,
      ].join('\n'),
    );
    if (opts.once) return;
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
  } finally {
    await echo.close();
  }
};

export const registerDemoCommands = (program: Command): void => {
  program
    .command('demo')
    .description(
      'a first request without a provider account: beside a running svc serve, start a local echo upstream, wire the lane demo to it, fund the Demo workspace and show one request with its cost, ledger charge and request row',
    )
    .option('--url <url>', "the running service's HTTP address (default: this configuration's own)")
    .option('--echo-port <port>', "the echo upstream's port (0: any free one)", '0')
    .option('--funding <usd>', 'USD granted once to the Demo workspace wallet', '5.00')
    .option(
      '--once',
      'stop the echo upstream and exit after the first request, instead of serving until Ctrl-C',
    )
    .option('--json', 'print JSON')
    .action(runDemo);
};
