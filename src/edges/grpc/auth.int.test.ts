import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcClient } from '../../../test/helpers/grpc.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { Sessions } from '../../commands/auth/sessions.js';
import { PostgresBus } from '../../events/postgres/bus.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { ApiKeyCache } from '../../gateway/auth/api-key-cache.js';
import { hashSecret } from '../../lib/crypto.js';
import { HealthRegistry } from '../../lib/health.js';
import { auditRelay } from '../../projections/audit-relay/projection.js';
import { rebuildProjection } from '../../projections/runner.js';
import { makeAuth } from '../../roles/auth.js';
import { makeControlPlane } from '../../roles/control-plane.js';
import { addAuthService } from './auth.js';
import { bindGrpc, createGrpcServer, type GrpcServer } from './server.js';

// AuthService (SPEC 4.8: VerifyApiKey and session operations) over a real socket on a real event
// store: a session verifies while live, a revoked or expired one does not, revocation is the user
// aggregate's SessionRevoked (audited once as session.revoked), listings never show a token or its
// hash, and every call needs the service token.

const TOKEN = 'service-token-for-auth-grpc';
const FILE = 'svc/controlplane/v1/control_plane.proto';
const HOUR = 3_600_000;
const cli = { id: 'cli' };

let db: TestDatabase;
let store: PostgresEventStore;
let apiKeys: ApiKeyCache;
let served: GrpcServer;
let port: number;
let auth: ReturnType<typeof grpcClient>;
let ws: string;
let ada: { user_id: string; session_id: string; token: string; expires_at: string };
let expired: { session_id: string; token: string };

interface Session {
  session_id: string;
  user_id: string;
  issued_at: string;
  expires_at: string;
  revoked: boolean;
  revoked_at: string;
  expired: boolean;
}

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  const made = makeAuth(store, db.pool, Buffer.alloc(32, 3));
  const cp = made.controlPlane;
  apiKeys = new ApiKeyCache(store);
  await apiKeys.start({ pollMs: 50 });
  served = createGrpcServer({
    health: new HealthRegistry(),
    roles: [
      {
        name: 'auth',
        grpc: (server) =>
          addAuthService(server, { apiKeys, sessions: new Sessions(cp, made.reads, cp.reads) }, TOKEN),
      },
    ],
    version: 'test',
  });
  port = await bindGrpc(served.server, '127.0.0.1', 0);
  auth = grpcClient(port, FILE, 'svc.controlplane.v1.AuthService', TOKEN);

  ws = (await cp.createWorkspace(cli, 'Sessions')).workspace_id;
  await cp.addUser(cli, 'ada@sessions.test', { workspaceId: ws, role: 'manager' });
  ada = await cp.issueSession(cli, 'ada@sessions.test', HOUR);
  // Issued two hours ago for one hour: expired an hour ago.
  const past = makeControlPlane(store, db.pool, Buffer.alloc(32, 3), () => new Date(Date.now() - 2 * HOUR));
  expired = await past.issueSession(cli, 'ada@sessions.test', HOUR);
}, 60_000);
afterAll(async () => {
  auth?.close();
  served?.drain();
  await new Promise<void>((resolve) => (served ? served.server.tryShutdown(() => resolve()) : resolve()));
  await apiKeys?.stop();
  await store?.close();
  await db?.drop();
});

const verify = (token: string) =>
  auth.call<{
    valid: boolean;
    user_id: string;
    session_id: string;
    expires_at: string;
    memberships: { workspace_id: string; role: string }[];
  }>('VerifySession', { access_token: token });

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: grpc.ServiceError) => err,
  );

const INVALID = { valid: false, user_id: '', session_id: '', expires_at: '', memberships: [] };

describe('VerifySession', () => {
  it('answers a live session with its user, id, expiry and workspace memberships', async () => {
    expect(await verify(ada.token)).toEqual({
      valid: true,
      user_id: ada.user_id,
      session_id: ada.session_id,
      expires_at: ada.expires_at,
      memberships: [{ workspace_id: ws, role: 'manager' }],
    });
  });

  it('answers valid: false, and nothing else, for an unknown, empty or expired token', async () => {
    expect(await verify('svc_sess_not-a-session')).toEqual(INVALID);
    expect(await verify('')).toEqual(INVALID);
    expect(await verify(expired.token)).toEqual(INVALID);
  });
});

describe('RevokeSession', () => {
  it('revokes a session: it no longer verifies, the event is stored once and audited as session.revoked', async () => {
    const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 3));
    const doomed = await cp.issueSession(cli, 'ada@sessions.test', HOUR);
    expect((await verify(doomed.token)).valid).toBe(true);

    const revoked = await auth.call<Session>('RevokeSession', { session_id: doomed.session_id });
    expect(revoked).toMatchObject({
      session_id: doomed.session_id,
      user_id: ada.user_id,
      expires_at: doomed.expires_at,
      revoked: true,
      expired: false,
    });
    expect(Date.parse(revoked.revoked_at)).not.toBeNaN();
    expect(await verify(doomed.token)).toEqual(INVALID);
    // The other session of the same user is untouched.
    expect((await verify(ada.token)).valid).toBe(true);

    // Idempotent: the same answer, the first revocation time, nothing new recorded.
    expect(await auth.call<Session>('RevokeSession', { session_id: doomed.session_id })).toEqual(revoked);
    const stream = await store.readStream(`user-${ada.user_id}`);
    const revocations = stream.events.filter(
      (e) =>
        e.type === 'SessionRevoked' && (e.data as { session_id: string }).session_id === doomed.session_id,
    );
    expect(revocations).toHaveLength(1);
    expect(revocations[0]!.metadata.actor).toBe('grpc:auth');

    const bus = new PostgresBus(db.pool, { connectionString: db.url, pollMs: 50 });
    await bus.ensureStreams();
    const records: { record: Record<string, unknown>; raw: string }[] = [];
    const consumer = await bus.consume(
      'session-audit-test-reader',
      'svc.audit.events.platform',
      async (m) => {
        const raw = Buffer.from(m.data).toString('utf8');
        records.push({ record: JSON.parse(raw) as Record<string, unknown>, raw });
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 3 },
    );
    try {
      await rebuildProjection(db.pool, auditRelay(bus));
      const revokedRecords = () => records.filter((r) => r.record.action === 'session.revoked');
      while (revokedRecords().length < 1) await new Promise((r) => setTimeout(r, 25));
      expect(revokedRecords().map((r) => r.record)).toEqual([
        expect.objectContaining({
          tenant_id: 'platform',
          source: 'control-plane',
          actor: 'grpc:auth',
          target: { type: 'user', id: ada.user_id },
          details: { session_id: doomed.session_id, revoked_at: revoked.revoked_at },
        }),
      ]);
      const all = records.map((r) => r.raw).join('\n');
      expect(all).not.toContain(doomed.token);
      expect(all).not.toContain(hashSecret(doomed.token));
    } finally {
      await consumer.close();
      await bus.close();
    }
  }, 30_000);

  it('answers NOT_FOUND for an unknown session id and INVALID_ARGUMENT for none', async () => {
    const unknown = await failure(auth.call('RevokeSession', { session_id: 'ses_unknown' }));
    expect(unknown.code).toBe(grpc.status.NOT_FOUND);
    const none = await failure(auth.call('RevokeSession', {}));
    expect(none.code).toBe(grpc.status.INVALID_ARGUMENT);
    const nul = await failure(auth.call('RevokeSession', { session_id: 'ses_\u0000' }));
    expect(nul.code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe('ListUserSessions', () => {
  it("lists a user's sessions with their times, revoked ones only when asked, never a token or hash", async () => {
    const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 3));
    await cp.addUser(cli, 'bob@sessions.test', { workspaceId: ws, role: 'member' });
    const first = await cp.issueSession(cli, 'bob@sessions.test', HOUR);
    const second = await cp.issueSession(cli, 'bob@sessions.test', HOUR);
    await auth.call('RevokeSession', { session_id: first.session_id });

    const live = await auth.call<{ sessions: Session[] }>('ListUserSessions', { user_id: first.user_id });
    expect(live.sessions.map((s) => s.session_id)).toEqual([second.session_id]);
    const all = await auth.call<{ sessions: Session[] }>('ListUserSessions', {
      user_id: first.user_id,
      include_revoked: true,
    });
    expect(all.sessions.map((s) => [s.session_id, s.revoked])).toEqual([
      [first.session_id, true],
      [second.session_id, false],
    ]);
    for (const s of all.sessions) {
      expect(Object.keys(s).sort()).toEqual([
        'expired',
        'expires_at',
        'issued_at',
        'revoked',
        'revoked_at',
        'session_id',
        'user_id',
      ]);
      expect(s.user_id).toBe(first.user_id);
      expect(Date.parse(s.issued_at)).toBeLessThan(Date.parse(s.expires_at));
      expect(s.expired).toBe(false);
    }
    expect(all.sessions[1]!.revoked_at).toBe('');
    const text = JSON.stringify([live, all]);
    for (const secret of [first.token, second.token])
      for (const leak of [secret, hashSecret(secret)]) expect(text).not.toContain(leak);
  });

  it('marks expired sessions, and answers NOT_FOUND for an unknown user', async () => {
    const listed = await auth.call<{ sessions: Session[] }>('ListUserSessions', { user_id: ada.user_id });
    const old = listed.sessions.find((s) => s.session_id === expired.session_id);
    expect(old).toMatchObject({ expired: true, revoked: false });
    expect(listed.sessions.find((s) => s.session_id === ada.session_id)).toMatchObject({ expired: false });
    const err = await failure(auth.call('ListUserSessions', { user_id: 'usr_nobody' }));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
  });
});

describe('VerifyApiKey and the service token', () => {
  it('VerifyApiKey answers from the API-key cache, as before it moved to the auth role', async () => {
    const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 3));
    const org = await cp.createOrganization(cli, ws, 'Org');
    const project = await cp.createProject(cli, org.org_id, 'Project');
    const key = await cp.createApiKey(cli, project.project_id, 'grpc');
    let verified = await auth.call<{ valid: boolean; project_id: string }>('VerifyApiKey', {
      api_key: key.api_key,
    });
    while (!verified.valid) {
      await new Promise((r) => setTimeout(r, 25));
      verified = await auth.call('VerifyApiKey', { api_key: key.api_key });
    }
    expect(verified).toMatchObject({ valid: true, project_id: project.project_id });
    expect(await auth.call('VerifyApiKey', { api_key: 'svc_sk_nope' })).toMatchObject({ valid: false });
  });

  it('refuses every call without the service token or with another one: UNAUTHENTICATED', async () => {
    for (const token of [undefined, 'wrong-token']) {
      const other = grpcClient(port, FILE, 'svc.controlplane.v1.AuthService', token);
      try {
        for (const [method, request] of [
          ['VerifySession', { access_token: ada.token }],
          ['RevokeSession', { session_id: ada.session_id }],
          ['ListUserSessions', { user_id: ada.user_id }],
          ['VerifyApiKey', { api_key: 'svc_sk_nope' }],
        ] as const) {
          const err = await failure(other.call(method, request));
          expect(err.code, `${method} with ${token ?? 'no token'}`).toBe(grpc.status.UNAUTHENTICATED);
        }
      } finally {
        other.close();
      }
    }
    // Nothing was revoked by the refused calls.
    expect((await verify(ada.token)).valid).toBe(true);
  });
});
