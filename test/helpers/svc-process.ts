import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

export interface SvcRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one `svc` command to completion; `bin` is another checkout's bin/svc.js. */
export const runSvc = (
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 60_000,
  bin = SVC_BIN,
): Promise<SvcRun> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
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
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });

export interface ServeProcess {
  child: ChildProcess;
  httpUrl: string;
  grpcPort: number;
  output: () => string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `svc serve --json` and resolves once it printed its start-up line. */
export const startServe = (
  env: NodeJS.ProcessEnv,
  args: string[] = [],
  timeoutMs = 60_000,
  bin = SVC_BIN,
): Promise<ServeProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'serve', '--json', ...args], {
      // One process unless a test asks for workers (a gateway alone would start one per core).
      env: {
        ...process.env,
        SVC_HTTP_PORT: '0',
        SVC_GRPC_PORT: '0',
        SVC_LOG_LEVEL: 'warn',
        SVC_SERVE_WORKERS: '1',
        ...env,
      },
      stdio: 'pipe',
    });
    let out = '';
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc serve did not start in ${timeoutMs} ms: ${out}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n')) {
        if (!line.includes('"http_url"')) continue;
        clearTimeout(timer);
        const started = JSON.parse(line) as { http_url: string; grpc_port: number };
        resolve({
          child,
          httpUrl: started.http_url,
          grpcPort: started.grpc_port,
          output: () => out,
          stop: async (signal = 'SIGTERM') => {
            child.kill(signal);
            return exited;
          },
        });
        return;
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`svc serve exited with ${code}: ${out}`));
    });
  });

export type SvcJson = (args: string[]) => Promise<Record<string, unknown>>;

/** Runs `svc <args> --json` with `env` and returns its JSON; a non-zero exit throws with stderr. */
export const svcJson =
  (env: () => NodeJS.ProcessEnv): SvcJson =>
  async (args) => {
    const r = await runSvc([...args, '--json'], env());
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

/** gpt-4o on the openai lane at `baseUrl` (a fake upstream), at 1 and 2 micro-USD a token. */
export const upsertFakeGpt4o = (svc: SvcJson, baseUrl: string) =>
  svc([
    'registry',
    'upsert',
    '--adapter',
    'openai',
    '--lane',
    'openai',
    '--model',
    'gpt-4o',
    '--provider-model-id',
    'gpt-4o',
    '--base-url',
    baseUrl,
    '--input-price-per-token',
    '0.000001',
    '--output-price-per-token',
    '0.000002',
  ]);
