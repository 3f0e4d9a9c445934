import { describe, expect, it } from 'vitest';
import type { SpanNode, TraceTree } from '../../query/traces.js';
import { queryTarget } from './traces.js';
import { formatDuration, renderSessionTraces, renderTree } from './traces-render.js';

const span = (p: Partial<SpanNode> & Pick<SpanNode, 'span_id' | 'span_name'>): SpanNode => ({
  trace_id: 't1',
  parent_span_id: '',
  openinference_span_kind: 'CHAIN',
  span_kind: 'internal',
  status: 'ok',
  status_message: '',
  started_at: '2025-06-01T10:00:00.000000000Z',
  ended_at: '2025-06-01T10:00:01.000000000Z',
  duration_ms: 1000,
  request_id: '',
  payload_state: 'summary_only',
  model_name: '',
  provider: '',
  prompt_tokens: null,
  completion_tokens: null,
  cost_total: '',
  tool_name: '',
  attributes: {},
  events: [],
  artifacts: [],
  request: null,
  ...p,
});

const tree = (spans: SpanNode[], roots: string[], extra: Partial<TraceTree> = {}): TraceTree => ({
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  org_id: 'org_1',
  spans,
  span_count: spans.length,
  started_at: '2025-06-01T10:00:00.000000000Z',
  ended_at: '2025-06-01T10:00:03.000000000Z',
  root_span_ids: roots,
  full_trace_available: false,
  truncated: false,
  ...extra,
});

describe('svc traces tree rendering', () => {
  it('draws the agent tree with kinds, statuses, durations and the LLM request metadata', () => {
    const text = renderTree(
      tree(
        [
          span({ span_id: 'a', span_name: 'agent.run', openinference_span_kind: 'AGENT', duration_ms: 3000 }),
          span({ span_id: 'c', parent_span_id: 'a', span_name: 'chain.plan', duration_ms: 2890 }),
          span({
            span_id: 'l',
            parent_span_id: 'c',
            span_name: 'svc.gateway /v1/chat/completions',
            openinference_span_kind: 'LLM',
            duration_ms: 900,
            model_name: 'span-model',
            request_id: 'req_1',
            request: {
              request_id: 'req_1',
              model_served: 'gpt-4o-mini',
              provider: 'openai',
              prompt_tokens: 120,
              completion_tokens: 45,
              total_cost_usd: '0.001234567890123456',
              http_status: 200,
            },
          }),
          span({
            span_id: 't',
            parent_span_id: 'c',
            span_name: 'tool.search',
            openinference_span_kind: 'TOOL',
            tool_name: 'web_search',
            duration_ms: 200,
          }),
          span({
            span_id: 'r',
            parent_span_id: 'c',
            span_name: 'retriever.docs',
            openinference_span_kind: 'RETRIEVER',
            status: 'error',
            status_message: 'index unavailable',
            duration_ms: 30.25,
          }),
          span({
            span_id: 'x',
            parent_span_id: 'a',
            span_name: 'agent.reply',
            status: 'pending',
            duration_ms: 0,
          }),
        ],
        ['a'],
        { full_trace_available: true },
      ),
    );
    expect(text).toBe(
      [
        'trace 4bf92f3577b34da6a3ce929d0e0e4736  6 spans  3.000 s  2025-06-01T10:00:00.000000000Z  (full payloads captured)',
        'agent.run  AGENT  ok  3.000 s',
        '├─ chain.plan  CHAIN  ok  2.890 s',
        '│  ├─ svc.gateway /v1/chat/completions  LLM  ok  900 ms  gpt-4o-mini (openai)  tokens 120 in / 45 out  0.001234567890123456 USD  HTTP 200',
        '│  ├─ tool.search  TOOL  ok  200 ms  tool web_search',
        '│  └─ retriever.docs  RETRIEVER  error  30.3 ms  "index unavailable"',
        '└─ agent.reply  CHAIN  pending  running',
      ].join('\n'),
    );
  });

  it("falls back to the span's own LLM fields, roots orphans, and survives a parent cycle", () => {
    const text = renderTree(
      tree(
        [
          span({
            span_id: 'l',
            span_name: 'openai.chat',
            openinference_span_kind: 'LLM',
            parent_span_id: 'gone',
            model_name: 'claude-sonnet-4',
            prompt_tokens: 10,
            completion_tokens: null,
            cost_total: '0.5',
            duration_ms: 12_345,
          }),
          span({ span_id: 'p', parent_span_id: 'q', span_name: 'loop.p' }),
          span({ span_id: 'q', parent_span_id: 'p', span_name: 'loop.q' }),
        ],
        ['l'],
        { truncated: true },
      ),
    );
    expect(text.split('\n')).toEqual([
      'trace 4bf92f3577b34da6a3ce929d0e0e4736  3 spans  3.000 s  2025-06-01T10:00:00.000000000Z  (only the first 3 spans shown)',
      'openai.chat  LLM  ok  12.3 s  claude-sonnet-4  tokens 10 in / ? out  0.5 USD',
      'loop.p  CHAIN  ok  1.000 s',
      '└─ loop.q  CHAIN  ok  1.000 s',
    ]);
  });

  it('formats durations', () => {
    expect([0, 0.42, 999.96, 1000, 9999, 10_000, 125_000].map(formatDuration)).toEqual([
      '0 ms',
      '0.4 ms',
      '1.000 s',
      '1.000 s',
      '9.999 s',
      '10.0 s',
      '125.0 s',
    ]);
  });
});

describe('svc traces session rendering', () => {
  it('lists the page with a pointer to the next one', () => {
    const text = renderSessionTraces('ses_1', {
      data: [
        {
          trace_id: 't1',
          span_count: 5,
          started_at: '2025-06-01T10:00:00.000000000Z',
          ended_at: '2025-06-01T10:00:03.000000000Z',
          root_span_name: 'agent.run',
          request_ids: ['req_1', 'req_2'],
          full_trace_available: true,
        },
      ],
      total: 3,
      limit: 1,
      offset: 0,
      has_more: true,
    });
    expect(text.split('\n')).toEqual([
      'trace_id  started_at                      span_count  root_span_name  request_ids  full',
      '--------  ------------------------------  ----------  --------------  -----------  ----',
      't1        2025-06-01T10:00:00.000000000Z  5           agent.run       req_1,req_2  yes',
      'traces 1-1 of 3 (next: --offset 1)',
    ]);
    expect(renderSessionTraces('ses_2', { data: [], total: 0, limit: 50, offset: 0, has_more: false })).toBe(
      'no traces in session ses_2',
    );
  });
});

describe('svc traces target', () => {
  it('takes flags over the environment, and trims the URL', () => {
    expect(queryTarget({ url: 'http://q:1/', token: 'svc_dev_x' }, {})).toEqual({
      url: 'http://q:1',
      token: 'svc_dev_x',
    });
    expect(queryTarget({}, { SVC_QUERY_URL: 'https://q.example', SVC_DEVELOPER_TOKEN: 'svc_dev_y' })).toEqual(
      {
        url: 'https://q.example',
        token: 'svc_dev_y',
      },
    );
  });
});
