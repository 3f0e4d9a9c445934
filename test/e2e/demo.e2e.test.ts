import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUsd, mulUsd, negateUsd, parseUsd, subUsd, type Usd } from '../../src/lib/money.js';
import { runSvc, type ServeProcess, SVC_BIN, startServe } from '../helpers/svc-process.js';

// The quickstart without a provider account (issue: conventions, item 8): on the embedded default
// that `npm start` runs, `svc demo` wires a local echo upstream to the lane demo, funds the Demo
// workspace and shows one request with its cost, its ledger charge and its request row; the key it
// prints works with the OpenAI SDK while the demo serves. Prices: 1 and 2 micro-USD a token.

interface DemoOut {
  url: string;
  echo_upstream: string;
  model: string;
  workspace_id: string;
  org_id: string;
  api_key: string;
  funding: { amount_usd: string; already: boolean };
  reply: { request_id: string; content: string; usage: { prompt_tokens: number; completion_tokens: number } };
  request: {
    status: string;
    model_served: string;
    provider: string;
    prompt_tokens: number;
    completion_tokens: number;
    total_cost_usd: string;
    billing_status: string;
    funding: string;
  };
  ledger_charge: { kind: string; id: string; amount_usd: string };
  balance_usd: string;
  serving: boolean;
}

let dataDir: string;
let serve: ServeProcess;
let env: Record<string, string>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-demo-'));
  await chmod(dataDir, 0o755);
  env = { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: '', SVC_LOG_LEVEL: 'error' };
  serve = await startServe(env, [], 120_000);
}, 150_000);

afterAll(async () => {
  await serve?.stop('SIGTERM');
  await rm(dataDir, { recursive: true, force: true });
});

const costOf = (prompt: number, completion: number): Usd =>
  addUsd(mulUsd(parseUsd('0.000001'), prompt), mulUsd(parseUsd('0.000002'), completion));

describe('svc demo: a first request start to finish, on the embedded default', () => {
  let first: DemoOut;

  it('answers through the echo upstream and shows the exact cost, the ledger charge and the request row', async () => {
    const r = await runSvc(['demo', '--url', serve.httpUrl, '--once', '--json'], env, 150_000);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    first = JSON.parse(r.stdout) as DemoOut;
    expect(first.reply.content).toBe('echo: Hello from svc demo!');
    expect(first.funding.already).toBe(false);
    expect(parseUsd(first.funding.amount_usd)).toBe(parseUsd('5.00'));
    const { prompt_tokens, completion_tokens } = first.reply.usage;
    expect(prompt_tokens).toBeGreaterThan(0);
    const cost = costOf(prompt_tokens, completion_tokens);
    expect(first.request).toMatchObject({
      status: 'success',
      model_served: 'demo-echo',
      provider: 'demo',
      prompt_tokens,
      completion_tokens,
      billing_status: 'priced',
      funding: 'wallet',
    });
    expect(parseUsd(first.request.total_cost_usd)).toBe(cost);
    expect(first.ledger_charge).toMatchObject({ kind: 'charge', id: first.reply.request_id });
    expect(parseUsd(first.ledger_charge.amount_usd)).toBe(negateUsd(cost));
    expect(parseUsd(first.balance_usd)).toBe(subUsd(parseUsd('5.00'), cost));
    expect(first.serving).toBe(false);
  }, 180_000);

  it('a second demo serves until Ctrl-C: its key works with the OpenAI SDK, streamed, and the wallet is funded once', async () => {
    const child = spawn(process.execPath, [SVC_BIN, 'demo', '--url', serve.httpUrl, '--json'], {
      env: { ...process.env, ...env },
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const out = await new Promise<DemoOut>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`svc demo printed nothing: ${stderr}`)), 150_000);
        child.stdout.on('data', () => {
          try {
            const parsed = JSON.parse(stdout) as DemoOut;
            clearTimeout(timer);
            resolve(parsed);
          } catch {}
        });
        void exited.then((code) => reject(new Error(`svc demo exited with ${code}: ${stderr}`)));
      });
      expect(out.serving).toBe(true);
      expect(out.funding.already).toBe(true);
      expect(out.workspace_id).toBe(first.workspace_id);
      expect(out.api_key).not.toBe(first.api_key);

      const client = new OpenAI({ baseURL: `${serve.httpUrl}/v1`, apiKey: out.api_key, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'demo-echo',
        messages: [{ role: 'user', content: 'streamed words come back' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: { prompt_tokens: number } | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toBe('echo: streamed words come back');
      expect(usage?.prompt_tokens).toBeGreaterThan(0);

      // The first demo's key still works; the echo upstream of the first demo is gone, this one's serves.
      const again = await new OpenAI({
        baseURL: `${serve.httpUrl}/v1`,
        apiKey: first.api_key,
        maxRetries: 0,
      }).chat.completions.create({ model: 'demo-echo', messages: [{ role: 'user', content: 'again' }] });
      expect(again.choices[0]?.message.content).toBe('echo: again');

      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 240_000);

  it('says in one line what is wrong when no service answers, and has --help', async () => {
    const r = await runSvc(['demo', '--url', 'http://127.0.0.1:1', '--once'], env);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/no svc answers at http:\/\/127\.0\.0\.1:1: start it/);
    const help = await runSvc(['demo', '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--once/);
    expect(help.stdout).toMatch(/--json/);
  }, 60_000);
});
