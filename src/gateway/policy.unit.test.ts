import { describe, expect, it } from 'vitest';
import { query } from '../../test/fixtures/policy-cases.js';
import { ServiceError } from '../lib/errors.js';
import type { PolicyDecision, PolicyQuery } from '../policy/evaluate.js';
import { FAILED_OPEN_VERSION, PolicyUnreachableError, RemotePolicy } from './policy.js';

const allow = (q: PolicyQuery): PolicyDecision => ({
  allowed: true,
  code: 'allowed',
  reasons: [],
  policy_version: 'org:o@1',
  allowed_candidates: q.candidates.map((_, i) => i),
  max_tokens_ceiling: null,
  payload_capture: true,
  rate_limits: { requests_per_minute: null, tokens_per_minute: null },
});

const remote = (call: (q: PolicyQuery, deadline: number) => Promise<PolicyDecision>, over = {}) => {
  let now = 1_000;
  const errors: unknown[] = [];
  const policy = new RemotePolicy(call, {
    deadlineMs: 50,
    cacheMs: 1_000,
    failMode: 'closed',
    now: () => now,
    onError: (e) => errors.push(e),
    ...over,
  });
  return { policy, errors, advance: (ms: number) => (now += ms) };
};

// SPEC 4.8: the gateway calls PolicyService with a deadline, a short decision cache and a fail mode.
describe('RemotePolicy', () => {
  it('passes the deadline and reuses a decision for the same query within the cache time', async () => {
    const calls: number[] = [];
    const r = remote(async (q, deadline) => {
      calls.push(deadline);
      return allow(q);
    });
    await r.policy.evaluate(query());
    await r.policy.evaluate(query());
    expect(calls).toEqual([50]);
    await r.policy.evaluate(query({ max_tokens: 5 }));
    expect(calls).toHaveLength(2);
    r.advance(1_000);
    await r.policy.evaluate(query());
    expect(calls).toHaveLength(3);
  });

  it('fails closed with a 503 by default, and reports the error', async () => {
    const r = remote(async () => {
      throw new PolicyUnreachableError('deadline exceeded');
    });
    const err = await r.policy.evaluate(query()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('service_unavailable');
    expect(r.errors).toHaveLength(1);
  });

  it('fails open when told to: every candidate, no rule, no capture, and the version says so', async () => {
    const r = remote(
      async () => {
        throw new PolicyUnreachableError('unavailable');
      },
      { failMode: 'open' },
    );
    const d = await r.policy.evaluate(query());
    expect(d).toMatchObject({
      allowed: true,
      policy_version: FAILED_OPEN_VERSION,
      allowed_candidates: [0, 1],
      payload_capture: false,
    });
  });

  it('opens only for a service that did not answer: a refused query or a senseless answer is never an allow', async () => {
    const refused = remote(
      async () => {
        throw new ServiceError('bad_request', 'the policy service refused this request: model too long');
      },
      { failMode: 'open' },
    );
    expect(await refused.policy.evaluate(query()).catch((e: ServiceError) => e.code)).toBe('bad_request');
    const broken = remote(
      async () => {
        throw new Error('the policy service answered a contradictory decision');
      },
      { failMode: 'open' },
    );
    expect(await broken.policy.evaluate(query()).catch((e: ServiceError) => e.code)).toBe(
      'service_unavailable',
    );
  });

  it('does not cache a failure: the next call asks again', async () => {
    let fail = true;
    const r = remote(async (q) => {
      if (fail) throw new PolicyUnreachableError('down');
      return allow(q);
    });
    await expect(r.policy.evaluate(query())).rejects.toThrow(ServiceError);
    fail = false;
    expect((await r.policy.evaluate(query())).allowed).toBe(true);
  });

  it('keeps at most cacheEntries decisions', async () => {
    let calls = 0;
    const r = remote(
      async (q) => {
        calls++;
        return allow(q);
      },
      { cacheEntries: 2 },
    );
    for (const m of [1, 2, 3, 1]) await r.policy.evaluate(query({ max_tokens: m }));
    expect(calls).toBe(4);
  });
});
