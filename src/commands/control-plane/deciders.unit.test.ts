import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../lib/errors.js';
import { type ApiKeyEvent, apiKeyDecider, dimensionValueAt } from '../api-key/decider.js';
import { connectionDecider } from '../connections/decider.js';
import type { Decider, DomainEvent } from '../decider.js';
import { organizationDecider } from '../organization/decider.js';
import { traceIngestKeyDecider } from '../trace-ingest-key/decider.js';
import { workspaceDecider } from '../workspace/decider.js';

// Control-plane deciders, given/when/then (STYLE.md rules 1, 10; issue 4 Build 1).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
  });

const created: ApiKeyEvent = {
  type: 'ApiKeyCreated',
  data: {
    api_key_id: 'key_1',
    project_id: 'prj',
    org_id: 'org',
    workspace_id: 'ws',
    name: 'k',
    prefix: 'svc_sk_abcde',
    secret_hash: 'h',
  },
};

describe('api key', () => {
  const key = given(apiKeyDecider);

  it('revokes once; a second revoke is not found', () => {
    expect(key([created]).when({ type: 'RevokeApiKey', now: 't1' })).toEqual([
      { type: 'ApiKeyRevoked', data: { revoked_at: 't1' } },
    ]);
    expect(() =>
      key([created, { type: 'ApiKeyRevoked', data: { revoked_at: 't1' } }]).when({
        type: 'RevokeApiKey',
        now: 't2',
      }),
    ).toThrow('already revoked');
  });

  it('a new assignment ends the open one at the same instant', () => {
    const open: ApiKeyEvent = {
      type: 'DimensionAssigned',
      data: { definition_id: 'd', value: 'a', effective_from: '2026-01-01T00:00:00.000Z' },
    };
    expect(
      key([created, open]).when({
        type: 'AssignDimension',
        definitionId: 'd',
        value: 'b',
        now: '2026-02-01T00:00:00.000Z',
        definitionActive: true,
      }),
    ).toEqual([
      {
        type: 'DimensionAssignmentEnded',
        data: { definition_id: 'd', effective_to: '2026-02-01T00:00:00.000Z' },
      },
      {
        type: 'DimensionAssigned',
        data: { definition_id: 'd', value: 'b', effective_from: '2026-02-01T00:00:00.000Z' },
      },
    ]);
    expect(
      key([created, open]).when({
        type: 'AssignDimension',
        definitionId: 'd',
        value: 'a',
        now: 'x',
        definitionActive: true,
      }),
    ).toEqual([]);
  });

  it('refuses an archived dimension and an end date before the start', () => {
    expect(() =>
      key([created]).when({
        type: 'AssignDimension',
        definitionId: 'd',
        value: 'a',
        now: 'x',
        definitionActive: false,
      }),
    ).toThrow(ServiceError);
    const open: ApiKeyEvent = {
      type: 'DimensionAssigned',
      data: { definition_id: 'd', value: 'a', effective_from: '2026-03-01T00:00:00.000Z' },
    };
    expect(() =>
      key([created, open]).when({
        type: 'EndDimensionAssignment',
        definitionId: 'd',
        endAt: '2026-02-01T00:00:00.000Z',
      }),
    ).toThrow('before the assignment began');
  });

  it('an end-dated assignment applies on [from, to)', () => {
    const rows = [
      { value: 'cc', effective_from: '2026-01-01T00:00:00.000Z', effective_to: '2026-02-01T00:00:00.000Z' },
    ];
    expect(dimensionValueAt(rows, '2026-01-31T23:59:59.999Z')).toBe('cc');
    expect(dimensionValueAt(rows, '2026-02-01T00:00:00.000Z')).toBeNull();
    expect(dimensionValueAt(rows, '2025-12-31T23:59:59.999Z')).toBeNull();
  });
});

describe('workspace', () => {
  const ws = given(workspaceDecider);
  const born = { type: 'WorkspaceCreated' as const, data: { workspace_id: 'ws', name: 'Acme' } };

  it('creates once', () => {
    expect(() => ws([born]).when({ type: 'CreateWorkspace', workspaceId: 'ws', name: 'Acme' })).toThrow(
      'already exists',
    );
  });

  it('dimension keys are unique among active ones and must be snake case', () => {
    const defined = {
      type: 'DimensionDefined' as const,
      data: { definition_id: 'd1', key: 'team', description: '' },
    };
    expect(() =>
      ws([born, defined]).when({ type: 'DefineDimension', definitionId: 'd2', key: 'team', description: '' }),
    ).toThrow('already defined');
    expect(() =>
      ws([born]).when({ type: 'DefineDimension', definitionId: 'd2', key: 'Team Name', description: '' }),
    ).toThrow('lower-case');
    const archived = { type: 'DimensionArchived' as const, data: { definition_id: 'd1', archived_at: 't' } };
    expect(
      ws([born, defined, archived]).when({
        type: 'DefineDimension',
        definitionId: 'd2',
        key: 'team',
        description: '',
      }),
    ).toHaveLength(1);
  });

  it('adding a member with the role it has is a no-op', () => {
    const added = {
      type: 'MemberAdded' as const,
      data: { user_id: 'u', email: 'a@b.c', role: 'manager' as const },
    };
    expect(
      ws([born, added]).when({ type: 'AddMember', userId: 'u', email: 'a@b.c', role: 'manager' }),
    ).toEqual([]);
  });
});

describe('organization, connection, trace-ingest key', () => {
  it('the disallow list is stored sorted and deduplicated; setting it again is a no-op', () => {
    const org = given(organizationDecider);
    const born = {
      type: 'OrganizationCreated' as const,
      data: { org_id: 'o', workspace_id: 'w', name: 'n' },
    };
    expect(
      org([born]).when({ type: 'SetProviderDisallowList', providers: ['openai', 'bedrock', 'openai'] }),
    ).toEqual([{ type: 'ProviderDisallowListSet', data: { providers: ['bedrock', 'openai'] } }]);
    expect(
      org([born, { type: 'ProviderDisallowListSet', data: { providers: ['bedrock', 'openai'] } }]).when({
        type: 'SetProviderDisallowList',
        providers: ['openai', 'bedrock'],
      }),
    ).toEqual([]);
  });

  it('a deleted connection name can be created again; a live one cannot', () => {
    const conn = given(connectionDecider);
    const fields = {
      provider: 'openai',
      name: 'primary',
      base_url: null,
      metadata: {},
      secret_ciphertext: 'v1.x',
    };
    const create = {
      type: 'CreateConnection' as const,
      connectionId: 'c',
      workspaceId: 'w',
      orgId: 'o',
      projectId: 'p',
      fields,
    };
    const createdEvent = conn([]).when(create)[0]!;
    expect(() => conn([createdEvent]).when(create)).toThrow('already exists');
    expect(
      conn([createdEvent, { type: 'ConnectionDeleted', data: { deleted_at: 't' } }]).when(create),
    ).toHaveLength(1);
  });

  it('a revoked trace-ingest key cannot be rotated', () => {
    const tik = given(traceIngestKeyDecider);
    const born = tik([]).when({
      type: 'CreateTraceIngestKey',
      id: 't',
      projectId: 'p',
      orgId: 'o',
      workspaceId: 'w',
      name: 'n',
      prefix: 'svc_ti_x',
      secretHash: 'h',
    })[0]!;
    expect(() =>
      tik([born, { type: 'TraceIngestKeyRevoked', data: { revoked_at: 't' } }]).when({
        type: 'RotateTraceIngestKey',
        prefix: 'p',
        secretHash: 'h2',
        now: 't',
      }),
    ).toThrow('not found');
  });
});
