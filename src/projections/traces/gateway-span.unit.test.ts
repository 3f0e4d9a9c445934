import { describe, expect, it } from 'vitest';
import { sampleDraft } from '../../../test/fixtures/envelopes/envelopes.fixtures.js';
import { buildRequestRecord } from '../../events/envelopes/record.js';
import { requestCompletedSchema } from '../../events/envelopes/request-completed.js';
import type { TraceArtifactRecord, TraceSpanRecord } from '../../traces/model.js';
import { gatewaySpanRecords } from './gateway-span.js';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '1111111111111111';
const P = '00f067aa0ba902b7';
const PROMPT = 'the secret prompt zq9';

const envelopeWith = (full: boolean, traced = true) => {
  const draft = sampleDraft({
    session_id: 'sess-1',
    trace: traced
      ? { full_tracing: full, source: full ? 'header' : 'none', trace_id: T, span_id: S, parent_span_id: P }
      : { full_tracing: full, source: full ? 'header' : 'none' },
  });
  const { envelope } = buildRequestRecord(
    draft,
    full
      ? { request: JSON.stringify({ messages: [{ role: 'user', content: PROMPT }] }), response: '{"ok":1}' }
      : {},
  );
  // What the ingest worker sees: the envelope as the schema reads it off the bus.
  return requestCompletedSchema.parse(JSON.parse(JSON.stringify(envelope)));
};

describe('SPEC 4.3, 2.1: the gateway LLM span of a traced request', () => {
  it('joins the caller trace under its span, with request_id, model, tokens and cost promoted', () => {
    const e = envelopeWith(false);
    const records = gatewaySpanRecords(e);
    const span = records.find((r) => r.record === 'span') as TraceSpanRecord;
    expect(span).toMatchObject({
      trace_id: T,
      span_id: S,
      parent_span_id: P,
      request_id: e.request_id,
      org_id: e.org_id,
      session_id: 'sess-1',
      openinference_span_kind: 'LLM',
      source: 'gateway',
      prompt_tokens: e.usage.prompt_tokens,
      completion_tokens: e.usage.completion_tokens,
      cost_total: e.total_cost_usd,
      payload_state: 'summary_only',
    });
    expect(span.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    expect(
      records.filter((r) => r.record === 'event').map((r) => (r as { event_name: string }).event_name),
    ).toContain('trace.span.ended');
    // Stable ids: the same envelope delivered again writes the same rows.
    expect(JSON.stringify(gatewaySpanRecords(e))).toBe(JSON.stringify(records));
  });

  it('with full tracing the bodies are its artifacts by reference; without, no text and no key', () => {
    const on = gatewaySpanRecords(envelopeWith(true));
    const input = on.find((r) => r.record === 'artifact' && r.kind === 'input') as TraceArtifactRecord;
    expect(input.payload_state).toBe('full');
    expect(input.object_key).toMatch(/^request:req_[^:]+:req$/);
    expect(input.blake3_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(input.byte_count).toBeGreaterThan(0);
    expect(JSON.stringify(on)).not.toContain(PROMPT);
    const off = gatewaySpanRecords(envelopeWith(false));
    for (const a of off.filter((r) => r.record === 'artifact') as TraceArtifactRecord[])
      expect(a).toMatchObject({ payload_state: 'summary_only', object_key: '', blake3_hash: '' });
  });

  it('a request of no trace has no span', () => {
    expect(gatewaySpanRecords(envelopeWith(false, false))).toEqual([]);
  });
});
