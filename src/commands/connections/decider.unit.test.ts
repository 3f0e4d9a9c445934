import { describe, expect, it } from 'vitest';
import type { Decider, DomainEvent } from '../decider.js';
import { connectionDecider } from './decider.js';

// The connection decider, given/when/then (STYLE.md rules 1, 10; SPEC 4.6, 5).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
  });

describe('connection', () => {
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
});
