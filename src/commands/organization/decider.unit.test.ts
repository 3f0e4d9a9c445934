import { describe, expect, it } from 'vitest';
import type { Decider, DomainEvent } from '../decider.js';
import { organizationDecider } from './decider.js';

// The organization decider, given/when/then (STYLE.md rules 1, 10; SPEC 4.6).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
  });

describe('organization', () => {
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
});
