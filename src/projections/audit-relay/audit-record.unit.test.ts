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
