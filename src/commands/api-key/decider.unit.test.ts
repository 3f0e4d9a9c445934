import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../lib/errors.js';
import type { Decider, DomainEvent } from '../decider.js';
import { apiKeyDecider, dimensionValueAt } from './decider.js';
import type { ApiKeyEvent } from './events.js';

// The API-key decider, given/when/then (STYLE.md rules 1, 10; SPEC 2.10, 4.6).

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

  it('two assignments in one instant, or with a clock behind the open one, never start before it', () => {
    const open: ApiKeyEvent = {
      type: 'DimensionAssigned',
      data: { definition_id: 'd', value: 'a', effective_from: '2026-02-01T00:00:00.000Z' },
    };
    const at = (now: string) =>
      key([created, open]).when({
        type: 'AssignDimension',
        definitionId: 'd',
        value: 'b',
        now,
        definitionActive: true,
      });
    const replacing = [
      {
        type: 'DimensionAssignmentEnded',
        data: { definition_id: 'd', effective_to: '2026-02-01T00:00:00.000Z' },
      },
      {
        type: 'DimensionAssigned',
        data: { definition_id: 'd', value: 'b', effective_from: '2026-02-01T00:00:00.000Z' },
      },
    ];
    expect(at('2026-02-01T00:00:00.000Z')).toEqual(replacing);
    expect(at('2026-01-31T23:59:59.999Z')).toEqual(replacing);
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
