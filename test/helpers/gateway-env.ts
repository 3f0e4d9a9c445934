import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from './postgres.js';
import { runSvc, type ServeProcess, startServe } from './svc-process.js';

/** A running `svc serve` on a fresh database with a bootstrapped project, for gateway tests. */
export interface GatewayEnv {
  db: TestDatabase;
  serve: ServeProcess;
  env: Record<string, string>;
  admin: string;
  boot: { workspace_id: string; org_id: string; project_id: string; api_key_id: string; api_key: string };
  svc(args: string[]): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

export const startGatewayEnv = async (
  extraEnv: Record<string, string> = {},
  args: string[] = [],
): Promise<GatewayEnv> => {
  const db = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-gw-'));
  await chmod(dataDir, 0o755);
  const admin = `admin-${randomBytes(12).toString('hex')}`;
  const env = {
    SVC_DATABASE_URL: db.url,
    SVC_ADMIN_TOKEN: admin,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_DATA_DIR: dataDir,
    // The fakes these tests point tenant connections at listen on 127.0.0.1; the tenant
    // destination rules themselves are tested with this set to refuse.
    SVC_TENANT_PRIVATE_DESTINATIONS: 'allow',
    ...extraEnv,
  };
  const svc = async (a: string[]) => {
    const r = await runSvc([...a, '--json'], env);
    if (r.code !== 0) throw new Error(`svc ${a.join(' ')} failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const stopAll = async (serve?: ServeProcess) => {
    await serve?.stop();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  // A start-up that fails half-way (a busy database, a refused bootstrap) leaves no process and no
  // database behind: the suite goes on with its other files instead of running out of connections.
  let serve: ServeProcess | undefined;
  let boot: GatewayEnv['boot'];
  try {
    serve = await startServe(env, args);
    boot = (await svc([
      'bootstrap',
      '--workspace',
      'Gw',
      '--org',
      'Gw Org',
      '--project',
      'Gw Project',
    ])) as GatewayEnv['boot'];
  } catch (err) {
    await stopAll(serve).catch(() => undefined);
    throw err;
  }
  return {
    db,
    serve,
    env,
    admin,
    boot,
    svc,
    stop: () => stopAll(serve),
  };
};

/** Polls `fn` until it returns true or the time is up. */
export const eventually = async (
  fn: () => Promise<boolean>,
  timeoutMs = 5_000,
  what = 'condition',
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

/**
 * Registers an OpenAI-compatible endpoint at `baseUrl` (an operator upsert with per-token prices)
 * and, unless told otherwise, the project's BYOK connection `primary` for it.
 */
export const addOpenAiEndpoint = async (
  gw: GatewayEnv,
  baseUrl: string,
  options: {
    model?: string;
    providerModelId?: string;
    lane?: string;
    input?: string;
    output?: string;
    connection?: boolean;
  } = {},
): Promise<void> => {
  const model = options.model ?? 'gpt-4o';
  await gw.svc([
    'registry',
    'upsert',
    '--adapter',
    'openai',
    '--lane',
    options.lane ?? 'openai',
    '--model',
    model,
    '--provider-model-id',
    options.providerModelId ?? model,
    '--base-url',
    baseUrl,
    '--input-price-per-token',
    options.input ?? '0.000001',
    '--output-price-per-token',
    options.output ?? '0.000002',
  ]);
  if (options.connection === false) return;
  await connect(gw, { provider: 'openai', secret: 'sk-x' });
};

/**
 * Creates the project's BYOK connection named `primary` for a provider (`svc connections create`):
 * the gateway's own project unless told otherwise, with an optional origin and metadata.
 */
export const connect = (
  gw: GatewayEnv,
  options: {
    provider: string;
    secret: string;
    projectId?: string;
    baseUrl?: string;
    metadata?: Record<string, unknown>;
  },
): Promise<Record<string, unknown>> =>
  gw.svc([
    'connections',
    'create',
    '--project',
    options.projectId ?? gw.boot.project_id,
    '--provider',
    options.provider,
    '--name',
    'primary',
    '--secret',
    options.secret,
    ...(options.baseUrl ? ['--base-url', options.baseUrl] : []),
    ...(options.metadata ? ['--metadata', JSON.stringify(options.metadata)] : []),
  ]);

/**
 * `svc registry upsert` of one endpoint on a fake upstream, priced per token: the common case of
 * the tests (provider model id `<model>-upstream`, 8,192 output tokens, 1 and 2 µUSD per token).
 */
export const upsertFakeEndpoint = (
  gw: Pick<GatewayEnv, 'svc'>,
  e: { adapter: string; model: string; origin: string; capabilities: string; maxOutputTokens?: number },
) =>
  gw.svc([
    'registry',
    'upsert',
    '--adapter',
    e.adapter,
    '--model',
    e.model,
    '--provider-model-id',
    `${e.model}-upstream`,
    '--base-url',
    e.origin,
    '--capabilities',
    e.capabilities,
    '--max-output-tokens',
    String(e.maxOutputTokens ?? 8_192),
    '--input-price-per-token',
    '0.000001',
    '--output-price-per-token',
    '0.000002',
  ]);
