import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AnalyticsStore } from '../analytics/port.js';
import { LiveSessions } from './live.js';

const limits = { pollMs: 1_000, heartbeatMs: 60_000, maxPerSession: 2, maxPerOrg: 3 };
const scope = (orgId: string, sessionId: string) => ({ orgId, projectId: null, sessionId });

const countingStore = () => {
  const queries: unknown[] = [];
  const store = {
    query: async (_sql: string, params: unknown) => {
      queries.push(params);
      return [];
    },
  };
  return { store: store as unknown as AnalyticsStore, queries };
};

afterEach(() => vi.useRealTimers());

describe('live session streams (SPEC 4.5, 8)', () => {
  it('refuses a stream past the per-session and the per-organization limit, and frees a slot on close', () => {
    const live = new LiveSessions(countingStore().store, limits);
    const a1 = live.open(scope('org_a', 's1'), () => {});
    const a2 = live.open(scope('org_a', 's1'), () => {});
    expect(live.open(scope('org_a', 's1'), () => {})).toEqual({ ok: false, limit: 'session', max: 2 });
    const a3 = live.open(scope('org_a', 's2'), () => {});
    expect(live.open(scope('org_a', 's3'), () => {})).toEqual({ ok: false, limit: 'organization', max: 3 });
    // Another organization is not affected.
    expect(live.open(scope('org_b', 's1'), () => {}).ok).toBe(true);
    expect(a1.ok && a2.ok && a3.ok).toBe(true);
    if (a1.ok) {
      a1.close();
      a1.close(); // twice is once
    }
    expect(live.open(scope('org_a', 's1'), () => {}).ok).toBe(true);
    expect(live.open(scope('org_a', 's3'), () => {}).ok).toBe(false);
    live.stop();
  });

  it('streams of one session share one poll per interval; the poll stops with the last stream', async () => {
    vi.useFakeTimers();
    const { store, queries } = countingStore();
    const live = new LiveSessions(store, { ...limits, maxPerSession: 10, maxPerOrg: 10 });
    const opened = Array.from({ length: 5 }, () => live.open(scope('org_a', 's1'), () => {}));
    expect(queries).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(queries).toHaveLength(4);
    for (const o of opened) if (o.ok) o.close();
    await vi.advanceTimersByTimeAsync(3_000);
    expect(queries).toHaveLength(4);
  });

  it('sends each new request once to every stream of the session, and heartbeats', async () => {
    vi.useFakeTimers();
    let rows: Record<string, unknown>[] = [];
    const store = { query: async () => rows } as unknown as AnalyticsStore;
    const live = new LiveSessions(store, { ...limits, heartbeatMs: 5_000 });
    const got: [string[], string[]] = [[], []];
    live.open(scope('org_a', 's1'), (f) => got[0].push(f));
    await vi.advanceTimersByTimeAsync(0);
    live.open(scope('org_a', 's1'), (f) => got[1].push(f));
    rows = [{ request_id: 'req_1', ingested_ms: String(Date.now()) }];
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.advanceTimersByTimeAsync(1_000); // the same row again: a redelivered copy
    await vi.advanceTimersByTimeAsync(3_000);
    for (const frames of got) {
      expect(frames.filter((f) => f.startsWith('event: request.completed'))).toHaveLength(1);
      expect(frames.filter((f) => f.startsWith(': heartbeat'))).toHaveLength(1);
    }
    live.stop();
  });
});
