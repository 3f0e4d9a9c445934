import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiKeyIdentity } from './auth/api-key-cache.js';
import { type MonthlySpend, type SpendCap, SpendCapCache, type SpendCapSources } from './spend-caps.js';

// The spend-cap cache: verdicts at org, project and key level, the staleness
// bound (one refresh), and what a failing refresh keeps (the last known value, failing open when
// that value cannot say anything about the current month).

const key = (apiKeyId: string, projectId = 'prj_1', orgId = 'org_1'): ApiKeyIdentity => ({
  apiKeyId,
  projectId,
  orgId,
  workspaceId: 'ws_1',
  name: 'k',
  prefix: 'svc_sk_x',
  tracing: false,
});

/** Sources whose answers the test changes between refreshes; a thrown value makes that input fail. */
const fakeSources = () => {
  const state = {
    caps: [] as SpendCap[] | Error,
    spend: new Map<string, string>() as Map<string, string> | Error,
    spendCalls: [] as { month: string; orgIds: readonly string[] }[],
  };
  const sources: SpendCapSources = {
    caps: async () => {
      if (state.caps instanceof Error) throw state.caps;
      return state.caps;
    },
    spend: async (month, orgIds): Promise<MonthlySpend> => {
      state.spendCalls.push({ month, orgIds });
      if (state.spend instanceof Error) throw state.spend;
      return {
        month,
        entries: [...state.spend].map(([target, spend_usd]) => {
          const [scope, id] = target.split(':') as ['org' | 'project' | 'api_key', string];
          return { scope, id, spend_usd };
        }),
      };
    },
  };
  return { state, sources };
};

const cap = (level: SpendCap['level'], target_id: string, monthly_usd: string): SpendCap => ({
  level,
  target_id,
  org_id: 'org_1',
  monthly_usd,
});

let now = new Date('2026-11-20T12:00:00Z');
const REFRESH = 5_000;
const errors: string[] = [];
const make = (sources: SpendCapSources) =>
  new SpendCapCache(sources, {
    refreshMs: REFRESH,
    now: () => now,
    onError: (_err, what) => {
      errors.push(what);
    },
  });

beforeEach(() => {
  vi.useFakeTimers();
  now = new Date('2026-11-20T12:00:00Z');
  errors.length = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

describe('verdicts', () => {
  it('refuses a key whose own, project or org spend is at or over its cap, and only those', async () => {
    const { state, sources } = fakeSources();
    state.caps = [cap('api_key', 'key_a', '10'), cap('project', 'prj_2', '5.5'), cap('org', 'org_3', '0')];
    state.spend = new Map([
      ['api_key:key_a', '10'],
      ['api_key:key_b', '99'],
      ['project:prj_2', '5.499999999999999999'],
      ['project:prj_1', '1000'],
    ]);
    const cache = make(sources);
    await cache.start();
    const refused = cache.refusal(key('key_a'));
    expect(refused?.code).toBe('spend_cap_exceeded');
    expect(refused?.status).toBe(402);
    expect(refused?.message).toMatch(/API key.*10 USD spent in 2026-11 \(UTC\) against a cap of 10 USD/);
    // No cap on key_b nor on prj_1: spend alone refuses nothing.
    expect(cache.refusal(key('key_b'))).toBeNull();
    // One atto-dollar under the project cap.
    expect(cache.refusal(key('key_c', 'prj_2'))).toBeNull();
    // A cap of 0 with nothing spent yet is reached.
    expect(cache.refusal(key('key_d', 'prj_9', 'org_3'))?.message).toMatch(/organization/);
    expect(state.spendCalls.at(-1)).toEqual({ month: '2026-11', orgIds: ['org_1'] });
    await cache.stop();
  });

  it('asks for no spend while no cap exists', async () => {
    const { state, sources } = fakeSources();
    const cache = make(sources);
    await cache.start();
    await vi.advanceTimersByTimeAsync(REFRESH * 3);
    expect(state.spendCalls).toHaveLength(0);
    expect(cache.refusal(key('key_a'))).toBeNull();
    await cache.stop();
  });
});

describe('staleness bound', () => {
  it('a crossing or a cleared cap shows within one refresh, not before', async () => {
    const { state, sources } = fakeSources();
    state.caps = [cap('api_key', 'key_a', '10')];
    state.spend = new Map([['api_key:key_a', '9']]);
    const cache = make(sources);
    await cache.start();
    expect(cache.refusal(key('key_a'))).toBeNull();

    state.spend = new Map([['api_key:key_a', '12']]);
    await vi.advanceTimersByTimeAsync(REFRESH - 1);
    expect(cache.refusal(key('key_a'))).toBeNull();
    await vi.advanceTimersByTimeAsync(1);
    expect(cache.refusal(key('key_a'))).not.toBeNull();

    state.caps = [];
    await vi.advanceTimersByTimeAsync(REFRESH);
    expect(cache.refusal(key('key_a'))).toBeNull();
    await cache.stop();
  });
});

describe('a failing refresh', () => {
  it('keeps the last spend within the month: refusals stand, and cap changes still apply', async () => {
    const { state, sources } = fakeSources();
    state.caps = [cap('api_key', 'key_a', '10'), cap('api_key', 'key_b', '10')];
    state.spend = new Map([
      ['api_key:key_a', '11'],
      ['api_key:key_b', '3'],
    ]);
    const cache = make(sources);
    await cache.start();
    state.spend = new Error('analytics down');
    await vi.advanceTimersByTimeAsync(REFRESH);
    expect(errors).toEqual(['spend']);
    expect(cache.refusal(key('key_a'))).not.toBeNull();
    expect(cache.refusal(key('key_b'))).toBeNull();
    // Lowered while analytics is down: judged against the last known spend.
    state.caps = [cap('api_key', 'key_a', '10'), cap('api_key', 'key_b', '2')];
    await vi.advanceTimersByTimeAsync(REFRESH);
    expect(cache.refusal(key('key_b'))).not.toBeNull();
    expect(cache.status().lastError).toBeInstanceOf(Error);
    await cache.stop();
  });

  it('drops last month’s spend when the month turns (fails open) until a new snapshot arrives', async () => {
    const { state, sources } = fakeSources();
    now = new Date('2026-11-30T23:59:58Z');
    state.caps = [cap('api_key', 'key_a', '10')];
    state.spend = new Map([['api_key:key_a', '11']]);
    const cache = make(sources);
    await cache.start();
    expect(cache.refusal(key('key_a'))).not.toBeNull();
    state.spend = new Error('analytics down');
    now = new Date('2026-12-01T00:00:03Z');
    await vi.advanceTimersByTimeAsync(REFRESH);
    expect(cache.refusal(key('key_a'))).toBeNull();
    expect(cache.status().month).toBeNull();
    state.spend = new Map([['api_key:key_a', '10']]);
    await vi.advanceTimersByTimeAsync(REFRESH);
    expect(cache.refusal(key('key_a'))?.message).toMatch(/2026-12/);
    expect(state.spendCalls.at(-1)?.month).toBe('2026-12');
    await cache.stop();
  });

  it('keeps the last caps when the read model cannot be read', async () => {
    const { state, sources } = fakeSources();
    state.caps = [cap('project', 'prj_1', '1')];
    state.spend = new Map([['project:prj_1', '1']]);
    const cache = make(sources);
    await cache.start();
    state.caps = new Error('postgres down');
    await vi.advanceTimersByTimeAsync(REFRESH);
    expect(errors).toEqual(['caps']);
    expect(cache.refusal(key('key_x', 'prj_1'))).not.toBeNull();
    await cache.stop();
  });

  it('fails open when nothing was ever read, and starts anyway', async () => {
    const { state, sources } = fakeSources();
    state.caps = [cap('api_key', 'key_a', '0')];
    state.spend = new Error('analytics down');
    const cache = make(sources);
    await cache.start();
    expect(cache.refusal(key('key_a'))).toBeNull();
    state.spend = new Map();
    await vi.advanceTimersByTimeAsync(REFRESH);
    expect(cache.refusal(key('key_a'))).not.toBeNull();
    await cache.stop();
  });
});
