import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../events/event-store.js';
import { auditRecordOf, isAuditedEvent } from './audit-record.js';

// The audit record of an audit read token's changes (SPEC 5, 6): actor, action, target, and never
// the secret's hash.

const stored = (type: string, data: unknown): StoredEvent => ({
  globalPosition: 7,
  streamId: 'audittoken-aut_1',
  streamVersion: 1,
  messageId: 'cmd_1:0',
  type,
  schemaVersion: 1,
  data,
  metadata: { actor: 'user:usr_1', now: '2025-06-01T00:00:00.000Z', tenant_id: 'ws_a' },
  recordedAt: new Date('2025-06-01T00:00:01.000Z'),
});

describe('audit record of an audit token', () => {
  it('records audit_token.created on the token, in its workspace, without the secret hash', () => {
    const hash = 'a'.repeat(64);
    const record = auditRecordOf(
      stored('AuditTokenCreated', {
        audit_token_id: 'aut_1',
        workspace_id: 'ws_a',
        name: 'siem export',
        prefix: 'svc_audit_abcde',
        secret_hash: hash,
        scopes: ['audit:read'],
      }),
    );
    expect(record).toEqual({
      event_id: 'cmd_1:0',
      tenant_id: 'ws_a',
      source: 'control-plane',
      actor: 'user:usr_1',
      action: 'audit_token.created',
      target: { type: 'audit_token', id: 'aut_1' },
      occurred_at: '2025-06-01T00:00:00.000Z',
      details: { workspace_id: 'ws_a', name: 'siem export', prefix: 'svc_audit_abcde', scopes_count: 1 },
    });
    expect(JSON.stringify(record)).not.toContain(hash);
  });

  it('records audit_token.revoked', () => {
    expect(isAuditedEvent('AuditTokenRevoked')).toBe(true);
    expect(
      auditRecordOf(stored('AuditTokenRevoked', { revoked_at: '2025-06-01T00:00:00.000Z' })),
    ).toMatchObject({
      action: 'audit_token.revoked',
      target: { type: 'audit_token', id: 'aut_1' },
      details: { revoked_at: '2025-06-01T00:00:00.000Z' },
    });
  });
});

describe('audit record of a policy change (SPEC 1.9)', () => {
  const placement = { scope: 'project', target_id: 'proj_1', org_id: 'org_1', workspace_id: 'ws_a' };
  const policy = (type: string, data: unknown, version: number): StoredEvent => ({
    ...stored(type, data),
    streamId: 'policy-project.proj_1',
    streamVersion: version,
  });

  it('keeps the whole document and the revision it became', () => {
    const document = { schema_version: 1, routes: { deny: ['/v1/images/*'] }, max_tokens: 10 };
    const record = auditRecordOf(policy('PolicySet', { ...placement, document }, 3));
    expect(isAuditedEvent('PolicySet')).toBe(true);
    expect(record).toMatchObject({
      tenant_id: 'ws_a',
      action: 'policy.set',
      target: { type: 'policy', id: 'project.proj_1' },
      details: {
        ...placement,
        revision: 3,
        document: '{"max_tokens":10,"routes":{"deny":["/v1/images/*"]},"schema_version":1}',
      },
    });
    const cleared = auditRecordOf(policy('PolicyCleared', placement, 4));
    expect(cleared.action).toBe('policy.cleared');
    expect(cleared.details).toEqual({ ...placement, revision: 4 });
  });

  it('keeps a large document as its SHA-256', () => {
    const description = 'x'.repeat(2_000);
    const list = (p: string) => Array.from({ length: 64 }, (_, i) => `${p}${i}-${'y'.repeat(120)}`);
    const big = {
      schema_version: 1,
      description,
      models: { allow: list('a'), deny: list('d') },
      providers: { deny: list('p') },
    };
    const record = auditRecordOf(policy('PolicySet', { ...placement, document: big }, 1));
    expect(record.details.document).toBeUndefined();
    expect(record.details.document_sha256).toMatch(/^[0-9a-f]{64}$/);
  });
});
