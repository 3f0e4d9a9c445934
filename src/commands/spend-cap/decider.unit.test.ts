import { describe, expect, it } from 'vitest';
import { apiKeyDecider } from '../api-key/decider.js';
import type { ApiKeyEvent } from '../api-key/events.js';
import type { Decider, DomainEvent } from '../decider.js';
import { organizationDecider } from '../organization/decider.js';
import type { OrganizationEvent } from '../organization/events.js';
import { projectDecider } from '../project/decider.js';
import type { ProjectEvent } from '../project/events.js';
import { parseMonthlyCap } from './decider.js';
import type { SpendCapCommand, SpendCapEvent } from './events.js';

// Spend caps on the organization, project and API key aggregates, given/when/then (SPEC 8 monthly spend caps).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
  });

const orgCreated: OrganizationEvent = {
  type: 'OrganizationCreated',
  data: { org_id: 'org_1', workspace_id: 'ws_1', name: 'Org' },
};
const projectCreated: ProjectEvent = {
  type: 'ProjectCreated',
  data: { project_id: 'prj_1', org_id: 'org_1', workspace_id: 'ws_1', name: 'P' },
};
const keyCreated: ApiKeyEvent = {
  type: 'ApiKeyCreated',
  data: {
    api_key_id: 'key_1',
    project_id: 'prj_1',
    org_id: 'org_1',
    workspace_id: 'ws_1',
    name: 'k',
    prefix: 'svc_sk_abcde',
    secret_hash: 'h',
  },
};

const set = (level: 'org' | 'project' | 'api_key', monthlyUsd: string): SpendCapCommand => ({
  type: 'SetSpendCap',
  level,
  orgId: 'org_1',
  workspaceId: 'ws_1',
  monthlyUsd,
});
const setEvent = (level: 'org' | 'project' | 'api_key', monthly: string): SpendCapEvent => ({
  type: 'SpendCapSet',
  data: { level, org_id: 'org_1', workspace_id: 'ws_1', monthly_usd: monthly },
});

describe('spend caps on each aggregate', () => {
  const cases = [
    ['org', given(organizationDecider), orgCreated],
    ['project', given(projectDecider), projectCreated],
    ['api_key', given(apiKeyDecider), keyCreated],
  ] as const;

  for (const [level, agg, created] of cases) {
    const run = agg as unknown as (h: DomainEvent[]) => { when: (c: SpendCapCommand) => DomainEvent[] };
    it(`${level}: sets a canonical cap, ignores the same cap, changes and clears it`, () => {
      expect(run([created]).when(set(level, '250.50'))).toEqual([setEvent(level, '250.5')]);
      expect(run([created, setEvent(level, '250.5')]).when(set(level, '250.500'))).toEqual([]);
      expect(run([created, setEvent(level, '250.5')]).when(set(level, '0'))).toEqual([setEvent(level, '0')]);
      expect(run([created, setEvent(level, '250.5')]).when({ type: 'ClearSpendCap', level })).toEqual([
        { type: 'SpendCapCleared', data: { level } },
      ]);
    });
    it(`${level}: refuses a clear with no cap, and a cap on an aggregate that does not exist`, () => {
      expect(() => run([created]).when({ type: 'ClearSpendCap', level })).toThrow(/no spend cap/);
      expect(() =>
        run([created, setEvent(level, '1'), { type: 'SpendCapCleared', data: { level } }]).when({
          type: 'ClearSpendCap',
          level,
        }),
      ).toThrow(/no spend cap/);
      expect(() => run([]).when(set(level, '1'))).toThrow(/not found/);
    });
  }

  it('refuses a cap on a revoked API key', () => {
    const revoked: ApiKeyEvent = { type: 'ApiKeyRevoked', data: { revoked_at: 't' } };
    expect(() => given(apiKeyDecider)([keyCreated, revoked]).when(set('api_key', '5'))).toThrow(/revoked/);
  });
});

describe('parseMonthlyCap', () => {
  it('accepts exact non-negative decimals and names monthly_usd otherwise', () => {
    expect(parseMonthlyCap('10')).toBe('10');
    expect(parseMonthlyCap('0.000000000000000001')).toBe('0.000000000000000001');
    expect(parseMonthlyCap('1000000000000')).toBe('1000000000000');
    for (const bad of ['-1', '1e3', '', 'ten', '1000000000000.01', '0.0000000000000000001'])
      expect(() => parseMonthlyCap(bad), bad).toThrow(expect.objectContaining({ param: 'monthly_usd' }));
  });
});
