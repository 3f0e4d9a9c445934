import { describe, expect, it } from 'vitest';
import { AnalyticsError, type AnalyticsRow, type AnalyticsStore } from '../../analytics/port.js';
import type { Bus, BusMessage, MessageHandler } from '../../events/bus.js';
import { traceMessages } from '../../events/envelopes/trace-records.js';
import type { TraceSpanRecord } from '../../traces/model.js';
import { TraceProjector } from './projector.js';

const span = (spanId: string, org = 'org_a', over: Partial<TraceSpanRecord> = {}): TraceSpanRecord => ({
  record: 'span',
  trace_id: 'a'.repeat(32),
  span_id: spanId,
  parent_span_id: '',
  org_id: org,
  project_id: 'prj_a',
  session_id: '',
  request_id: '',
  span_name: 's',
  span_kind: 'internal',
  openinference_span_kind: '',
  service_name: 'x',
  source: 'trace-ingest',
  started_at: '2026-11-24T10:00:00.000000000Z',
  ended_at: '2026-11-24T10:00:01.000000000Z',
  duration_ms: 1000,
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
  ...over,
});

interface Settled {
  acked: boolean;
  naked: boolean;
  dead: string | null;
}

const message = (subject: string, data: string, deliveryCount = 1): BusMessage & { settled: Settled } => {
  const settled: Settled = { acked: false, naked: false, dead: null };
  return {
    subject,
    data: Buffer.from(data),
    messageId: subject,
    headers: {},
    deliveryCount,
    seq: 1,
    settled,
    ack: async () => {
      settled.acked = true;
    },
    nak: async () => {
      settled.naked = true;
    },
    deadLetter: async (reason: string) => {
      settled.dead = reason;
    },
  };
};

const harness = (insert: (table: string, rows: readonly AnalyticsRow[]) => Promise<void>) => {
  let handler: MessageHandler | null = null;
  const bus = {
    consume: async (_n: string, _f: string, h: MessageHandler) => {
      handler = h;
      return { name: 'trace-projector', close: async () => {} };
    },
  } as unknown as Bus;
  const analytics = { insert } as unknown as AnalyticsStore;
  const projector = new TraceProjector({
    bus,
    analytics,
    flushIntervalMs: 5,
    retry: { attempts: 2, initialMs: 1, maxMs: 1 },
    maxDeliveries: 3,
  });
  return {
    projector,
    deliver: async (m: BusMessage) => {
      await handler!(m);
    },
    settle: () => projector.stop(),
  };
};

const of = (records: TraceSpanRecord[], deliveryCount = 1) => {
  const [m] = traceMessages('org_a', 'prj_a', 'a'.repeat(32), records);
  return message(m!.subject, m!.data, deliveryCount);
};

describe('SPEC 4.3, 6: the trace projector acks only what is written', () => {
  it('writes the records of a batch, then acks them', async () => {
    const written: string[] = [];
    const h = harness(async (table, rows) => {
      written.push(...rows.map((r) => `${table}:${String(r.span_id)}:${typeof r.version}`));
    });
    await h.projector.start();
    const a = of([span('1'.repeat(16))]);
    const b = of([span('2'.repeat(16))]);
    await h.deliver(a);
    await h.deliver(b);
    await h.settle();
    expect(written).toEqual([`trace_spans:${'1'.repeat(16)}:number`, `trace_spans:${'2'.repeat(16)}:number`]);
    expect(a.settled.acked && b.settled.acked).toBe(true);
  });

  it('dead-letters at once what cannot be read or names another tenant than its subject', async () => {
    const h = harness(async () => {});
    await h.projector.start();
    const junk = message(`svc.traces.org_a.${'a'.repeat(32)}.x`, 'not json');
    const good = of([span('1'.repeat(16))]);
    const forged = message(good.subject.replace('org_a', 'org_b'), Buffer.from(good.data).toString());
    await h.deliver(junk);
    await h.deliver(forged);
    await h.settle();
    expect(junk.settled.dead).toBe('invalid_event');
    expect(forged.settled.dead).toBe('invalid_event');
  });

  it('leaves a batch for redelivery while the store is away, and dead-letters it on its last delivery', async () => {
    const h = harness(async () => {
      throw new AnalyticsError('unavailable', 'down');
    });
    await h.projector.start();
    const early = of([span('1'.repeat(16))], 1);
    const last = of([span('2'.repeat(16))], 3);
    await h.deliver(early);
    await h.deliver(last);
    await h.settle();
    expect(early.settled).toEqual({ acked: false, naked: true, dead: null });
    expect(last.settled.dead).toBe('insert_exhausted');
    expect(h.projector.lastError).toBeInstanceOf(AnalyticsError);
  });

  it('writes each message alone when the store refuses the batch as it is, so one cannot hold back the rest', async () => {
    const h = harness(async (_t, rows) => {
      if (rows.some((r) => r.span_name === 'refused'))
        throw new AnalyticsError('server', 'Cannot parse', { retryable: false });
    });
    await h.projector.start();
    const good = of([span('1'.repeat(16))]);
    const bad = of([span('2'.repeat(16), 'org_a', { span_name: 'refused' })]);
    await h.deliver(good);
    await h.deliver(bad);
    await h.settle();
    expect(good.settled.acked).toBe(true);
    expect(bad.settled).toEqual({ acked: false, naked: false, dead: 'malformed_row' });
  });
});
