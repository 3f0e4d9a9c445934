import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

// Configuration is read once and a bad value stops with a message naming the variable;
// the query settings (SPEC 4.5, 8) are part of it like every other role's.

describe('loadConfig', () => {
  it('gives the query settings their defaults', () => {
    expect(loadConfig({})).toMatchObject({
      SVC_QUERY_EXPORT_MAX_ROWS: 100_000,
      SVC_QUERY_LIVE_POLL_MS: 1_000,
      SVC_QUERY_LIVE_HEARTBEAT_MS: 15_000,
    });
    expect(loadConfig({ SVC_QUERY_EXPORT_MAX_ROWS: '500' }).SVC_QUERY_EXPORT_MAX_ROWS).toBe(500);
  });

  it.each(['zero', '0', '-5', '1.5'])('refuses SVC_QUERY_EXPORT_MAX_ROWS=%s by name', (value) => {
    let error: unknown;
    try {
      loadConfig({ SVC_QUERY_EXPORT_MAX_ROWS: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(String((error as Error).message)).toContain('SVC_QUERY_EXPORT_MAX_ROWS');
  });

  it('chooses the serving heap by roles unless told (RSS)', () => {
    expect(loadConfig({}).SVC_HEAP).toBe('auto');
    expect(loadConfig({ SVC_HEAP: 'lean' }).SVC_HEAP).toBe('lean');
    expect(loadConfig({ SVC_HEAP: 'v8' }).SVC_HEAP).toBe('v8');
    expect(() => loadConfig({ SVC_HEAP: 'small' })).toThrow(/SVC_HEAP/);
  });
});
