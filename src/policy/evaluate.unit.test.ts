import { describe, expect, it } from 'vitest';
import { orgPolicy, POLICY_CASES, projectPolicy, query } from '../../test/fixtures/policy-cases.js';
import { PolicySet } from './set.js';

// SPEC 1.9 (policy evaluations), 4.8 (PolicyService.Evaluate): the table every evaluator must agree on.
describe('policy evaluation', () => {
  for (const c of POLICY_CASES)
    it(c.name, () => {
      const decision = new PolicySet(c.policies).evaluate(c.query);
      expect(decision).toMatchObject(c.expect);
      if (!decision.allowed) {
        expect(decision.allowed_candidates).toEqual([]);
        expect(decision.reasons).toHaveLength(1);
      }
    });

  it('names the scope and the pattern in the reason of a denial', () => {
    const d = new PolicySet([orgPolicy({ providers: { deny: ['openai', 'azure*'] } })]).evaluate(query());
    expect(d.reasons[0]).toContain('the workspace policy of org org_policy_case');
    expect(d.reasons[0]).toContain('"openai"');
    expect(d.reasons[0]).toContain('"azure*"');
  });

  it('says which candidates an allowed request lost', () => {
    const d = new PolicySet([projectPolicy({ providers: { allow: ['azure'] } })]).evaluate(query());
    expect(d.allowed).toBe(true);
    expect(d.reasons).toEqual([
      'provider openai: the workspace policy of project proj_policy_case allows only "azure" among providers',
    ]);
  });

  it('is the same decision when evaluated twice (the resolved policy is cached)', () => {
    const set = new PolicySet([orgPolicy({ max_tokens: 10 })]);
    expect(set.evaluate(query({ max_tokens: 11 }))).toEqual(set.evaluate(query({ max_tokens: 11 })));
    expect(set.evaluate(query({ max_tokens: 9 })).allowed).toBe(true);
  });
});
