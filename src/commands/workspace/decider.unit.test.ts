import { describe, expect, it } from 'vitest';
import type { Decider, DomainEvent } from '../decider.js';
import { workspaceDecider } from './decider.js';

// The workspace decider, given/when/then (STYLE.md rules 1, 10; SPEC 2.10, 4.6).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
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
