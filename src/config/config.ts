import { z } from 'zod';

/**
 * The one place the environment is read (SPEC 8). Every variable is listed here with its
 * default; an invalid value stops start-up with a message naming the variable.
 */

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().min(0);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
const url = (protocols: string[]) =>
  optionalString.refine(
    (v) => {
      if (v === undefined) return true;
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL (${protocols.join(' or ')})` },
  );
/** 32 bytes, written as 64 hex digits or base64. */
const masterKey = optionalString.refine((v) => v === undefined || decodeMasterKey(v) !== null, {
  message: 'must be 32 bytes written as 64 hex digits or base64',
});

export const decodeMasterKey = (value: string): Buffer | null => {
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) {
    const b = Buffer.from(value, 'base64');
    return b.length === 32 ? b : null;
  }
  return null;
};

/** SPEC 8: 0 is treated as 1; an unparsable value falls back to the default (1). */
const sampleStride = z
  .string()
  .optional()
  .transform((v) => {
    const n = v === undefined ? Number.NaN : Number(v);
    if (!Number.isInteger(n) || n < 0) return 1;
    return n === 0 ? 1 : n;
  });

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
/** HTTPS, or plain HTTP on a loopback host only (a developer machine, the tests' identity provider). */
const secureUrl = z.string().refine(
  (v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.has(u.hostname));
    } catch {
      return false;
    }
  },
  { message: 'must be an https URL (http only on a loopback host)' },
);
export const registrationPolicy = z.enum(['open', 'invite', 'code']);
export type RegistrationPolicy = z.infer<typeof registrationPolicy>;
export const oidcProviderSchema = z.strictObject({
  issuer: secureUrl,
  client_id: z.string().min(1),
  /** Absent for a public client (PKCE only). */
  client_secret: z.string().min(1).optional(),
  token_endpoint_auth_method: z
    .enum(['client_secret_basic', 'client_secret_post'])
    .default('client_secret_basic'),
  /** The console callback registered at the provider: {console_url}/api/session/oidc/<name>/callback. */
  redirect_uri: secureUrl,
  scope: z.string().min(1).default('openid email profile'),
  /** Overrides SVC_REGISTRATION_POLICY for users first seen through this provider. */
  registration_policy: registrationPolicy.optional(),
});
export type OidcProviderConfig = z.infer<typeof oidcProviderSchema>;
/** JSON object: provider name (the :provider path segment) -> provider settings. */
const oidcProviders = z
  .string()
  .optional()
  .transform((v, ctx): unknown => {
    if (v === undefined || v.trim() === '') return {};
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of provider name -> settings' });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/), oidcProviderSchema));

export const configSchema = z.object({
  SVC_HTTP_HOST: z.string().default('0.0.0.0'),
  SVC_HTTP_PORT: port.default(8080),
  SVC_GRPC_PORT: port.default(9090),
  SVC_DATA_DIR: z.string().min(1).default('./.svc-data'),
  SVC_DATABASE_URL: url(['postgres:', 'postgresql:']),
  SVC_NATS_URL: url(['nats:', 'tls:', 'ws:', 'wss:']),
  /**
   * JetStream stream names are `<prefix>REQUESTS`, `<prefix>AUDIT`, ...; subjects are
   * `<subject prefix>.svc.requests...` when a subject prefix is set. Two deployments (or test
   * runs) on one NATS server keep apart by these.
   */
  SVC_NATS_STREAM_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,32}$/, 'letters, digits, _ and - (1 to 32)')
    .default('SVC_'),
  /** Replicas of each JetStream stream the service creates: 3 on a three-node cluster keeps a node's loss from losing records. */
  SVC_NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  SVC_NATS_SUBJECT_PREFIX: optionalString.refine((v) => v === undefined || /^[A-Za-z0-9_-]{1,32}$/.test(v), {
    message: 'one subject token: letters, digits, _ and - (1 to 32)',
  }),
  SVC_CLICKHOUSE_URL: url(['http:', 'https:']),
  /**
   * `single`: the analytics tables are plain MergeTree tables on one server. `cluster`: each is a
   * Replicated table on every node of SVC_CLICKHOUSE_CLUSTER with a Distributed table of the same
   * name over them (analytics/migrate.ts), so every statement of the service reads and writes the
   * Distributed tables unchanged.
   */
  SVC_CLICKHOUSE_DDL: z.enum(['single', 'cluster']).default('single'),
  /** The cluster name of `ON CLUSTER` and the Distributed tables when SVC_CLICKHOUSE_DDL=cluster. */
  SVC_CLICKHOUSE_CLUSTER: optionalString,
  /** Where objects (request bodies, files, trace payloads, audit archives) live: the data dir, or S3. */
  SVC_OBJECT_STORE: z.enum(['fs', 's3']).default('fs'),
  /** The S3-compatible endpoint (https://s3.us-east-1.amazonaws.com, http://minio:9000); required for s3. */
  SVC_S3_ENDPOINT: url(['http:', 'https:']),
  SVC_S3_BUCKET: optionalString,
  SVC_S3_REGION: z.string().min(1).default('us-east-1'),
  SVC_S3_ACCESS_KEY_ID: optionalString,
  SVC_S3_SECRET_ACCESS_KEY: optionalString,
  /** Keys live under this prefix in the bucket (a bucket shared with other data); empty for none. */
  SVC_S3_PREFIX: optionalString,
  /** `path`: http://endpoint/bucket/key (MinIO, most self-hosted stores); `virtual`: http://bucket.endpoint/key. */
  SVC_S3_ADDRESSING: z.enum(['path', 'virtual']).default('path'),
  SVC_MASTER_KEY: masterKey,
  SVC_ADMIN_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'must be at least 16 characters',
  }),
  SVC_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SVC_SHUTDOWN_TIMEOUT_MS: positiveInt.default(10_000),
  /**
   * `lean`: `svc serve` sets V8's heap growing factor to 1.25 (LEAN_HEAP_FLAGS in
   * cli/verbs/serve.ts, which says why); `auto` does so when no data role runs in the process;
   * `v8` leaves V8's heuristics and NODE_OPTIONS alone.
   */
  SVC_HEAP: z.enum(['auto', 'lean', 'v8']).default('auto'),
  /**
   * `auto`: a `svc serve` that runs the gateway beside ingest or the projector runs those in a
   * child process of its own (cli/data-process.ts), so the gateway's latency does not depend on
   * what they are doing; `inline` keeps every role in the one process.
   */
  SVC_SERVE_DATA_PROCESS: z.enum(['auto', 'inline']).default('auto'),
  /**
   * How many processes `svc serve` runs its HTTP roles in, sharing the ports (cli/workers.ts):
   * `auto` is the number of cores when the gateway is the only role, else 1. `--workers` overrides.
   */
  SVC_SERVE_WORKERS: z.union([z.literal('auto'), z.coerce.number().int().min(1).max(256)]).default('auto'),
  /**
   * SPEC 4.7 allows loopback HTTP origins, meant for operators and tests. Upstream origins a tenant
   * sets (connection base_url, deployment host resource and domain, project endpoint) reach public
   * addresses only unless this says `allow`: not loopback, private, link-local or metadata hosts,
   * checked at create and on the address dialled. Operator lanes and platform keys are not limited.
   */
  SVC_TENANT_PRIVATE_DESTINATIONS: z.enum(['refuse', 'allow']).default('refuse'),
  SVC_GATEWAY_MAX_RESPONSE_BYTES: positiveInt.optional(),
  SVC_GATEWAY_MAX_REQUEST_BYTES: positiveInt.default(16 * 1024 * 1024),
  SVC_GATEWAY_MAX_UPSTREAM_BYTES: positiveInt.default(32 * 1024 * 1024),
  SVC_GATEWAY_RATE_LIMIT_RPM: nonNegativeInt.default(0),
  SVC_GATEWAY_RETRIES: nonNegativeInt.default(2),
  SVC_GATEWAY_RETRY_BACKOFF_MS: nonNegativeInt.default(100),
  SVC_GATEWAY_ATTEMPT_TIMEOUT_MS: positiveInt.default(60_000),
  SVC_GATEWAY_REQUEST_DEADLINE_MS: positiveInt.default(300_000),
  /** How often the gateway re-reads spend caps and month-to-date spend (the caps' staleness bound). */
  SVC_GATEWAY_SPEND_CAP_REFRESH_MS: positiveInt.default(5_000),
  /** host:port of a QueryService for spend caps when the query role does not run in the gateway's process. */
  SVC_GATEWAY_QUERY_GRPC_ENDPOINT: optionalString,
  /**
   * The largest file `POST /v1/files` stores (SPEC 4.1), in bytes; a larger upload is refused with
   * 413 and leaves nothing behind. OpenAI's own limit, 512 MiB, by default.
   */
  SVC_FILES_MAX_BYTES: positiveInt.default(512 * 1024 * 1024),
  /** Query API (SPEC 4.5, 8): the export row cap (400 above it), and the live stream's poll and heartbeat. */
  SVC_QUERY_EXPORT_MAX_ROWS: positiveInt.default(100_000),
  SVC_QUERY_LIVE_POLL_MS: positiveInt.default(1_000),
  SVC_QUERY_LIVE_HEARTBEAT_MS: positiveInt.default(15_000),
  /** Concurrent live streams of one session, and of one organization; past either a new one is 429. */
  SVC_QUERY_LIVE_MAX_PER_SESSION: positiveInt.default(8),
  SVC_QUERY_LIVE_MAX_PER_ORG: positiveInt.default(64),
  /** Trace ingest (SPEC 4.3): the body cap of one export (413 above it, compressed or not) and exports taken in at once (429 past it). */
  SVC_TRACE_MAX_BODY_BYTES: positiveInt.default(16 * 1024 * 1024),
  SVC_TRACE_MAX_IN_FLIGHT: positiveInt.default(64),
  /** Body bytes of the exports taken in at once (429 past it; one export is always let in). */
  SVC_TRACE_MAX_IN_FLIGHT_BYTES: positiveInt.default(64 * 1024 * 1024),
  /**
   * Audit sealing (SPEC 1.8, 6): a tenant's unsealed events become a batch once there are this many,
   * or once the oldest has waited this long, whichever comes first; due tenants are looked for every
   * SVC_AUDIT_SEAL_INTERVAL_MS. A busy tenant seals by size, an idle one within half a minute.
   */
  SVC_AUDIT_BATCH_MAX_EVENTS: positiveInt.max(65_536).default(4_096),
  SVC_AUDIT_BATCH_MAX_AGE_MS: positiveInt.default(30_000),
  SVC_AUDIT_SEAL_INTERVAL_MS: positiveInt.default(1_000),
  SVC_BILLING_QUARANTINE_MIN_FAILURES: positiveInt.default(10),
  SVC_BILLING_QUARANTINE_MIN_RATIO_BPS: nonNegativeInt.max(10_000).default(100),
  SVC_BILLING_QUARANTINE_WINDOW_MINUTES: positiveInt.default(60),
  SVC_BILLING_QUARANTINE_ACTION: z.enum(['quarantine', 'allow']).default('quarantine'),
  SVC_INGEST_DURABILITY_SAMPLE_STRIDE: sampleStride,
  SVC_PAYMENT_API_KEY: optionalString,
  SVC_PAYMENT_WEBHOOK_SECRET: optionalString,
  SVC_PAYMENT_PUBLISHABLE_KEY: optionalString,
  /** Origin of the payment provider's API (default the provider's own); tests point it at a fake. */
  SVC_PAYMENT_API_BASE: url(['http:', 'https:']),
  /** Seconds an escrow hold waits for its settlement before the sweep releases it. */
  SVC_WALLET_HOLD_TTL_SECONDS: positiveInt.default(3_600),
  /** Age a succeeded payment webhook must reach before reconciliation calls a missing credit a mismatch. */
  SVC_WALLET_RECONCILE_GRACE_SECONDS: nonNegativeInt.default(300),
  /**
   * SPEC 4.8: host:port of a PolicyService; set, the gateway asks it (with the service token, the
   * admin token) instead of evaluating in process. Each call has SVC_POLICY_DEADLINE_MS; a decision
   * is reused for SVC_POLICY_CACHE_MS; when the service does not answer, SVC_POLICY_FAIL_MODE
   * `closed` refuses the request with 503 and `open` serves it as if no policy applied.
   */
  POLICY_GRPC_ENDPOINT: optionalString,
  SVC_POLICY_DEADLINE_MS: positiveInt.default(250),
  SVC_POLICY_CACHE_MS: nonNegativeInt.default(1_000),
  SVC_POLICY_FAIL_MODE: z.enum(['open', 'closed']).default('closed'),
  SVC_OIDC_PROVIDERS: oidcProviders,
  /**
   * Comma-separated e-mail addresses of users whose console sessions act as the platform
   * administrator (SPEC 5 operator grants, operator policy layers, platform keys), audited under
   * their own user id. Unset: only the admin token is the administrator.
   */
  SVC_PLATFORM_ADMINS: optionalString,
  /**
   * The console role in a process without the query, control-plane and auth roles forwards the
   * console's `/api` calls to this base URL (a process, or a load balancer, serving those roles).
   */
  SVC_CONSOLE_API_URL: url(['http:', 'https:']),
  /** Where the built console web app is (`npm run build` writes web/console/dist). */
  SVC_CONSOLE_DIR: optionalString,
  SVC_REGISTRATION_POLICY: registrationPolicy.default('invite'),
  SVC_AUTH_SESSION_TTL_SECONDS: positiveInt.default(12 * 3600),
  SVC_AUTH_LOGIN_TTL_SECONDS: positiveInt.default(600),
});

export type Config = z.infer<typeof configSchema>;

/** Whether a signed-in user (by the e-mail their provider verified) is a platform administrator. */
export const isPlatformAdmin = (admins: ReadonlySet<string>, email: string): boolean =>
  admins.has(email.trim().toLowerCase());

/** SVC_PLATFORM_ADMINS as lower-case addresses. */
export const platformAdminEmails = (config: Pick<Config, 'SVC_PLATFORM_ADMINS'>): ReadonlySet<string> =>
  new Set(
    (config.SVC_PLATFORM_ADMINS ?? '')
      .split(',')
      .map((e) => e.trim().toLowerCase())
      .filter(Boolean),
  );

/** Names of the variables whose values are secrets: masked by `svc config`. */
export const SECRET_KEYS: ReadonlySet<keyof Config> = new Set([
  'SVC_MASTER_KEY',
  'SVC_ADMIN_TOKEN',
  'SVC_PAYMENT_API_KEY',
  'SVC_PAYMENT_WEBHOOK_SECRET',
  'SVC_S3_SECRET_ACCESS_KEY',
  // Holds the identity providers' client secrets.
  'SVC_OIDC_PROVIDERS',
]);

export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(issues.map((i) => `${i.variable}: ${i.message}`).join('; '));
    this.name = 'ConfigError';
  }
}

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => {
  const picked: Record<string, string | undefined> = {};
  for (const key of Object.keys(configSchema.shape)) picked[key] = env[key];
  const parsed = configSchema.safeParse(picked);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({
        variable: String(i.path[0] ?? '(environment)'),
        message: `invalid value ${JSON.stringify(picked[String(i.path[0])] ?? '')}: ${i.message}`,
      })),
    );
  }
  return parsed.data;
};

const mask = (value: string): string => (value.length <= 4 ? '****' : `${value.slice(0, 2)}****`);

/** The effective configuration for display: secrets masked, URLs stripped of passwords. */
export const describeConfig = (config: Config): Record<string, string | number | null> => {
  const out: Record<string, string | number | null> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined) out[key] = null;
    else if (SECRET_KEYS.has(key as keyof Config)) out[key] = mask(String(value));
    else if (typeof value === 'string' && /^[a-z]+:\/\//i.test(value)) out[key] = redactUrl(value);
    else out[key] = value as string | number;
  }
  return out;
};

export const redactUrl = (value: string): string => {
  try {
    const u = new URL(value);
    if (u.password) u.password = '****';
    return u.toString();
  } catch {
    return value;
  }
};
