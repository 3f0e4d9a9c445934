import { createHash, randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyConsistency, verifyInclusion } from '../../src/audit/merkle.js';
import type { BatchArchive, PublishedKeys } from '../../src/audit/model.js';
import { verifyHead } from '../../src/audit/signing.js';
import { canonicalJson } from '../../src/lib/canonical-json.js';
import type { BatchView } from '../../src/projections/audit/reads.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { grpcClient } from '../helpers/grpc.js';
import { runSvc } from '../helpers/svc-process.js';

/**
 * SPEC 1.8, 4.8, 5, 6 from outside: a running `svc serve` relays control-plane changes and request
 * records onto `svc.audit.events.<workspace>`, the audit role seals them into signed batches, an
 * auditor exports them with an audit:read token through `/api/audit` and `svc audit verify` checks
 * them offline, naming the first batch and event of any tampering.
 */

let gw: GatewayEnv;
let out: string;
let a: { workspace_id: string; project_id: string; token: string };
let b: { workspace_id: string; project_id: string; token: string };

const api = async (path: string, token: string, init: RequestInit = {}) => {
  const res = await fetch(`${gw.serve.httpUrl}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      ...(init.headers ?? {}),
    },
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body: body as Record<string, unknown> };
};

const auditToken = async (workspaceId: string) => {
  const r = await api('/api/audit-tokens', gw.admin, {
    method: 'POST',
    body: JSON.stringify({ workspace_id: workspaceId, name: 'auditor' }),
  });
  expect(r.status).toBe(201);
  return r.body as { id: string; secret: string };
};

/** Control-plane changes, each an audit event of the workspace. */
const makeApiKeys = async (projectId: string, n: number) => {
  for (let i = 0; i < n; i++) {
    const r = await api('/api/api-keys', gw.admin, {
      method: 'POST',
      body: JSON.stringify({ project_id: projectId, name: `key ${i}` }),
    });
    expect(r.status).toBe(201);
  }
};

const status = async (token: string) =>
  (await api('/api/audit', token)).body as { events: number; sealed_events: number; batches: number };

const allSealed = async (token: string, minBatches: number) => {
  let last: unknown;
  try {
    await eventually(
      async () => {
        const s = await status(token);
        last = s;
        return s.batches >= minBatches && s.sealed_events === s.events;
      },
      30_000,
      'every audit event sealed',
    );
  } catch (err) {
    // What the log stood at and what the server said, so a failure under load can be read.
    throw new Error(
      `${(err as Error).message}; last status ${JSON.stringify(last)}; serve: ${gw.serve.output().slice(-4000)}`,
    );
  }
};

const svcCli = (args: string[]) => runSvc(args, { ...gw.env, SVC_AUDIT_URL: gw.serve.httpUrl });

beforeAll(async () => {
  gw = await startGatewayEnv({
    SVC_AUDIT_BATCH_MAX_EVENTS: '4',
    SVC_AUDIT_BATCH_MAX_AGE_MS: '1000',
    SVC_AUDIT_SEAL_INTERVAL_MS: '100',
  });
  const second = (await gw.svc([
    'bootstrap',
    '--workspace',
    'Audit B',
    '--org',
    'B Org',
    '--project',
    'B Project',
  ])) as {
    workspace_id: string;
    project_id: string;
  };
  a = {
    workspace_id: gw.boot.workspace_id,
    project_id: gw.boot.project_id,
    token: (await auditToken(gw.boot.workspace_id)).secret,
  };
  b = {
    workspace_id: second.workspace_id,
    project_id: second.project_id,
    token: (await auditToken(second.workspace_id)).secret,
  };
  await makeApiKeys(a.project_id, 9);
  await makeApiKeys(b.project_id, 5);
  await allSealed(a.token, 3);
  await allSealed(b.token, 2);
  out = mkdtempSync(join(tmpdir(), 'svc-audit-export-'));
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('audit evidence (SPEC 1.8, 6)', () => {
  it('svc audit export writes keys, archives and manifests with an audit token, and they verify offline', async () => {
    const r = await svcCli(['audit', 'export', '--out', join(out, 'a'), '--token', a.token, '--json']);
    expect(r.stderr).not.toMatch(/svc:/);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout) as { tenant_id: string; batches: number; verified: { ok: boolean } };
    expect(summary.tenant_id).toBe(a.workspace_id);
    expect(summary.batches).toBeGreaterThanOrEqual(3);
    expect(summary.verified.ok).toBe(true);
    const again = await svcCli(['audit', 'verify', join(out, 'a')]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/evidence verifies/);
    const rerun = JSON.parse(
      (await svcCli(['audit', 'export', '--out', join(out, 'a'), '--token', a.token, '--json'])).stdout,
    );
    expect(rerun).toMatchObject({ written: 0, reused: summary.batches * 2 });
    const bExport = await svcCli(['audit', 'export', '--out', join(out, 'b'), '--token', b.token, '--json']);
    expect(JSON.parse(bExport.stdout)).toMatchObject({ tenant_id: b.workspace_id, verified: { ok: true } });
  });

  it('svc audit verify holds the evidence to a signed head the auditor kept (--expect-tree-size, --expect-root)', async () => {
    const batches = (await api('/api/audit/batches', a.token)).body.data as BatchView[];
    const first = batches[0]!;
    const dir = join(out, 'a');
    const held = await svcCli([
      'audit',
      'verify',
      dir,
      '--expect-tree-size',
      String(first.tree_size),
      '--expect-root',
      first.root,
    ]);
    expect(held.code).toBe(0);
    const otherRoot = `${first.root.slice(0, -1)}${first.root.endsWith('0') ? '1' : '0'}`;
    const rewritten = await svcCli([
      'audit',
      'verify',
      dir,
      '--json',
      '--expect-tree-size',
      String(first.tree_size),
      '--expect-root',
      otherRoot,
    ]);
    expect(rewritten.code).toBe(2);
    expect(JSON.parse(rewritten.stdout).reason).toMatch(/rewritten/);
    const beyond = await svcCli([
      'audit',
      'verify',
      dir,
      '--json',
      '--expect-tree-size',
      '100000',
      '--expect-root',
      first.root,
    ]);
    expect(beyond.code).toBe(2);
    expect(JSON.parse(beyond.stdout).reason).toMatch(/missing/);
    const half = await svcCli(['audit', 'verify', dir, '--expect-root', first.root]);
    expect(half.code).toBe(1);
    expect(half.stderr).toMatch(/together/);
  });

  const pad = (n: number) => String(n).padStart(12, '0');
  const archivePath = (dir: string, n: number) => join(dir, 'batches', `${pad(n)}.json.gz`);
  const readArchive = (dir: string, n: number) =>
    JSON.parse(gunzipSync(readFileSync(archivePath(dir, n))).toString('utf8')) as BatchArchive;
  const writeArchive = (dir: string, n: number, archive: BatchArchive) =>
    writeFileSync(archivePath(dir, n), gzipSync(canonicalJson(archive)));
  const leafOf = (bytes: Buffer) =>
    createHash('sha256')
      .update(Buffer.concat([Buffer.from([0]), bytes]))
      .digest('hex');

  /** A copy of A's export with one change; `svc audit verify --json` on it. */
  const tampered = async (change: (dir: string) => void) => {
    const dir = mkdtempSync(join(out, 'tampered-'));
    cpSync(join(out, 'a'), dir, { recursive: true });
    change(dir);
    const r = await svcCli(['audit', 'verify', dir, '--json']);
    return { code: r.code, report: JSON.parse(r.stdout) as Record<string, unknown> };
  };

  it.each([
    [
      'a flipped byte in an archived event',
      (dir: string) => {
        const x = readArchive(dir, 2);
        const bytes = Buffer.from(x.events[1]!.bytes, 'base64');
        bytes[5] = bytes[5]! ^ 0x01;
        x.events[1]!.bytes = bytes.toString('base64');
        writeArchive(dir, 2, x);
      },
      (x: BatchArchive) => ({ batch_no: 2, event_index: x.events[1]!.index }),
    ],
    [
      'a removed event',
      (dir: string) => {
        const x = readArchive(dir, 2);
        x.events.splice(2, 1);
        writeArchive(dir, 2, x);
      },
      () => ({ batch_no: 2 }),
    ],
    [
      'two swapped events',
      (dir: string) => {
        const x = readArchive(dir, 2);
        const [e0, e1] = [x.events[0]!, x.events[1]!];
        x.events[0] = { ...e1, index: e0.index };
        x.events[1] = { ...e0, index: e1.index };
        writeArchive(dir, 2, x);
      },
      (x: BatchArchive) => ({ batch_no: 2, event_index: x.events[0]!.index }),
    ],
    [
      'a forged signature',
      (dir: string) => {
        const x = readArchive(dir, 2);
        x.signature = randomBytes(64).toString('hex');
        writeArchive(dir, 2, x);
      },
      () => ({ batch_no: 2 }),
    ],
    [
      "a batch replaced by another tenant's",
      (dir: string) => {
        cpSync(archivePath(join(out, 'b'), 2), archivePath(dir, 2));
        cpSync(join(out, 'b', 'manifests', `${pad(2)}.json`), join(dir, 'manifests', `${pad(2)}.json`));
      },
      () => ({}),
    ],
    [
      'a rewritten earlier batch (event, leaf and proofs consistent, root not re-signed)',
      (dir: string) => {
        const x = readArchive(dir, 1);
        const event = JSON.parse(Buffer.from(x.events[0]!.bytes, 'base64').toString('utf8'));
        event.actor = 'someone-else';
        const bytes = Buffer.from(canonicalJson(event));
        x.events[0]!.bytes = bytes.toString('base64');
        x.events[0]!.leaf = leafOf(bytes);
        writeArchive(dir, 1, x);
      },
      () => ({ batch_no: 1 }),
    ],
    [
      'the last batch cut off the end (export.json records where the log ended)',
      (dir: string) => {
        const last = JSON.parse(readFileSync(join(dir, 'export.json'), 'utf8')).batches as number;
        rmSync(archivePath(dir, last));
        rmSync(join(dir, 'manifests', `${pad(last)}.json`));
      },
      () => ({ batch_no: null }),
    ],
    [
      'batch 1 left out',
      (dir: string) => {
        rmSync(archivePath(dir, 1));
        rmSync(join(dir, 'manifests', `${pad(1)}.json`));
      },
      () => ({}),
    ],
    [
      'the manifests left out',
      (dir: string) => rmSync(join(dir, 'manifests'), { recursive: true }),
      () => ({}),
    ],
  ])('svc audit verify detects %s and exits non-zero naming where', async (_name, change, where) => {
    const original = readArchive(join(out, 'a'), 2);
    expect(original.events.length).toBeGreaterThanOrEqual(3);
    const { code, report } = await tampered(change);
    expect(code).toBe(2);
    expect(report.ok).toBe(false);
    expect(report).toMatchObject(where(original));
    expect(typeof report.reason).toBe('string');
  });

  it('proofs from the API verify against a signed head and its published key', async () => {
    const keys = (await api('/api/audit/keys', 'none')).body as unknown as PublishedKeys;
    const batches = (await api('/api/audit/batches', a.token)).body.data as BatchView[];
    const events = (await api('/api/audit/events?limit=5', a.token)).body.data as {
      event_id: string;
      index: number;
      leaf: string;
    }[];
    const e = events[3]!;
    const p = (await api(`/api/audit/events/${encodeURIComponent(e.event_id)}/proof`, a.token)).body as {
      tree_size: number;
      root: string;
      proof: string[];
      batch_no: number;
    };
    const head = batches.find((x) => x.batch_no === p.batch_no)!;
    expect(head.root).toBe(p.root);
    const key = keys.keys.find((k) => k.key_id === head.key_id)!;
    expect(verifyHead(head.head, head.signature, key.public_key)).toBe(true);
    const hex = (h: string) => Buffer.from(h, 'hex');
    expect(verifyInclusion(e.index, p.tree_size, hex(e.leaf), p.proof.map(hex), hex(p.root))).toBe(true);
    const last = batches[batches.length - 1]!;
    const c = (
      await api(`/api/audit/consistency?from=${batches[0]!.tree_size}&to=${last.tree_size}`, a.token)
    ).body as {
      proof: string[];
    };
    expect(
      verifyConsistency(
        batches[0]!.tree_size,
        last.tree_size,
        hex(batches[0]!.root),
        hex(last.root),
        c.proof.map(hex),
      ),
    ).toBe(true);

    const grpc = grpcClient(
      gw.serve.grpcPort,
      'svc/audit/v1/audit.proto',
      'svc.audit.v1.AuditService',
      gw.admin,
    );
    try {
      const viaGrpc = await grpc.call<{ proof: string[]; root: string; tree_size: string }>(
        'GetInclusionProof',
        {
          tenant_id: a.workspace_id,
          event_id: e.event_id,
        },
      );
      expect(viaGrpc).toMatchObject({ proof: p.proof, root: p.root, tree_size: String(p.tree_size) });
      await expect(
        grpcClient(gw.serve.grpcPort, 'svc/audit/v1/audit.proto', 'svc.audit.v1.AuditService', 'wrong').call(
          'GetEvent',
          {
            tenant_id: a.workspace_id,
            event_id: e.event_id,
          },
        ),
      ).rejects.toThrow(/UNAUTHENTICATED|service token/);
    } finally {
      grpc.close();
    }
  });

  it("one workspace's token never reads another's events or proofs; other credentials are refused", async () => {
    const bEvents = (await api('/api/audit/events', b.token)).body.data as { event_id: string }[];
    const foreign = encodeURIComponent(bEvents[0]!.event_id);
    expect((await api(`/api/audit/events/${foreign}`, a.token)).status).toBe(404);
    expect((await api(`/api/audit/events/${foreign}/proof`, a.token)).status).toBe(404);
    const aEvents = (await api('/api/audit/events?limit=1000', a.token)).body.data as {
      event: { tenant_id: string };
    }[];
    expect(aEvents.length).toBeGreaterThan(0);
    expect(aEvents.every((e) => e.event.tenant_id === a.workspace_id)).toBe(true);
    const aBatches = (await api('/api/audit/batches', a.token)).body.data as BatchView[];
    expect(aBatches.every((x) => x.head.tenant_id === a.workspace_id)).toBe(true);
    for (const path of ['/api/audit/batches/', '/api/audit/batches//archive', '/api/audit/batches/0'])
      expect(await api(path, a.token)).toMatchObject({
        status: 400,
        body: { error: 'bad_request', param: 'batch_no' },
      });
    expect((await api('/api/audit/events', gw.boot.api_key)).status).toBe(401);
    expect((await api('/api/audit/events', 'svc_audit_not-a-real-token')).status).toBe(401);
    const noAuth = await fetch(`${gw.serve.httpUrl}/api/audit/events`);
    expect(noAuth.status).toBe(401);
    expect((await api('/api/audit/events', gw.admin)).status).toBe(400);
    expect((await api(`/api/audit/events?tenant_id=${b.workspace_id}`, gw.admin)).status).toBe(200);
    // An audit token names no other tenant: refused, not quietly answered with its own.
    expect((await api(`/api/audit/events?tenant_id=${b.workspace_id}`, a.token)).status).toBe(400);
    // A revoked token stops working.
    const extra = await auditToken(a.workspace_id);
    expect((await api('/api/audit', extra.secret)).status).toBe(200);
    expect((await api(`/api/audit-tokens/${extra.id}`, gw.admin, { method: 'DELETE' })).status).toBe(200);
    await eventually(
      async () => (await api('/api/audit', extra.secret)).status === 401,
      10_000,
      'revoked token refused',
    );
  });

  it('a failed request is recorded on its audit event with its error code and attempts (SPEC 7.5)', async () => {
    const res = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(404);
    const requestId = res.headers.get('x-svc-request-id');
    expect(requestId).toBeTruthy();
    let record: { details: Record<string, unknown>; attempts: unknown[] } | undefined;
    await eventually(
      async () => {
        const r = await api(
          `/api/audit/events/${encodeURIComponent(`request_logged:${requestId}`)}`,
          a.token,
        );
        if (r.status !== 200) return false;
        record = (r.body as { event: typeof record }).event;
        return true;
      },
      30_000,
      'the request_logged audit event',
    );
    expect(record!.details).toMatchObject({
      status: 'error',
      http_status: 404,
      error_code: 'unknown_model',
      attempt_count: 0,
    });
    expect(record!.attempts).toEqual([]);
  });
});
