import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChdbAnalyticsStore } from '../../analytics/chdb/store.js';
import { migrateClickHouse } from '../../analytics/migrate.js';
import type { TraceSpanRecord } from '../../traces/model.js';
import { traceRows, writeTraceRows } from './write.js';

// SPEC 4.3, 6: the trace tables take whatever times clients send in one insert block (no
// partitioning by the client's months: more than a hundred of them refused the whole block, and
// with it every other tenant's records of the batch).

let dir: string;
let store: ChdbAnalyticsStore;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-trace-write-'));
  store = await ChdbAnalyticsStore.open({ path: join(dir, 'ch'), database: 'svc', createDatabase: true });
  await migrateClickHouse(store);
});
afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

const span = (i: number, startedAt: string): TraceSpanRecord => ({
  record: 'span',
  trace_id: 'a'.repeat(32),
  span_id: i.toString(16).padStart(16, '0'),
  parent_span_id: '',
  org_id: 'org_a',
  project_id: 'prj_a',
  session_id: '',
  request_id: '',
  span_name: 's',
  span_kind: 'internal',
  openinference_span_kind: '',
  service_name: 'x',
  source: 'trace-ingest',
  started_at: startedAt,
  ended_at: startedAt,
  duration_ms: 0,
  status: 'ok',
  status_message: '',
  attributes_json: '{}',
  payload_state: 'summary_only',
  model_name: '',
  provider: '',
  llm_system: '',
  prompt_tokens: null,
  completion_tokens: null,
  cost_total: '',
  tool_name: '',
  agent_name: '',
  user_id: '',
  classification: '',
  trace_source: '',
});

describe('trace tables', () => {
  it('store one insert block of spans spread over 150 months, with their nanoseconds', async () => {
    const spans = Array.from({ length: 150 }, (_, i) => {
      const d = new Date(Date.UTC(2000, i, 1));
      return span(i + 1, `${d.toISOString().slice(0, 19)}.123456789Z`);
    });
    await writeTraceRows(store, traceRows(spans, new Date()));
    const [row] = await store.query<{ n: string; first: string }>(
      "SELECT count() AS n, toString(min(started_at)) AS first FROM trace_spans WHERE org_id = 'org_a'",
    );
    expect(Number(row!.n)).toBe(150);
    expect(row!.first).toBe('2000-01-01 00:00:00.123456789');
  });
});
