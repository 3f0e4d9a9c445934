import { describe, expect, it } from 'vitest';
import { sampleDraft } from '../../../test/fixtures/envelopes/envelopes.fixtures.js';
import type { BusMessage } from '../../events/bus.js';
import { blake3Hex } from '../../events/envelopes/body.js';
import { buildRequestRecord } from '../../events/envelopes/record.js';
import type { RequestCompleted } from '../../events/envelopes/request-completed.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { auditMessages, requestLoggedMessageId, requestLoggedRecord } from './audit.js';
import { classify, parseRequestSubject } from './decode.js';
import { Holding } from './holding.js';
import { buildPack, packKey } from './pack.js';
import { DurabilitySampler, durabilityStride } from './readback.js';
import { costLineRows, requestRow, usageLineRows } from './rows.js';

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const envelopeOf = (overrides: Parameters<typeof sampleDraft>[0] = {}, bodies = {}) =>
  buildRequestRecord(sampleDraft(overrides), bodies);
const subjectOf = (e: RequestCompleted) => `svc.requests.${e.org_id}.${e.request_id}`;
const stamp = { batchId: 'batch_1', ingestedAt: new Date('2025-06-01T12:00:02.000Z') };

const message = (subject: string, data: Uint8Array | string, deliveryCount = 1): BusMessage => ({
  subject,
  data: typeof data === 'string' ? new TextEncoder().encode(data) : data,
  messageId: subject,
  headers: {},
  deliveryCount,
  seq: 1,
  ack: async () => {},
  nak: async () => {},
  deadLetter: async () => {},
});

describe('classify', () => {
  it('tells envelopes, body chunks and foreign subjects apart', () => {
    expect(parseRequestSubject('svc.requests.org_a.req_1')).toEqual({
      orgId: 'org_a',
      requestId: 'req_1',
      chunk: null,
    });
    expect(parseRequestSubject('svc.requests.org_a.req_1.body.res.chunk.12')).toEqual({
      orgId: 'org_a',
      requestId: 'req_1',
      chunk: { side: 'res', n: 12 },
    });
    for (const s of [
      'svc.requests.org_a',
      'svc.requests.o.r.body.xyz.chunk.0',
      'svc.requests.o.r.body.req.chunk.01',
    ])
      expect(parseRequestSubject(s)).toBeNull();
  });

  it('parses a valid envelope and dead-letters bytes that are not JSON as invalid_event', () => {
    const { envelope } = envelopeOf();
    expect(classify(subjectOf(envelope), encode(envelope))).toMatchObject({ kind: 'envelope' });
    expect(classify('svc.requests.org_a.req_01', new Uint8Array([0xc3, 0x28]))).toMatchObject({
      kind: 'dead',
      reason: 'invalid_event',
      requestId: 'req_01',
    });
    expect(classify('svc.requests.org_a.req_01', new TextEncoder().encode('{"truncated":'))).toMatchObject({
      reason: 'invalid_event',
    });
  });

  it('refuses rows the tables cannot hold as malformed_row', () => {
    const { envelope } = envelopeOf();
    const cases: [string, unknown, string][] = [
      ['schema', { ...envelope, http_status: 99 }, 'http_status'],
      ['subject', { ...envelope, org_id: 'org_other' }, 'arrived on the subject'],
      ['magnitude', { ...envelope, total_cost_usd: '1'.repeat(21) }, 'Decimal(38, 18)'],
      ['scale', { ...envelope, total_cost_usd: '0.0000000000000000001' }, 'significant decimal places'],
      ['token', { ...envelope, workspace_id: 'ws.a' }, 'workspace id'],
    ];
    for (const [what, value, detail] of cases) {
      const subject = what === 'subject' ? 'svc.requests.org_a.req_01' : subjectOf(envelope);
      const result = classify(subject, encode(value));
      expect(result, what).toMatchObject({ kind: 'dead', reason: 'malformed_row' });
      expect(result.kind === 'dead' && result.detail, what).toContain(detail);
    }
  });

  it('keeps the 18 decimal places of money exactly', () => {
    const { envelope } = envelopeOf();
    const exact = { ...envelope, total_cost_usd: '99999999999999999999.999999999999999999' };
    expect(classify(subjectOf(envelope), encode(exact))).toMatchObject({ kind: 'envelope' });
  });
});

describe('rows', () => {
  it('maps an envelope onto the request row with exact money and nullable counters', () => {
    const { envelope } = envelopeOf();
    const row = requestRow(envelope, {}, stamp);
    expect(row).toMatchObject({
      request_id: 'req_01',
      provider: 'openai',
      billing_status: 'priced',
      billing_reason: null,
      total_cost_usd: envelope.total_cost_usd,
      reasoning_tokens: 40,
      audio_input_marker: 'not_reported',
      audio_input_tokens: null,
      tool_call_count: 2,
      attempt_count: 2,
      req_body_pack: '',
      batch_id: 'batch_1',
    });
    expect(JSON.parse(row.attempts as string)).toEqual(envelope.attempts);
  });

  it('writes one row per line with its index and the rate-card provenance', () => {
    const { envelope } = envelopeOf();
    expect(usageLineRows(envelope, stamp).map((r) => [r.line_index, r.meter, r.quantity])).toEqual([
      [0, 'input_token', 1000],
      [1, 'cache_read_token', 200],
      [2, 'output_token', 300],
    ]);
    const cost = costLineRows(envelope, stamp);
    expect(cost).toHaveLength(envelope.cost_lines.length);
    cost.forEach((r, i) => {
      const line = envelope.cost_lines[i]!;
      expect(r).toMatchObject({ line_index: i, unit_price: line.unit_price, amount: line.amount });
      expect(r.provenance_source).toBe('rate_card');
      expect(r.rate_card_id).toBe('audio-card');
      expect(r.zero_rated_rule).toBeNull();
    });
  });
});

describe('body packs', () => {
  it('addresses each frame payload by exact range after its header', () => {
    const frames = [
      {
        requestId: 'req_1',
        side: 'req' as const,
        bytes: Buffer.from('hello'),
        blake3: blake3Hex(Buffer.from('hello')),
      },
      {
        requestId: 'req_2',
        side: 'res' as const,
        bytes: Buffer.from('world!'),
        blake3: blake3Hex(Buffer.from('world!')),
      },
    ];
    const key = packKey('batch_x', new Date('2025-03-04T23:59:59Z'));
    expect(key).toBe('packs/2025/03/04/batch_x.pack');
    const pack = buildPack(key, frames);
    pack.stored.forEach((s, i) => {
      const slice = pack.data.subarray(s.offset, s.offset + s.length);
      expect(slice.equals(frames[i]!.bytes)).toBe(true);
      expect(blake3Hex(slice)).toBe(s.blake3);
      expect(s.byteCount).toBe(frames[i]!.bytes.byteLength);
    });
    expect(pack.data.subarray(0, pack.stored[0]!.offset).toString()).toBe(
      `SVCF1 req_1 req 5 ${frames[0]!.blake3}\n`,
    );
  });
});

describe('durability read-back sampling (SPEC 8)', () => {
  it('defaults to 1, treats 0 as 1 and falls back on anything unparsable', () => {
    expect(durabilityStride(undefined)).toBe(1);
    expect(durabilityStride(0)).toBe(1);
    expect(durabilityStride('0')).toBe(1);
    expect(durabilityStride('abc')).toBe(1);
    expect(durabilityStride(-3)).toBe(1);
    expect(durabilityStride(2.5)).toBe(1);
    expect(durabilityStride('4')).toBe(4);
  });

  it('reads back the first flush and then every stride-th', () => {
    const sampler = new DurabilitySampler(3);
    expect(Array.from({ length: 7 }, () => sampler.next())).toEqual([
      true,
      false,
      false,
      true,
      false,
      false,
      true,
    ]);
    const every = new DurabilitySampler(1);
    expect([every.next(), every.next()]).toEqual([true, true]);
  });
});

describe('audit event data.write.request_logged', () => {
  it('is the same canonical bytes for every delivery and carries no payload', () => {
    const { envelope } = envelopeOf({}, { request: 'secret prompt text', response: 'secret reply text' });
    const first = canonicalJson(requestLoggedRecord(envelope));
    expect(canonicalJson(requestLoggedRecord(structuredClone(envelope)))).toBe(first);
    expect(first).not.toContain('secret');
    expect(requestLoggedRecord(envelope)).toMatchObject({
      tenant_id: 'wsp_a',
      action: 'data.write.request_logged',
      target: { type: 'request', id: 'req_01' },
      occurred_at: envelope.finished_at,
    });
    expect(requestLoggedMessageId('req_01')).toBe('audit:data.write.request_logged:req_01');
  });

  it('carries the failure code and the attempt trail, without upstream message text (SPEC 7.5)', () => {
    const { envelope } = envelopeOf({
      status: 'error',
      http_status: 502,
      error: { type: 'upstream_error', code: 'AccessDeniedException' },
      provider: 'bedrock',
      attempts: [
        {
          source: 'bedrock/ep_b',
          kind: 'UpstreamStatus',
          status_code: 403,
          message: 'You do not have access to the model: secret prompt echo',
          provider: 'bedrock',
          endpoint_id: 'ep_b',
          latency_ms: 12,
          outcome: 'failed',
        },
      ],
    });
    const record = requestLoggedRecord(envelope);
    expect(record.details).toMatchObject({
      status: 'error',
      http_status: 502,
      error_type: 'upstream_error',
      error_code: 'AccessDeniedException',
      attempt_count: 1,
    });
    expect(record.attempts).toEqual([
      {
        provider: 'bedrock',
        endpoint_id: 'ep_b',
        status_code: 403,
        kind: 'UpstreamStatus',
        outcome: 'failed',
      },
    ]);
    expect(canonicalJson(record)).not.toContain('secret prompt echo');
    const served = requestLoggedRecord(envelopeOf().envelope);
    expect(served.details).toMatchObject({ error_type: null, error_code: null, attempt_count: 2 });
    expect(served.attempts.map((a) => a.outcome)).toEqual(['fell_back', 'success']);
  });

  it('messages are built per envelope: one whose tenant id is no subject token is set apart, the others kept', () => {
    const good = envelopeOf({ request_id: 'req_good' }).envelope;
    const dotted = envelopeOf({ request_id: 'req_dot', workspace_id: 'wsp.a' }).envelope;
    const { messages, invalid } = auditMessages([good, dotted]);
    expect(messages.map((m) => [m.requestId, m.message.messageId])).toEqual([
      ['req_good', requestLoggedMessageId('req_good')],
    ]);
    expect([...invalid.keys()]).toEqual(['req_dot']);
  });

  it('a policy denial has a policy.denied event of its own beside request_logged (SPEC 1.9)', () => {
    const denied = envelopeOf({
      request_id: 'req_denied',
      status: 'error',
      http_status: 403,
      error: { type: 'permission_error', code: 'policy_denied' },
      attempts: [],
      policy: { version: 'org:org_a@2,api_key:key_a@1', decision: 'model_not_allowed' },
    }).envelope;
    const served = envelopeOf({ request_id: 'req_ok' }).envelope;
    const { messages } = auditMessages([denied, served]);
    expect(messages.map((m) => [m.requestId, m.message.messageId])).toEqual([
      ['req_denied', requestLoggedMessageId('req_denied')],
      ['req_denied', 'audit:policy.denied:req_denied'],
      ['req_ok', requestLoggedMessageId('req_ok')],
    ]);
    expect(JSON.parse(String(messages[1]!.message.data))).toMatchObject({
      event_id: 'policy_denied:req_denied',
      action: 'policy.denied',
      target: { type: 'request', id: 'req_denied' },
      details: {
        decision: 'model_not_allowed',
        policy_version: 'org:org_a@2,api_key:key_a@1',
        http_status: 403,
      },
    });
    expect(String(messages[1]!.message.data)).toBe(
      String(auditMessages([structuredClone(denied)]).messages[1]!.message.data),
    );
  });
});

describe('holding', () => {
  const big = Buffer.alloc(300_000, 7);

  it('is ready once every chunk is in, whichever arrives first', () => {
    const { envelope, record } = envelopeOf({}, { response: big });
    const chunks = record.messages.slice(0, -1);
    expect(chunks).toHaveLength(2);
    const h = new Holding();
    h.holdChunk('req_01', 'res', 1, message(chunks[1]!.subject, chunks[1]!.data as Uint8Array), 0);
    h.holdEnvelope(envelope, message(subjectOf(envelope), 'x'), 0);
    expect(h.ready.has('req_01')).toBe(false);
    expect(h.missingSides('req_01')).toEqual(['res']);
    h.holdChunk('req_01', 'res', 0, message(chunks[0]!.subject, chunks[0]!.data as Uint8Array), 0);
    expect(h.ready.has('req_01')).toBe(true);
    expect(Buffer.concat(h.chunkData('req_01', 'res', 2)!).equals(big)).toBe(true);
    expect(h.release('req_01').chunks).toHaveLength(2);
    expect(h.size).toBe(0);
  });

  it('is ready without chunks when an earlier delivery already packed that body', () => {
    const { envelope } = envelopeOf({}, { response: big });
    const h = new Holding();
    h.holdEnvelope(envelope, message(subjectOf(envelope), 'x', 2), 0);
    expect(h.ready.has('req_01')).toBe(false);
    const ref = envelope.bodies!.response!;
    h.envelopes.get('req_01')!.reused = {
      res: {
        pack: 'packs/p',
        offset: 10,
        length: ref.byte_count,
        byteCount: ref.byte_count,
        blake3: ref.blake3,
      },
    };
    h.recheck('req_01');
    expect(h.ready.has('req_01')).toBe(true);
  });
});
