import { describe, expect, it } from 'vitest';
import { sampleDraft } from '../../../test/fixtures/envelopes/envelopes.fixtures.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { buildRequestRecord } from './record.js';
import { type RequestCompleted, requestCompletedSchema } from './request-completed.js';

const text = (data: Uint8Array | string) =>
  typeof data === 'string' ? data : new TextDecoder().decode(data);

describe('request.completed envelope', () => {
  it('round-trips through its wire bytes and the schema unchanged', () => {
    const { envelope, record } = buildRequestRecord(sampleDraft(), { request: '{"model":"gpt-x"}' });
    const wire = record.messages.at(-1)!;
    const parsed = requestCompletedSchema.parse(JSON.parse(text(wire.data)));
    expect(parsed).toEqual(JSON.parse(JSON.stringify(envelope)));
    expect(canonicalJson(parsed)).toBe(canonicalJson(JSON.parse(text(wire.data))));
    expect(parsed.schema_version).toBe(1);
    expect(parsed.cost_lines.length).toBeGreaterThan(0);
    expect(parsed.cost_lines[0]?.provenance).toMatchObject({
      source: 'rate_card',
      rate_card_id: 'audio-card',
    });
    expect(parsed.billing).toEqual({ status: 'priced', rate_card_id: 'audio-card' });
    expect(parsed.usage).toMatchObject({
      reasoning_tokens: 40,
      audio_input_marker: 'not_reported',
      has_audio: false,
    });
  });

  it('carries the pricing engine total as an exact decimal string', () => {
    const { envelope } = buildRequestRecord(sampleDraft());
    // 1000 x 0.000003 + 200 x 0.0000003 + 300 x 0.000015
    expect(envelope.total_cost_usd).toBe('0.00756');
    expect(requestCompletedSchema.safeParse({ ...envelope, total_cost_usd: 0.00756 }).success).toBe(false);
    expect(requestCompletedSchema.safeParse({ ...envelope, total_cost_usd: '7.56e-3' }).success).toBe(false);
  });

  it('strips bodies unless full tracing is on, and refuses an envelope that carries them anyway', () => {
    const off = sampleDraft({ trace: { full_tracing: false, source: 'none' } });
    const { envelope, record } = buildRequestRecord(off, {
      request: 'secret prompt',
      response: 'secret reply',
    });
    expect(envelope.bodies).toBeUndefined();
    expect(record.messages).toHaveLength(1);
    expect(text(record.messages[0]!.data)).not.toContain('secret');
    const leaked: RequestCompleted = {
      ...envelope,
      bodies: { request: { encoding: 'utf8', data: 'x', byte_count: 1, blake3: '0'.repeat(64) } },
    };
    expect(requestCompletedSchema.safeParse(leaked).success).toBe(false);
  });

  it('requires an error on a failed request and ms-precision RFC 3339 instants', () => {
    const base = buildRequestRecord(sampleDraft()).envelope;
    expect(requestCompletedSchema.safeParse({ ...base, status: 'error', http_status: 502 }).success).toBe(
      false,
    );
    const failed = {
      ...base,
      status: 'error',
      http_status: 502,
      error: { type: 'upstream_error', code: 'upstream_error' },
      billing: { status: 'failed', reason: 'no_rate_card', detail: 'no card for gpt-x', rate_card_id: null },
      cost_lines: [],
      total_cost_usd: '0',
    };
    expect(requestCompletedSchema.safeParse(failed).success).toBe(true);
    expect(requestCompletedSchema.safeParse({ ...base, started_at: '2025-06-01T12:00:00Z' }).success).toBe(
      false,
    );
    expect(
      requestCompletedSchema.safeParse({ ...failed, billing: { status: 'failed', rate_card_id: null } })
        .success,
    ).toBe(false);
  });

  it('tolerates an additive field from a newer producer and drops it', () => {
    const { envelope } = buildRequestRecord(sampleDraft());
    const parsed = requestCompletedSchema.parse({ ...envelope, added_later: 1 });
    expect(parsed).not.toHaveProperty('added_later');
  });
});
