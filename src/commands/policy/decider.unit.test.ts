import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../lib/errors.js';
import type { PolicyDocument } from '../../policy/document.js';
import { policyDecider } from './decider.js';
import type { PolicyEvent } from './events.js';

const placement = {
  layer: 'workspace' as const,
  scope: 'project' as const,
  target_id: 'proj_1',
  org_id: 'org_1',
  workspace_id: 'ws_1',
};
const operator = { ...placement, layer: 'operator' as const };
const doc = (max: number): PolicyDocument => ({ schema_version: 1, max_tokens: max });
const given = (events: PolicyEvent[]) => events.reduce(policyDecider.evolve, policyDecider.initialState());
const set = (max: number): PolicyEvent => ({ type: 'PolicySet', data: { ...placement, document: doc(max) } });

// SPEC 1.9: policies as append-only events, one stream per scope, versioned by revision.
describe('policy decider', () => {
  it('sets a policy on a scope without one', () => {
    expect(policyDecider.decide({ type: 'SetPolicy', placement, document: doc(10) }, given([]))).toEqual([
      set(10),
    ]);
  });

  it('appends nothing when the same document is set again, in any key order', () => {
    const state = given([
      { type: 'PolicySet', data: { ...placement, document: { max_tokens: 10, schema_version: 1 } } },
    ]);
    expect(policyDecider.decide({ type: 'SetPolicy', placement, document: doc(10) }, state)).toEqual([]);
  });

  it('moves the revision on every change, clears included', () => {
    const state = given([set(10), set(20), { type: 'PolicyCleared', data: placement }]);
    expect(state.layers.workspace).toEqual({ revision: 3, document: null });
    expect(policyDecider.decide({ type: 'SetPolicy', placement, document: doc(5) }, state)).toEqual([set(5)]);
  });

  it('refuses a stale expected revision with a conflict and takes the current one', () => {
    const state = given([set(10), set(20)]);
    const stale = () =>
      policyDecider.decide({ type: 'SetPolicy', placement, document: doc(30), expectedRevision: 1 }, state);
    expect(stale).toThrow(ServiceError);
    expect(stale).toThrow(/at revision 2, not 1/);
    expect(() =>
      policyDecider.decide({ type: 'SetPolicy', placement, document: doc(30), expectedRevision: 1 }, state),
    ).toThrow(expect.objectContaining({ code: 'precondition_failed' }));
    expect(
      policyDecider.decide({ type: 'SetPolicy', placement, document: doc(30), expectedRevision: 2 }, state),
    ).toEqual([set(30)]);
  });

  it('keeps the layers apart: each has its own document and revision on the one stream', () => {
    const state = given([set(10), { type: 'PolicySet', data: { ...operator, document: doc(5) } }]);
    expect(state.version).toBe(2);
    expect(state.layers.workspace.revision).toBe(1);
    expect(state.layers.operator.revision).toBe(2);
    // The workspace's revision is still 1: a change of the operator's does not make it stale.
    expect(
      policyDecider.decide({ type: 'SetPolicy', placement, document: doc(11), expectedRevision: 1 }, state),
    ).toHaveLength(1);
    expect(() => policyDecider.decide({ type: 'ClearPolicy', placement: operator }, given([set(1)]))).toThrow(
      /no operator policy/,
    );
  });

  it('clears only a policy in force', () => {
    expect(() => policyDecider.decide({ type: 'ClearPolicy', placement }, given([]))).toThrow(
      /no workspace policy is set/,
    );
    expect(policyDecider.decide({ type: 'ClearPolicy', placement }, given([set(1)]))).toEqual([
      { type: 'PolicyCleared', data: placement },
    ]);
  });
});
