import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { call, missingRows, requestRow } from '../helpers/outside.js';

// `svc serve` with every role runs ingest and the projector in a data process of its own (SPEC 6:
// the gateway publishes, ingest consumes; ARCHITECTURE.md roles). From outside: the start-up line
// names it; /healthz and /metrics of the one port answer for both processes; the query role reads
// the analytics the data process writes; a data process killed with -9 is started again and
// nothing served meanwhile is lost (the records wait on the bus); SIGTERM stops both.

let fake: FakeOpenAI;
let gw: GatewayEnv;

const startLine = (output: string) =>
  JSON.parse(output.split('\n').find((l) => l.includes('"http_url"'))!) as {
    roles: string[];
    data_process: { roles: string[]; pid: number | null };
  };

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Every data process of the service on `dataDir` (a restarted one is not the start-up line's). */
const dataProcesses = (dataDir: string): number[] =>
  readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((p) => {
      try {
        const args = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        const environ = readFileSync(`/proc/${p}/environ`, 'utf8');
        const state = readFileSync(`/proc/${p}/stat`, 'utf8');
        return (
          args.includes('--data-process') &&
          environ.includes(`SVC_DATA_DIR=${dataDir}\0`) &&
          state[state.lastIndexOf(')') + 2] !== 'Z'
        );
      } catch {
        return false;
      }
    });

const served = async (content: string): Promise<string> => {
  const r = await call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
    token: gw.boot.api_key,
    body: { model: 'gpt-4o', messages: [{ role: 'user', content }] },
  });
  expect(r.status, r.text).toBe(200);
  return r.headers.get('x-svc-request-id')!;
};

const health = async () => {
  const r = await call(gw.serve.httpUrl, 'GET', '/healthz');
  return {
    status: r.status,
    body: r.json as { roles: string[]; dependencies: Record<string, { status: string }> },
  };
};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  await addOpenAiEndpoint(gw, fake.url);
  await eventually(
    async () =>
      (
        await call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
          token: gw.boot.api_key,
          body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'warm' }] },
        })
      ).status === 200,
    15_000,
    'the endpoint served',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('the data process of svc serve', () => {
  it('runs ingest and the projector beside the serving process, reported on one port', async () => {
    const line = startLine(gw.serve.output());
    // audit is split: its routes here, its consumer and sealer there.
    expect(line.data_process.roles).toEqual(['ingest', 'projector', 'audit']);
    expect(line.roles).toEqual(expect.arrayContaining(['gateway', 'query', 'ingest', 'projector']));
    expect(line.data_process.pid).not.toBe(gw.serve.child.pid);
    expect(alive(line.data_process.pid!)).toBe(true);

    const h = await health();
    expect(h.status).toBe(200);
    expect(h.body.roles).toEqual(expect.arrayContaining(['gateway', 'ingest', 'projector']));
    for (const dep of ['data-process', 'ingest', 'projector', 'audit', 'analytics'])
      expect(h.body.dependencies[dep]?.status, dep).toBe('up');

    const metrics = await (await fetch(`${gw.serve.httpUrl}/metrics`)).text();
    // The data process's own Node metrics are prefixed; the serving process's are not.
    expect(metrics).toMatch(/^svc_data_nodejs_heap_size_used_bytes \d/m);
    expect(metrics).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    expect(metrics).toMatch(/^svc_ingest_clickhouse_durable_writes_total\{table="requests"\} \d/m);
    // The audit consumer's counters are the data process's alone: one family, not two.
    expect(metrics.match(/^# TYPE svc_audit_batches_sealed_total /gm)).toHaveLength(1);
  });

  it('the query role reads what the data process ingested', async () => {
    const id = await served('read me back');
    expect(await missingRows(gw, gw.boot.org_id, [id], 30_000)).toEqual([]);
    const row = await requestRow(gw, gw.boot.org_id, id);
    expect(row).toMatchObject({ request_id: id });
  });

  it('a data process killed with -9 is started again, and what was served meanwhile is ingested', async () => {
    const first = startLine(gw.serve.output()).data_process.pid!;
    process.kill(first, 'SIGKILL');
    await eventually(async () => (await health()).status === 503, 10_000, '/healthz reporting it down');
    // The gateway serves on while its data process is gone: records wait on the bus.
    const during = [await served('while it was down 1'), await served('while it was down 2')];
    await eventually(async () => (await health()).status === 200, 60_000, 'a new data process');
    const after = await served('after it came back');
    expect(await missingRows(gw, gw.boot.org_id, [...during, after], 60_000)).toEqual([]);
    expect(alive(first)).toBe(false);
  });

  it('a restarted data process killed during its own start-up, twice, is still started again', async () => {
    const gone = new Set<number>();
    const killNext = async (what: string) => {
      let pid = 0;
      await eventually(
        async () => {
          pid = dataProcesses(gw.env.SVC_DATA_DIR!).find((p) => !gone.has(p)) ?? 0;
          return pid !== 0;
        },
        60_000,
        what,
      );
      gone.add(pid);
      process.kill(pid, 'SIGKILL');
    };
    await killNext('the running data process');
    await killNext('the first restart, while it starts');
    await killNext('the second restart, while it starts');
    await eventually(async () => (await health()).status === 200, 90_000, 'a data process that stays');
    const after = await served('after two failed restarts');
    expect(await missingRows(gw, gw.boot.org_id, [after], 60_000)).toEqual([]);
  });

  it('a data process that stops answering is killed and replaced; queries meanwhile get a prompt 503', async () => {
    const [hung] = dataProcesses(gw.env.SVC_DATA_DIR!);
    process.kill(hung!, 'SIGSTOP');
    try {
      const asked = Date.now();
      const r = await call(gw.serve.httpUrl, 'GET', `/api/requests?org_id=${gw.boot.org_id}`, {
        token: gw.admin,
      });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('2');
      // The watchdog's 10 s of silence, one ping interval and a margin: not the 300 s statement timeout.
      expect(Date.now() - asked).toBeLessThan(20_000);
      await eventually(async () => !alive(hung!), 10_000, 'the hung process killed');
    } finally {
      if (alive(hung!)) process.kill(hung!, 'SIGKILL');
    }
    await eventually(async () => (await health()).status === 200, 60_000, 'a new data process');
  });

  it('SIGTERM stops the serving process and its data process', async () => {
    const pid = startLine(gw.serve.output()).data_process.pid!;
    // The restarted one too, if the previous cases ran: every data process of this service.
    const children = dataProcesses(gw.env.SVC_DATA_DIR!);
    expect(children.length).toBe(1);
    expect(await gw.serve.stop('SIGTERM')).toBe(0);
    await eventually(async () => !alive(children[0]!) && !alive(pid), 15_000, 'the data process gone');
  });
});

describe('a serving process that has to give up on its shutdown', () => {
  it('kills a data process that does not stop, so none outlives it', async () => {
    const other = await startGatewayEnv({ SVC_LOG_LEVEL: 'error', SVC_SHUTDOWN_TIMEOUT_MS: '2000' });
    try {
      const [child] = dataProcesses(other.env.SVC_DATA_DIR!);
      process.kill(child!, 'SIGSTOP');
      // The shutdown timeout passes while the child cannot drain: exit code 1, as the README says.
      expect(await other.serve.stop('SIGTERM')).toBe(1);
      await eventually(async () => !alive(child!), 5_000, 'the stopped data process gone with its parent');
    } finally {
      for (const p of dataProcesses(other.env.SVC_DATA_DIR!)) process.kill(p, 'SIGKILL');
      await other.stop();
    }
  });
});
