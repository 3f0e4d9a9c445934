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
});
