import { describe, expect, it } from 'vitest';
import type { TraceEventRecord } from '../../traces/model.js';
import { decodeTraceMessage, TRACE_MESSAGE_MAX_BYTES, traceMessages } from './trace-records.js';

const event = (i: number, org = 'org_a', trace = 'a'.repeat(32), bytes = 10): TraceEventRecord => ({
  record: 'event',
  event_id: `e${i}`,
  trace_id: trace,
  span_id: 'b'.repeat(16),
  org_id: org,
  project_id: 'prj_a',
  session_id: '',
  event_name: 'trace.event',
  occurred_at: '2026-11-24T10:00:00.000000000Z',
  level: '',
  message: 'x'.repeat(bytes),
  attributes_json: '{}',
  artifact_ref: '',
});

describe('SPEC 6 svc.traces.<org_id>.<trace_id>.<event_id>', () => {
  it('one message per trace, its id stable for the same records and new for changed ones', () => {
    const [m] = traceMessages('org_a', 'prj_a', 'a'.repeat(32), [event(1), event(2)]);
    expect(m!.subject).toMatch(new RegExp(`^svc\\.traces\\.org_a\\.${'a'.repeat(32)}\\.[0-9a-f]{32}$`));
    expect(m!.messageId).toBe(`trace:${m!.subject.split('.').at(-1)}`);
    const [again] = traceMessages('org_a', 'prj_a', 'a'.repeat(32), [event(1), event(2)]);
    expect(again!.messageId).toBe(m!.messageId);
    const changed = { ...event(2), message: 'other' };
    expect(traceMessages('org_a', 'prj_a', 'a'.repeat(32), [event(1), changed])[0]!.messageId).not.toBe(
      m!.messageId,
    );
    const decoded = decodeTraceMessage(Buffer.from(m!.data));
    expect(decoded.ok && decoded.message.records).toHaveLength(2);
  });

  it('cuts a large trace into messages under the bound', () => {
    const records = Array.from({ length: 40 }, (_, i) => event(i, 'org_a', 'a'.repeat(32), 50_000));
    const messages = traceMessages('org_a', 'prj_a', 'a'.repeat(32), records);
    expect(messages.length).toBeGreaterThan(1);
    for (const m of messages) expect(Buffer.byteLength(m.data)).toBeLessThanOrEqual(TRACE_MESSAGE_MAX_BYTES);
    const total = messages.reduce((n, m) => {
      const d = decodeTraceMessage(Buffer.from(m.data));
      return n + (d.ok ? d.message.records.length : 0);
    }, 0);
    expect(total).toBe(40);
    expect(new Set(messages.map((m) => m.messageId)).size).toBe(messages.length);
  });

  it('measures messages in UTF-8 bytes, as the bus does', () => {
    // 3-byte characters: 40 records of 20,000 characters are 2.4 MB though 0.8 M characters.
    const records = Array.from({ length: 40 }, (_, i) => ({ ...event(i), message: '語'.repeat(20_000) }));
    const messages = traceMessages('org_a', 'prj_a', 'a'.repeat(32), records);
    for (const m of messages) expect(Buffer.byteLength(m.data)).toBeLessThanOrEqual(TRACE_MESSAGE_MAX_BYTES);
  });

  it('refuses a message whose records name another tenant or trace, and anything unreadable', () => {
    const [m] = traceMessages('org_a', 'prj_a', 'a'.repeat(32), [event(1, 'org_b')]);
    expect(decodeTraceMessage(Buffer.from(m!.data))).toMatchObject({ ok: false });
    const [t] = traceMessages('org_a', 'prj_a', 'a'.repeat(32), [event(1, 'org_a', 'c'.repeat(32))]);
    expect(decodeTraceMessage(Buffer.from(t!.data))).toMatchObject({ ok: false });
    for (const bad of [
      '',
      'null',
      '[]',
      '{"schema_version":2}',
      '{"schema_version":1,"org_id":"o","project_id":"p","trace_id":"t","records":[{"record":"x"}]}',
    ])
      expect(decodeTraceMessage(Buffer.from(bad))).toMatchObject({ ok: false });
  });
});
