import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadService } from '../../src/edges/grpc/server.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { grpcClient } from '../helpers/grpc.js';
import { type ServeProcess, startServe } from '../helpers/svc-process.js';

// SPEC 4.8 from outside: a running `svc serve` (every role) and a `--roles gateway` process each
// answer the standard gRPC health protocol without a token, as grpc-health-probe and Kubernetes
// probes ask it, and Watch sees NOT_SERVING when SIGTERM starts the drain; AuthService's session
// operations are served where the auth role runs, and nowhere else.

const HEALTH = 'grpc/health/v1/health.proto';
const CONTROL_PLANE = 'svc/controlplane/v1/control_plane.proto';

type Status = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN' | 'UNKNOWN';

let gw: GatewayEnv;
let gatewayDir: string;
let gateway: ServeProcess;

beforeAll(async () => {
  gw = await startGatewayEnv();
  // A gateway alone on the same database, with a data dir of its own.
  gatewayDir = await mkdtemp(join(tmpdir(), 'svc-gw-only-'));
  await chmod(gatewayDir, 0o755);
  gateway = await startServe({ ...gw.env, SVC_DATA_DIR: gatewayDir }, ['--roles', 'gateway']);
}, 120_000);
afterAll(async () => {
  await gateway?.stop();
  await gw?.stop();
  await rm(gatewayDir, { recursive: true, force: true });
});

/** One Check as a probe makes it: a fresh channel, no token. */
const check = async (port: number, service: string) => {
  const client = grpcClient(port, HEALTH, 'grpc.health.v1.Health');
  try {
    return await client.call<{ status: Status }>('Check', { service });
  } finally {
    client.close();
  }
};

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: grpc.ServiceError) => err,
  );

/** A Watch call as a probe makes it: the statuses received, and how the stream ended. */
const watch = (port: number, service: string) => {
  const Client = grpc.makeGenericClientConstructor(loadService(HEALTH, 'grpc.health.v1.Health'), 'Health');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const call = (
    client as unknown as Record<string, (req: object) => grpc.ClientReadableStream<{ status: Status }>>
  ).Watch!({ service });
  const statuses: Status[] = [];
  call.on('data', (m: { status: Status }) => statuses.push(m.status));
  call.on('error', () => {});
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  return { statuses, ended, close: () => client.close() };
};

/** Until the first status arrived; the test's timeout bounds the wait. */
const firstStatus = async (w: ReturnType<typeof watch>) => {
  while (w.statuses.length === 0) await new Promise((r) => setTimeout(r, 25));
  return w.statuses[0];
};

describe('grpc.health.v1.Health on svc serve with every role', () => {
  it('answers "" and every served service SERVING, an unknown one NOT_FOUND, without a token', async () => {
    const port = gw.serve.grpcPort;
    expect(await check(port, '')).toEqual({ status: 'SERVING' });
    for (const service of [
      'grpc.health.v1.Health',
      'svc.health.v1.HealthService',
      'svc.controlplane.v1.OrgService',
      'svc.controlplane.v1.ProjectService',
      'svc.controlplane.v1.ApiKeyService',
      'svc.controlplane.v1.ProviderKeyService',
      'svc.controlplane.v1.AuthService',
      'svc.query.v1.QueryService',
      'svc.audit.v1.AuditService',
    ])
      expect(await check(port, service), service).toEqual({ status: 'SERVING' });
    const unknown = await failure(check(port, 'svc.teleport.v1.TeleportService'));
    expect(unknown.code).toBe(grpc.status.NOT_FOUND);
  });

  it('serves AuthService session operations: verify, revoke, list, and the revocation reaches the audit log', async () => {
    const port = gw.serve.grpcPort;
    const user = (await gw.svc([
      'users',
      'add',
      '--email',
      'probe@health.test',
      '--workspace',
      gw.boot.workspace_id,
      '--role',
      'member',
    ])) as { user_id: string };
    const session = (await gw.svc(['sessions', 'issue', '--email', 'probe@health.test'])) as {
      token: string;
      expires_at: string;
    };
    const auth = grpcClient(port, CONTROL_PLANE, 'svc.controlplane.v1.AuthService', gw.admin);
    const audit = grpcClient(port, 'svc/audit/v1/audit.proto', 'svc.audit.v1.AuditService', gw.admin);
    try {
      const verified = await auth.call<{ valid: boolean; user_id: string; session_id: string }>(
        'VerifySession',
        { access_token: session.token },
      );
      expect(verified).toMatchObject({ valid: true, user_id: user.user_id, expires_at: session.expires_at });
      const listed = await auth.call<{ sessions: { session_id: string }[] }>('ListUserSessions', {
        user_id: user.user_id,
      });
      expect(listed.sessions.map((s) => s.session_id)).toEqual([verified.session_id]);
      expect(JSON.stringify(listed)).not.toContain(session.token);

      expect(await auth.call('RevokeSession', { session_id: verified.session_id })).toMatchObject({
        session_id: verified.session_id,
        revoked: true,
      });
      expect(await auth.call('VerifySession', { access_token: session.token })).toMatchObject({
        valid: false,
      });

      // The audit role seals the platform tenant's events; session.revoked is among them.
      await eventually(
        async () => {
          const page = await audit.call<{ events: { bytes: Buffer }[] }>('ListEvents', {
            tenant_id: 'platform',
            limit: 1000,
          });
          return page.events.some((e) => {
            const record = JSON.parse(Buffer.from(e.bytes).toString('utf8')) as {
              action: string;
              details: { session_id?: string };
            };
            return record.action === 'session.revoked' && record.details.session_id === verified.session_id;
          });
        },
        30_000,
        'session.revoked in the audit log',
      );

      const anonymous = grpcClient(port, CONTROL_PLANE, 'svc.controlplane.v1.AuthService');
      const refused = await failure(anonymous.call('VerifySession', { access_token: session.token }));
      anonymous.close();
      expect(refused.code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      auth.close();
      audit.close();
    }
  }, 60_000);
});

describe('a --roles gateway process', () => {
  it('answers Health; AuthService is not served there (NOT_FOUND to Check, UNIMPLEMENTED to a call)', async () => {
    const port = gateway.grpcPort;
    expect(await check(port, '')).toEqual({ status: 'SERVING' });
    expect(await check(port, 'svc.health.v1.HealthService')).toEqual({ status: 'SERVING' });
    const absent = await failure(check(port, 'svc.controlplane.v1.AuthService'));
    expect(absent.code).toBe(grpc.status.NOT_FOUND);
    const auth = grpcClient(port, CONTROL_PLANE, 'svc.controlplane.v1.AuthService', gw.admin);
    const call = await failure(auth.call('VerifySession', { access_token: 'svc_sess_anything' }));
    auth.close();
    expect(call.code).toBe(grpc.status.UNIMPLEMENTED);
  });
});

describe('--roles auth and --roles control-plane, each alone', () => {
  it('each starts; AuthService is served by the auth role, the other control-plane services by control-plane', async () => {
    for (const [role, serves, absent] of [
      ['auth', 'svc.controlplane.v1.AuthService', 'svc.controlplane.v1.OrgService'],
      ['control-plane', 'svc.controlplane.v1.OrgService', 'svc.controlplane.v1.AuthService'],
    ] as const) {
      const dir = await mkdtemp(join(tmpdir(), `svc-${role}-only-`));
      await chmod(dir, 0o755);
      const alone = await startServe({ ...gw.env, SVC_DATA_DIR: dir }, ['--roles', role]);
      try {
        expect(await check(alone.grpcPort, serves), `${role} serves ${serves}`).toEqual({
          status: 'SERVING',
        });
        const missing = await failure(check(alone.grpcPort, absent));
        expect(missing.code, `${role} does not serve ${absent}`).toBe(grpc.status.NOT_FOUND);
        if (role === 'auth') {
          const auth = grpcClient(alone.grpcPort, CONTROL_PLANE, serves, gw.admin);
          let verified = await auth.call<{ valid: boolean }>('VerifyApiKey', { api_key: gw.boot.api_key });
          // Its API-key cache follows the event store from the start: a moment after start-up.
          while (!verified.valid) {
            await new Promise((r) => setTimeout(r, 25));
            verified = await auth.call('VerifyApiKey', { api_key: gw.boot.api_key });
          }
          auth.close();
          expect(verified).toMatchObject({ valid: true, project_id: gw.boot.project_id });
        }
      } finally {
        expect(await alone.stop()).toBe(0);
        await rm(dir, { recursive: true, force: true });
      }
    }
  }, 120_000);
});

describe('Watch through SIGTERM', () => {
  it('on the gateway process: SERVING, then NOT_SERVING when the drain starts, then a clean end', async () => {
    const w = watch(gateway.grpcPort, '');
    try {
      expect(await firstStatus(w)).toBe('SERVING');
      const exited = gateway.stop('SIGTERM');
      expect((await w.ended).code).toBe(grpc.status.OK);
      expect(w.statuses.at(-1)).toBe('NOT_SERVING');
      expect(await exited).toBe(0);
    } finally {
      w.close();
    }
  });

  it('on svc serve with every role: the same', async () => {
    const w = watch(gw.serve.grpcPort, 'svc.controlplane.v1.AuthService');
    try {
      expect(await firstStatus(w)).toBe('SERVING');
      const exited = gw.serve.stop('SIGTERM');
      expect((await w.ended).code).toBe(grpc.status.OK);
      expect(w.statuses.at(-1)).toBe('NOT_SERVING');
      expect(await exited).toBe(0);
    } finally {
      w.close();
    }
  }, 60_000);
});
