import { describe, expect, it } from 'vitest';
import type { Decider, DomainEvent } from '../decider.js';
import { traceIngestKeyDecider } from './decider.js';

// The trace-ingest key decider, given/when/then (STYLE.md rules 1, 10; SPEC 4.6).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
  });

describe('trace-ingest key', () => {
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

  it('sets full payload capture once per change (SPEC 1.10), and not on a revoked key', () => {
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
    const on = tik([born]).when({ type: 'SetTraceIngestKeyTracing', enabled: true });
    expect(on).toEqual([{ type: 'TraceIngestKeyTracingSet', data: { enabled: true } }]);
    expect(tik([born, ...on]).when({ type: 'SetTraceIngestKeyTracing', enabled: true })).toEqual([]);
    expect(() =>
      tik([born, { type: 'TraceIngestKeyRevoked', data: { revoked_at: 't' } }]).when({
        type: 'SetTraceIngestKeyTracing',
        enabled: true,
      }),
    ).toThrow('not found');
  });
});
