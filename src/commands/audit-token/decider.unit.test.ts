import { describe, expect, it } from 'vitest';
import type { Decider, DomainEvent } from '../decider.js';
import { auditTokenDecider } from './decider.js';
import type { AuditTokenCommand, AuditTokenEvent } from './events.js';

// The audit read token decider, given/when/then (STYLE.md rules 1, 10; SPEC 5).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
  });
const token = given(auditTokenDecider);

const create: AuditTokenCommand = {
  type: 'CreateAuditToken',
  id: 'aut_1',
  workspaceId: 'ws_a',
  name: 'siem export',
  prefix: 'svc_audit_abcde',
  secretHash: 'h',
};
const created: AuditTokenEvent = {
  type: 'AuditTokenCreated',
  data: {
    audit_token_id: 'aut_1',
    workspace_id: 'ws_a',
    name: 'siem export',
    prefix: 'svc_audit_abcde',
    secret_hash: 'h',
    scopes: ['audit:read'],
  },
};
const revoked: AuditTokenEvent = {
  type: 'AuditTokenRevoked',
  data: { revoked_at: '2025-06-01T00:00:00.000Z' },
};

describe('audit token', () => {
  it('is created for one workspace with scope audit:read only', () => {
    expect(token([]).when(create)).toEqual([created]);
  });

  it('is created once: the same id again is a conflict', () => {
    expect(() => token([created]).when(create)).toThrow('already exists');
  });

  it('is revoked at the time the command carries', () => {
    expect(token([created]).when({ type: 'RevokeAuditToken', now: '2025-06-01T00:00:00.000Z' })).toEqual([
      revoked,
    ]);
  });

  it('an unknown or already revoked token cannot be revoked (404)', () => {
    const revoke: AuditTokenCommand = { type: 'RevokeAuditToken', now: '2025-06-02T00:00:00.000Z' };
    expect(() => token([]).when(revoke)).toThrow('audit token not found');
    expect(() => token([created, revoked]).when(revoke)).toThrow('audit token not found');
  });
});
