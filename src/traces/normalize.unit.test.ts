import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blake3Hex } from '../lib/blake3.js';
import type {
  Attributes,
  OtlpExport,
  OtlpSpan,
  OtlpSpanEvent,
  TraceArtifactRecord,
  TraceEventRecord,
  TraceRecord,
  TraceSpanRecord,
} from './model.js';
import { type NormalizedExport, normalizeExport } from './normalize.js';
import { classifyKey } from './payload-keys.js';

const ORG = 'org_1';
const PROJECT = 'proj_1';
const TRACE = '0af7651916cd43dd8448eb211c80319c';
const T0 = 1_700_000_000_000_000_000n;
const MS = 1_000_000n;

const span = (id: string, over: Partial<OtlpSpan> = {}): OtlpSpan => ({
  traceId: TRACE,
  spanId: id,
  parentSpanId: '',
  traceState: '',
  name: `op ${id}`,
  kind: 1,
  startTimeUnixNano: T0,
  endTimeUnixNano: T0 + 5n * MS,
  attributes: {},
  events: [],
  links: [],
  status: { code: 1, message: '' },
  ...over,
});

const exportOf = (spans: OtlpSpan[], resource: Attributes = { 'service.name': 'agent-app' }): OtlpExport => ({
  resourceSpans: [
    {
      resource: { attributes: resource },
      scopeSpans: [{ scope: { name: 'scope-lib', version: '1', attributes: {} }, spans }],
    },
  ],
});

const run = (exp: OtlpExport, capture = false): NormalizedExport =>
  normalizeExport({
    export: exp,
    orgId: ORG,
    projectId: PROJECT,
    capture,
    source: 'trace-ingest',
  });

const all = (n: NormalizedExport): TraceRecord[] => [...n.traces.values()].flat();
const spans = (n: NormalizedExport) => all(n).filter((r): r is TraceSpanRecord => r.record === 'span');
const artifacts = (n: NormalizedExport) =>
  all(n).filter((r): r is TraceArtifactRecord => r.record === 'artifact');
const events = (n: NormalizedExport) => all(n).filter((r): r is TraceEventRecord => r.record === 'event');
const spanById = (n: NormalizedExport, id: string) => spans(n).find((s) => s.span_id === id)!;
const attrsOf = (s: { attributes_json: string }) => JSON.parse(s.attributes_json) as Record<string, unknown>;
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

const AGENT = 'a000000000000001';
const CHAIN = 'a000000000000002';
const LLM = 'a000000000000003';
const TOOL = 'a000000000000004';
const RETRIEVER = 'a000000000000005';

/** Every string that is payload in the trees below; none may appear in a record with capture off. */
const MARKERS = [
  'MARK_AGENT_INPUT',
  'MARK_AGENT_OUTPUT',
  'MARK_CHAIN_INPUT',
  'MARK_SYSTEM_PROMPT',
  'MARK_USER_PROMPT',
  'MARK_COMPLETION',
  'MARK_CALL_ARGS',
  'MARK_TOOL_ARGS',
  'MARK_TOOL_RESULT',
  'MARK_QUERY',
  'MARK_DOC_ONE',
  'MARK_DOC_TWO',
  'MARK_IMAGE_URL',
  'MARK_TEMPLATE_VAR',
];

const openInferenceTree = (): OtlpExport =>
  exportOf([
    span(AGENT, {
      name: 'agent run',
      attributes: {
        'openinference.span.kind': 'AGENT',
        'agent.name': 'planner',
        'session.id': 'sess-42',
        'user.id': 'user-7',
        'input.value': 'Plan a trip: MARK_AGENT_INPUT',
        'output.value': 'Done: MARK_AGENT_OUTPUT',
        'svc.classification': 'internal',
        'svc.trace_source': 'sdk-py',
      },
    }),
    span(CHAIN, {
      parentSpanId: AGENT,
      attributes: {
        'openinference.span.kind': 'chain',
        'input.value': '{"question":"MARK_CHAIN_INPUT"}',
        'input.mime_type': 'application/json',
        'llm.prompt_template.variables': '{"city":"MARK_TEMPLATE_VAR"}',
      },
    }),
    span(LLM, {
      parentSpanId: CHAIN,
      kind: 3,
      attributes: {
        'openinference.span.kind': 'LLM',
        'llm.model_name': 'gpt-4o-2024-08-06',
        'llm.provider': 'openai',
        'llm.system': 'openai',
        'llm.token_count.prompt': 12,
        'llm.token_count.completion': '7',
        'llm.cost.total': 0.00042,
        'llm.invocation_parameters': '{"temperature":0}',
        'svc.request_id': 'req_123',
        'llm.input_messages.0.message.role': 'system',
        'llm.input_messages.0.message.content': 'MARK_SYSTEM_PROMPT',
        'llm.input_messages.1.message.role': 'user',
        'llm.input_messages.1.message.content': 'MARK_USER_PROMPT',
        'llm.input_messages.1.message.contents.1.message_content.image.image.url':
          'data:image/png;MARK_IMAGE_URL',
        'llm.output_messages.0.message.role': 'assistant',
        'llm.output_messages.0.message.content': 'MARK_COMPLETION',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.name': 'search',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments': '{"q":"MARK_CALL_ARGS"}',
      },
    }),
    span(TOOL, {
      parentSpanId: AGENT,
      status: { code: 2, message: 'tool timed out' },
      attributes: {
        'openinference.span.kind': 'TOOL',
        'tool.name': 'search',
        'tool.parameters': '{"type":"object","properties":{"q":{"type":"string"}}}',
        'tool_call.function.arguments': '{"q":"MARK_TOOL_ARGS"}',
        'tool.output': 'MARK_TOOL_RESULT',
      },
      events: [
        {
          name: 'exception',
          timeUnixNano: T0 + 4n * MS,
          attributes: { 'exception.type': 'TimeoutError', 'exception.message': 'tool timed out after 30s' },
        },
      ],
    }),
    span(RETRIEVER, {
      parentSpanId: AGENT,
      attributes: {
        'openinference.span.kind': 'RETRIEVER',
        'input.value': 'MARK_QUERY',
        'retrieval.documents.0.document.id': 'doc-1',
        'retrieval.documents.0.document.content': 'MARK_DOC_ONE',
        'retrieval.documents.0.document.score': 0.91,
        'retrieval.documents.1.document.id': 'doc-2',
        'retrieval.documents.1.document.content': 'MARK_DOC_TWO',
      },
    }),
  ]);

const message = (name: string, time: bigint, attributes: Attributes): OtlpSpanEvent => ({
  name,
  timeUnixNano: time,
  attributes,
});

const genAiTree = (): OtlpExport =>
  exportOf(
    [
      span(AGENT, {
        name: 'invoke_agent planner',
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'planner',
          'gen_ai.conversation.id': 'conv-9',
          'enduser.id': 'user-8',
          'gen_ai.input.messages': '[{"role":"user","parts":[{"type":"text","content":"MARK_AGENT_INPUT"}]}]',
          'gen_ai.output.messages':
            '[{"role":"assistant","parts":[{"type":"text","content":"MARK_AGENT_OUTPUT"}]}]',
        },
      }),
      span(LLM, {
        parentSpanId: AGENT,
        kind: 3,
        name: 'chat claude',
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'anthropic',
          'gen_ai.request.model': 'claude-sonnet',
          'gen_ai.response.model': 'claude-sonnet-20250101',
          'gen_ai.usage.input_tokens': 30,
          'gen_ai.usage.output_tokens': 4,
          'gen_ai.system_instructions': 'MARK_SYSTEM_PROMPT',
          'gen_ai.prompt.0.role': 'user',
          'gen_ai.prompt.0.content': 'MARK_CHAIN_INPUT',
          'gen_ai.completion.0.content': 'MARK_TEMPLATE_VAR',
        },
        events: [
          message('gen_ai.system.message', T0 + MS, {
            'gen_ai.system': 'anthropic',
            content: 'MARK_DOC_ONE',
          }),
          message('gen_ai.user.message', T0 + 2n * MS, {
            'gen_ai.system': 'anthropic',
            content: 'MARK_USER_PROMPT',
          }),
          message('gen_ai.choice', T0 + 3n * MS, {
            index: 0,
            finish_reason: 'tool_calls',
            'message.content': 'MARK_COMPLETION',
            'tool_calls.0.function.arguments': '{"q":"MARK_CALL_ARGS"}',
            'tool_calls.0.id': 'call_1',
          }),
        ],
      }),
      span(TOOL, {
        parentSpanId: AGENT,
        name: 'execute_tool search',
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'search',
          'gen_ai.tool.call.id': 'call_1',
          'gen_ai.tool.call.arguments': '{"q":"MARK_TOOL_ARGS"}',
          'gen_ai.tool.call.result': 'MARK_TOOL_RESULT MARK_DOC_TWO',
        },
        events: [
          message('gen_ai.tool.message', T0 + 4n * MS, { role: 'tool', content: 'MARK_QUERY', id: 'call_1' }),
        ],
      }),
      span(RETRIEVER, {
        parentSpanId: AGENT,
        name: 'embeddings',
        attributes: {
          'gen_ai.operation.name': 'embeddings',
          'gen_ai.request.model': 'text-embedding-3-small',
          'embedding.embeddings.0.embedding.text': 'MARK_IMAGE_URL',
          'embedding.embeddings.0.embedding.vector': [0.1, 0.2],
        },
      }),
    ],
    { 'service.name': 'genai-app', 'deployment.environment': 'test' },
  );

describe('SPEC 2.1-2.3: an OpenInference agent tree (AGENT > CHAIN > LLM, TOOL, RETRIEVER)', () => {
  it('keeps every span, its tree, its kinds and its promoted fields', () => {
    const n = run(openInferenceTree());
    expect(n.acceptedSpans).toBe(5);
    expect(n.rejectedSpans).toBe(0);
    expect([...n.traces.keys()]).toEqual([TRACE]);
    const byId = (id: string) => spanById(n, id);
    expect(byId(AGENT)).toMatchObject({
      parent_span_id: '',
      openinference_span_kind: 'AGENT',
      agent_name: 'planner',
      session_id: 'sess-42',
      user_id: 'user-7',
      classification: 'internal',
      trace_source: 'sdk-py',
      service_name: 'agent-app',
      source: 'trace-ingest',
      org_id: ORG,
      project_id: PROJECT,
      status: 'ok',
      duration_ms: 5,
    });
    expect(byId(CHAIN)).toMatchObject({ parent_span_id: AGENT, openinference_span_kind: 'CHAIN' });
    expect(byId(LLM)).toMatchObject({
      span_kind: 'client',
      openinference_span_kind: 'LLM',
      model_name: 'gpt-4o-2024-08-06',
      provider: 'openai',
      llm_system: 'openai',
      prompt_tokens: 12,
      completion_tokens: 7,
      cost_total: '0.00042',
      request_id: 'req_123',
    });
    expect(byId(TOOL)).toMatchObject({
      tool_name: 'search',
      status: 'error',
      status_message: 'tool timed out',
    });
    expect(byId(RETRIEVER).openinference_span_kind).toBe('RETRIEVER');
  });

  it('orders each span as: the span, its artifacts, then its events', () => {
    const n = run(openInferenceTree());
    const kinds = n.traces.get(TRACE)!.map((r) => r.record[0]);
    // AGENT: span, 2 artifacts, started, ended.
    expect(kinds.slice(0, 5).join('')).toBe('saaee');
  });

  it('turns each payload attribute (group) into one artifact of its kind', () => {
    const n = run(openInferenceTree());
    const of = (id: string) =>
      artifacts(n)
        .filter((a) => a.span_id === id)
        .map((a) => [
          a.kind,
          JSON.parse(a.redaction_metadata_json).attribute,
          JSON.parse(a.redaction_metadata_json).keys,
        ]);
    expect(of(AGENT)).toEqual([
      ['input', 'input.value', 1],
      ['output', 'output.value', 1],
    ]);
    expect(of(LLM)).toEqual([
      ['input', 'llm.input_messages', 4],
      ['image', 'llm.input_messages.1.message.contents.1.message_content.image.image.url', 1],
      ['output', 'llm.output_messages', 3],
      ['tool_arguments', 'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments', 1],
    ]);
    expect(of(TOOL)).toEqual([
      ['tool_arguments', 'tool_call.function.arguments', 1],
      ['tool_result', 'tool.output', 1],
    ]);
    expect(of(RETRIEVER)).toEqual([
      ['input', 'input.value', 1],
      ['retrieved_document', 'retrieval.documents', 5],
    ]);
    const chainInput = artifacts(n).find(
      (a) => a.span_id === CHAIN && a.kind === 'input' && a.mime_type !== 'text/plain',
    );
    expect(chainInput?.mime_type).toBe('application/json');
  });

  it('treats media content as payload, and operational attributes that merely mention images as metadata', () => {
    const n = run(
      exportOf([
        span(AGENT, {
          attributes: {
            'container.image.name': 'registry/app',
            'container.image.tags': ['v1'],
            'llm.input_messages.0.message.contents.0.message_content.image.image.url':
              'data:image/png;base64,AAAA',
            'llm.input_messages.0.message.audio.url': 'https://x/a.wav',
          },
        }),
      ]),
    );
    const attrs = attrsOf(spanById(n, AGENT));
    expect(attrs['container.image.name']).toBe('registry/app');
    expect(attrs['container.image.tags']).toEqual(['v1']);
    expect(JSON.stringify(all(n))).not.toContain('base64,AAAA');
    expect(
      artifacts(n)
        .map((a) => a.kind)
        .sort(),
    ).toEqual(['audio', 'image']);
  });

  it("finds payload under other spellings, nested in structured values, and under other instrumentations' names", () => {
    const secret = 'zz-private-text';
    const n = run(
      exportOf([
        span(AGENT, {
          attributes: {
            'INPUT.VALUE': `a ${secret}`,
            ' input.value': `b ${secret}`,
            'input.value\u0000': `c ${secret}`,
            'ｉnput.value': `d ${secret}`,
            input: { value: `e ${secret}` },
            metadata: { 'input.value': `f ${secret}`, note: 'kept?' },
            llm: { input_messages: [{ message: { content: `g ${secret}` } }] },
            'ai.prompt.messages': `h ${secret}`,
            'ai.toolCall.args': `i ${secret}`,
            'traceloop.entity.output': `j ${secret}`,
            'mlflow.spanInputs': `k ${secret}`,
            'llm.prompt_template.template': `l ${secret}`,
            prompt: `m ${secret}`,
            'input.mime_type': 'text/plain',
            'service.tier': 'kept',
          },
          events: [
            { timeUnixNano: 0n, name: 'GEN_AI.USER.MESSAGE ', attributes: { content: `n ${secret}` } },
          ],
        }),
      ]),
    );
    expect(JSON.stringify(all(n))).not.toContain(secret);
    const attrs = attrsOf(spanById(n, AGENT));
    expect(attrs['service.tier']).toBe('kept');
    expect(attrs['input.mime_type']).toBe('text/plain');
    expect(artifacts(n).length).toBeGreaterThanOrEqual(14);
  });

  it('bounds attributes_json so one record always fits a bus message, counting what it drops', () => {
    const attributes: Record<string, string> = {};
    for (let i = 0; i < 400; i++) attributes[`k${String(i).padStart(3, '0')}`] = '語'.repeat(8_000);
    const n = run(exportOf([span(AGENT, { attributes })]));
    const s = spanById(n, AGENT);
    expect(s.attributes_json.length).toBeLessThanOrEqual(64 * 1024);
    expect(Buffer.byteLength(JSON.stringify(s))).toBeLessThan(768 * 1024);
    const attrs = attrsOf(s);
    expect(attrs['svc.dropped_attributes']).toBeGreaterThan(0);
    expect(attrs.k000).toBe('語'.repeat(8_000));
  });

  it('refuses a span whose times a DateTime64(9) cannot hold (after 2262-04-11), counted', () => {
    const n = run(
      exportOf([span(AGENT, { startTimeUnixNano: 1n << 63n, endTimeUnixNano: (1n << 63n) + 1n })]),
    );
    expect(n.rejectedSpans).toBe(1);
    expect(n.acceptedSpans).toBe(0);
  });

  it('gives another project of the organization other artifact and event ids for the same span', () => {
    const exp = exportOf([span(AGENT, { attributes: { 'input.value': 'x' } })]);
    const a = normalizeExport({
      export: exp,
      orgId: ORG,
      projectId: 'p_a',
      capture: true,
      source: 'trace-ingest',
    });
    const b = normalizeExport({
      export: exp,
      orgId: ORG,
      projectId: 'p_b',
      capture: true,
      source: 'trace-ingest',
    });
    expect(artifacts(a)[0]!.artifact_id).not.toBe(artifacts(b)[0]!.artifact_id);
    expect(a.payloads[0]!.objectKey).not.toBe(b.payloads[0]!.objectKey);
    expect(events(a)[0]!.event_id).not.toBe(events(b)[0]!.event_id);
  });

  it('keeps convention metadata, the tool schema and the exception text in the attributes', () => {
    const n = run(openInferenceTree());
    expect(attrsOf(spanById(n, TOOL))).toMatchObject({
      'tool.name': 'search',
      'tool.parameters': '{"type":"object","properties":{"q":{"type":"string"}}}',
      'openinference.span.kind': 'TOOL',
      'resource.service.name': 'agent-app',
    });
    expect(attrsOf(spanById(n, CHAIN))['input.mime_type']).toBe('application/json');
    expect(attrsOf(spanById(n, LLM))['llm.invocation_parameters']).toBe('{"temperature":0}');
    const exception = events(n).find((e) => e.event_name === 'exception')!;
    expect(exception).toMatchObject({ level: 'error', message: 'tool timed out after 30s', span_id: TOOL });
    expect(attrsOf(exception)['exception.message']).toBe('tool timed out after 30s');
  });

  it('with capture off: no payload text in any record, no payloads, summary_only refs', () => {
    const n = run(openInferenceTree(), false);
    const dump = JSON.stringify(all(n));
    for (const m of MARKERS) expect(dump).not.toContain(m);
    expect(n.payloads).toEqual([]);
    for (const a of artifacts(n)) {
      expect(a).toMatchObject({ payload_state: 'summary_only', object_key: '', blake3_hash: '' });
      expect(a.byte_count).toBeGreaterThan(0);
      expect(JSON.parse(a.redaction_metadata_json).reason).toBe('capture_disabled');
    }
    for (const s of spans(n)) expect(s.payload_state).toBe('summary_only');
  });

  it('with capture on: the payload bytes hold the text and the hashes match', () => {
    const n = run(openInferenceTree(), true);
    const arts = artifacts(n);
    expect(n.payloads).toHaveLength(arts.length);
    const stored = n.payloads.map((p) => text(p.bytes)).join('\n');
    for (const m of MARKERS) expect(stored).toContain(m);
    for (const a of arts) {
      const p = n.payloads.find((x) => x.objectKey === a.object_key)!;
      expect(p.orgId).toBe(ORG);
      expect(a.object_key).toBe(
        `traces/${PROJECT}/${a.trace_id}/${a.span_id}/${a.artifact_id}.${a.blake3_hash.slice(0, 16)}`,
      );
      expect(a.blake3_hash).toBe(blake3Hex(p.bytes));
      expect(a.byte_count).toBe(p.bytes.length);
      expect(a).toMatchObject({ payload_state: 'full', compression: 'none' });
      expect(JSON.parse(a.redaction_metadata_json)).not.toHaveProperty('reason');
    }
    const input = arts.find((a) => a.span_id === LLM && a.kind === 'input')!;
    const bytes = n.payloads.find((p) => p.objectKey === input.object_key)!.bytes;
    expect(JSON.parse(text(bytes))).toEqual({
      'llm.input_messages.0.message.role': 'system',
      'llm.input_messages.0.message.content': 'MARK_SYSTEM_PROMPT',
      'llm.input_messages.1.message.role': 'user',
      'llm.input_messages.1.message.content': 'MARK_USER_PROMPT',
    });
    expect(input.mime_type).toBe('application/json');
    const agentIn = arts.find((a) => a.span_id === AGENT && a.kind === 'input')!;
    expect(text(n.payloads.find((p) => p.objectKey === agentIn.object_key)!.bytes)).toBe(
      'Plan a trip: MARK_AGENT_INPUT',
    );
    expect(agentIn.mime_type).toBe('text/plain');
    for (const s of spans(n)) expect(s.payload_state).toBe('full');
    // Still none of it in the records themselves.
    const dump = JSON.stringify(all(n));
    for (const m of MARKERS) expect(dump).not.toContain(m);
  });

  it('gives the same ids for the same export, different ones for another org', () => {
    const ids = (n: NormalizedExport) =>
      all(n).map((r) =>
        r.record === 'artifact' ? r.artifact_id : r.record === 'event' ? r.event_id : r.span_id,
      );
    const a = ids(run(openInferenceTree()));
    expect(ids(run(openInferenceTree(), true))).toEqual(a);
    expect(new Set(a.filter((id) => id.length === 32)).size).toBe(a.filter((id) => id.length === 32).length);
    const other = normalizeExport({
      export: openInferenceTree(),
      orgId: 'org_2',
      projectId: PROJECT,
      capture: false,
      source: 'trace-ingest',
    });
    expect(ids(other)).not.toEqual(a);
    for (const id of a) expect(id).toMatch(/^[0-9a-f]{16}$|^[0-9a-f]{32}$/);
  });
});

describe('SPEC 2.1-2.3: the same tree with GenAI semantic conventions', () => {
  it('maps operations to kinds and promotes the gen_ai.* equivalents', () => {
    const n = run(genAiTree());
    expect(spanById(n, AGENT)).toMatchObject({
      openinference_span_kind: 'AGENT',
      agent_name: 'planner',
      session_id: 'conv-9',
      user_id: 'user-8',
      service_name: 'genai-app',
    });
    expect(spanById(n, LLM)).toMatchObject({
      openinference_span_kind: 'LLM',
      model_name: 'claude-sonnet-20250101',
      provider: 'anthropic',
      llm_system: 'anthropic',
      prompt_tokens: 30,
      completion_tokens: 4,
      cost_total: '',
      request_id: '',
    });
    expect(spanById(n, TOOL)).toMatchObject({ openinference_span_kind: 'TOOL', tool_name: 'search' });
    expect(spanById(n, RETRIEVER)).toMatchObject({
      openinference_span_kind: 'EMBEDDING',
      model_name: 'text-embedding-3-small',
    });
    expect(attrsOf(spanById(n, RETRIEVER))['embedding.embeddings.0.embedding.vector']).toEqual([0.1, 0.2]);
    expect(attrsOf(spanById(n, TOOL))['gen_ai.tool.call.id']).toBe('call_1');
  });

  it('makes message events artifacts of their span, referenced by the event', () => {
    const n = run(genAiTree());
    const evs = events(n).filter((e) => e.span_id === LLM);
    expect(evs.map((e) => e.event_name)).toEqual([
      'trace.span.started',
      'gen_ai.system.message',
      'gen_ai.user.message',
      'gen_ai.choice',
      'trace.span.ended',
    ]);
    const arts = artifacts(n).filter((a) => a.span_id === LLM);
    const byId = new Map(arts.map((a) => [a.artifact_id, a]));
    expect(byId.get(evs[1]!.artifact_ref)?.kind).toBe('input');
    expect(byId.get(evs[2]!.artifact_ref)?.kind).toBe('input');
    expect(byId.get(evs[3]!.artifact_ref)?.kind).toBe('output');
    expect(evs[0]!.artifact_ref).toBe('');
    expect(attrsOf(evs[3]!)).toEqual({ index: 0, finish_reason: 'tool_calls' });
    expect(attrsOf(evs[1]!)).toEqual({ 'gen_ai.system': 'anthropic' });
    expect(evs[3]!.occurred_at).toBe('2023-11-14T22:13:20.003000000Z');
    expect(arts.map((a) => a.kind)).toEqual([
      'input',
      'input',
      'output',
      'input',
      'input',
      'output',
      'output',
    ]);
  });

  it('with capture off: no payload text anywhere and no payloads', () => {
    const n = run(genAiTree(), false);
    const dump = JSON.stringify(all(n));
    for (const m of MARKERS) expect(dump).not.toContain(m);
    expect(n.payloads).toEqual([]);
    for (const s of spans(n)) expect(s.payload_state).toBe('summary_only');
  });

  it('with capture on: the payload bytes hold the text and the hashes match', () => {
    const n = run(genAiTree(), true);
    const stored = n.payloads.map((p) => text(p.bytes)).join('\n');
    for (const m of MARKERS) expect(stored).toContain(m);
    for (const a of artifacts(n)) {
      const p = n.payloads.find((x) => x.objectKey === a.object_key)!;
      expect(a.blake3_hash).toBe(blake3Hex(p.bytes));
    }
    const choice = artifacts(n).filter((a) => a.span_id === LLM && a.kind === 'output');
    expect(choice.map((a) => JSON.parse(a.redaction_metadata_json).attribute)).toEqual([
      'gen_ai.completion',
      'message.content',
      'tool_calls',
    ]);
  });
});

describe('SPEC 4.3: the authenticated project decides the tenant; hints must match', () => {
  it('accepts matching hints in span or resource attributes', () => {
    const n = run(
      exportOf(
        [
          span('b000000000000001', { attributes: { 'svc.org_id': ORG, project_id: PROJECT } }),
          span('b000000000000002', { attributes: { org_id: ORG, 'svc.project_id': PROJECT } }),
        ],
        { 'svc.org_id': ORG, 'svc.project_id': PROJECT },
      ),
    );
    expect(n).toMatchObject({ acceptedSpans: 2, rejectedSpans: 0, rejections: [] });
    expect(spans(n).every((s) => s.org_id === ORG && s.project_id === PROJECT)).toBe(true);
  });

  it('rejects and counts spans whose span attributes name another tenant, keeps the rest', () => {
    const n = run(
      exportOf([
        span('b000000000000001', { attributes: { 'svc.org_id': 'org_evil' } }),
        span('b000000000000002', { attributes: { org_id: 'org_evil' } }),
        span('b000000000000003', { attributes: { project_id: 'proj_evil' } }),
        span('b000000000000004', { attributes: { 'svc.project_id': 'proj_evil', org_id: ORG } }),
        span('b000000000000005'),
      ]),
    );
    expect(n.acceptedSpans).toBe(1);
    expect(n.rejectedSpans).toBe(4);
    expect(n.rejections.sort()).toEqual(['span names another organization', 'span names another project']);
    expect(spans(n).map((s) => s.span_id)).toEqual(['b000000000000005']);
    expect(JSON.stringify(all(n))).not.toContain('evil');
  });

  it('rejects every span of a resource that names another tenant', () => {
    const good = exportOf([span('b000000000000001')]);
    const bad = exportOf([span('b000000000000002'), span('b000000000000003')], { org_id: 'org_evil' });
    const n = run({ resourceSpans: [...bad.resourceSpans, ...good.resourceSpans] });
    expect(n).toMatchObject({
      acceptedSpans: 1,
      rejectedSpans: 2,
      rejections: ['resource names another organization'],
    });
    const p = run(exportOf([span('b000000000000002')], { 'svc.project_id': 'proj_evil' }));
    expect(p).toMatchObject({
      acceptedSpans: 0,
      rejectedSpans: 1,
      rejections: ['resource names another project'],
    });
    expect(p.traces.size).toBe(0);
  });
});

describe('SPEC 2.1: ids, times and status', () => {
  it('rejects and counts spans with invalid ids or no start time, one at a time', () => {
    const n = run(
      exportOf([
        span('c000000000000001', { traceId: '0'.repeat(32) }),
        span('c000000000000002', { traceId: 'abc' }),
        span('c000000000000003', { traceId: `${'g'.repeat(32)}` }),
        span('0000000000000000'),
        span('c00000000000004'),
        span('c000000000000005', { parentSpanId: 'xyz' }),
        span('c000000000000006', { startTimeUnixNano: 0n }),
        span('c000000000000007', { parentSpanId: 'A000000000000001', traceId: TRACE.toUpperCase() }),
      ]),
    );
    expect(n.acceptedSpans).toBe(1);
    expect(n.rejectedSpans).toBe(7);
    expect(n.rejections).toHaveLength(4);
    expect(n.rejections.join('\n')).toMatch(/trace_id[\s\S]*span_id[\s\S]*parent_span_id[\s\S]*start time/);
    // Hex ids are lowercased.
    expect(spans(n)[0]).toMatchObject({ trace_id: TRACE, parent_span_id: 'a000000000000001' });
  });

  it('writes nanosecond timestamps exactly', () => {
    const n = run(
      exportOf([
        span('d000000000000001', {
          startTimeUnixNano: 1700000000123456789n,
          endTimeUnixNano: 1700000000123456789n + 1_500_001n,
          events: [{ name: '', timeUnixNano: 0n, attributes: { event: 'cache hit', level: 'info' } }],
        }),
      ]),
    );
    const s = spans(n)[0]!;
    expect(s.started_at).toBe('2023-11-14T22:13:20.123456789Z');
    expect(s.ended_at).toBe('2023-11-14T22:13:20.124956790Z');
    expect(s.duration_ms).toBe(1.500001);
    const [started, ev, ended] = events(n);
    expect(started).toMatchObject({ event_name: 'trace.span.started', occurred_at: s.started_at });
    expect(ev).toMatchObject({
      event_name: 'trace.event',
      occurred_at: s.started_at,
      level: 'info',
      message: 'cache hit',
    });
    expect(ended).toMatchObject({ event_name: 'trace.span.ended', occurred_at: s.ended_at });
    expect(JSON.parse(ended!.attributes_json)).toEqual({ status: 'ok', duration_ms: 1.500001 });
    expect(
      run(exportOf([span('d000000000000002', { startTimeUnixNano: 1n, endTimeUnixNano: 1n })])),
    ).toMatchObject({
      acceptedSpans: 1,
    });
    expect(spans(run(exportOf([span('d000000000000002', { startTimeUnixNano: 1n })])))[0]!.started_at).toBe(
      '1970-01-01T00:00:00.000000001Z',
    );
  });

  it('keeps a pending span with its start as end, duration 0 and no ended event', () => {
    const n = run(
      exportOf([span('e000000000000001', { endTimeUnixNano: 0n, status: { code: 1, message: '' } })]),
    );
    const s = spans(n)[0]!;
    expect(s).toMatchObject({ status: 'pending', ended_at: s.started_at, duration_ms: 0 });
    expect(events(n).map((e) => e.event_name)).toEqual(['trace.span.started']);
  });

  it('maps kinds and statuses, and clamps a negative duration', () => {
    const n = run(
      exportOf(
        [0, 1, 2, 3, 4, 5, 9].map((kind, i) =>
          span(`f00000000000000${i + 1}`, {
            kind,
            status: { code: i % 3, message: i === 2 ? 'boom' : '' },
            endTimeUnixNano: i === 6 ? T0 - 1n : T0 + MS,
          }),
        ),
      ),
    );
    expect(spans(n).map((s) => s.span_kind)).toEqual([
      'internal',
      'internal',
      'server',
      'client',
      'producer',
      'consumer',
      'internal',
    ]);
    expect(spans(n).map((s) => s.status)).toEqual(['unset', 'ok', 'error', 'unset', 'ok', 'error', 'unset']);
    expect(spans(n)[2]!.status_message).toBe('boom');
    expect(spans(n)[6]!.duration_ms).toBe(0);
  });
});

describe('SPEC 2.1: attributes_json and promoted fields', () => {
  it('cuts long strings and deep values and lists the cut keys', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 10_000; i++) deep = [deep];
    const n = run(
      exportOf([
        span('a100000000000001', {
          attributes: {
            long: 'x'.repeat(10_000),
            short: 'ok',
            deep: deep as never,
            nested: { inner: 'y'.repeat(9000) },
          },
        }),
      ]),
    );
    const a = attrsOf(spans(n)[0]!);
    expect((a.long as string).length).toBe(8192);
    expect((a.nested as { inner: string }).inner.length).toBe(8192);
    expect(a.short).toBe('ok');
    expect(a['svc.truncated']).toEqual(['long', 'deep', 'nested']);
  });

  it('promotes counts and cost only when well-formed', () => {
    const promoted = (attributes: Attributes) =>
      spans(run(exportOf([span('a200000000000001', { attributes })])))[0]!;
    expect(promoted({ 'llm.token_count.prompt': -1, 'gen_ai.usage.input_tokens': '5' }).prompt_tokens).toBe(
      5,
    );
    expect(promoted({ 'llm.token_count.prompt': 1.5 }).prompt_tokens).toBeNull();
    expect(promoted({ 'gen_ai.usage.prompt_tokens': 3, 'gen_ai.usage.completion_tokens': 2 })).toMatchObject({
      prompt_tokens: 3,
      completion_tokens: 2,
    });
    expect(promoted({ 'llm.cost.total': '0.000000012345' }).cost_total).toBe('0.000000012345');
    expect(promoted({ 'llm.cost.total': 1e-7 }).cost_total).toBe('0.0000001');
    expect(promoted({ 'llm.cost.total': 'free' }).cost_total).toBe('');
    expect(promoted({ 'llm.cost.total': true }).cost_total).toBe('');
    expect(promoted({ 'gen_ai.system': 'openai' })).toMatchObject({
      provider: 'openai',
      llm_system: 'openai',
    });
    expect(promoted({ 'svc.session_id': 's3', request_id: 'r1' })).toMatchObject({
      session_id: 's3',
      request_id: 'r1',
    });
    expect(promoted({ 'svc.request_id': 42 }).request_id).toBe('');
    expect(
      promoted({ 'openinference.span.kind': 'nonsense', 'gen_ai.operation.name': 'chat' })
        .openinference_span_kind,
    ).toBe('LLM');
    expect(promoted({ 'gen_ai.operation.name': 'dance' }).openinference_span_kind).toBe('');
  });

  it('takes service_name from the resource, else the scope', () => {
    const n = run(exportOf([span('a300000000000001')], {}));
    expect(spans(n)[0]!.service_name).toBe('scope-lib');
  });

  it('classifies keys by the conventions and leaves the rest alone', () => {
    const kind = (k: string) => classifyKey(k)?.kind ?? null;
    expect(kind('input.mime_type')).toBeNull();
    expect(kind('tool.parameters')).toBeNull();
    expect(kind('llm.model_name')).toBeNull();
    expect(kind('gen_ai.usage.input_tokens')).toBeNull();
    expect(kind('llm.prompts.0.prompt.text')).toBe('input');
    expect(kind('gen_ai.prompt')).toBe('input');
    expect(kind('gen_ai.content.completion')).toBe('output');
    expect(kind('gen_ai.choice')).toBe('output');
    expect(kind('tool.arguments')).toBe('tool_arguments');
    expect(kind('tool.result')).toBe('tool_result');
    expect(kind('reranker.output_documents.0.document.content')).toBe('retrieved_document');
    expect(kind('document.content')).toBe('retrieved_document');
    expect(kind('x.audio.data')).toBe('audio');
    expect(kind('audio.url')).toBe('audio');
    expect(kind('foo.image.url')).toBe('image');
    for (const raw of ['llm.raw_request', 'raw_response', 'http.request.body', 'http.response.body'])
      expect(kind(raw)).toBe('raw_provider_payload');
    expect(classifyKey('llm.input_messages.3.message.content')?.base).toBe('llm.input_messages');
  });
});

describe('SPEC 2.3 privacy, property: any attribute map', () => {
  const PAYLOAD_KEYS = [
    'input.value',
    'output.value',
    'llm.input_messages.0.message.content',
    'llm.output_messages.2.message.content',
    'llm.prompts.0',
    'gen_ai.prompt.1.content',
    'gen_ai.completion',
    'gen_ai.input.messages',
    'gen_ai.tool.call.arguments',
    'tool.result',
    'retrieval.documents.0.document.content',
    'x.tool_calls.0.tool_call.function.arguments',
    'm.image.url',
    'm.audio.data',
    'raw_request',
    'http.response.body',
    'embedding.embeddings.3.embedding.text',
  ];
  const marker = fc.nat().map((i) => `ZQMARK${i}QZ`);
  const payloadValue = fc.oneof(
    marker,
    fc.array(marker, { minLength: 1 }),
    marker.map((m) => ({ text: m, nested: [{ deeper: m }] })),
  );
  const plainValue = fc
    .jsonValue({ maxDepth: 4 })
    .filter((v) => !JSON.stringify(v).includes('MARK')) as fc.Arbitrary<Attributes[string]>;
  const attributes = fc.tuple(
    fc.dictionary(fc.constantFrom(...PAYLOAD_KEYS), payloadValue),
    fc.dictionary(
      fc.oneof(
        fc.string(),
        fc.constantFrom('__proto__', 'constructor', '', '.', 'llm.', 'gen_ai.prompt_x', 'session.id'),
      ),
      plainValue,
    ),
  );

  it('never throws, and with capture off no payload value survives in any record', () => {
    fc.assert(
      fc.property(
        attributes,
        attributes,
        fc.boolean(),
        ([payload, plain], [eventPayload, eventPlain], capture) => {
          const merged: Attributes = Object.assign(Object.create(null), plain, payload);
          const eventAttrs: Attributes = Object.assign(Object.create(null), eventPlain, eventPayload);
          const n = run(
            exportOf(
              [
                span('9000000000000001', {
                  attributes: merged,
                  events: [
                    {
                      name: 'gen_ai.user.message',
                      timeUnixNano: T0,
                      attributes: { content: 'ZQMARKeventQZ' },
                    },
                    { name: 'custom', timeUnixNano: T0, attributes: eventAttrs },
                  ],
                }),
              ],
              { ...merged, 'service.name': 'p' },
            ),
            capture,
          );
          expect(n.acceptedSpans).toBe(1);
          const dump = JSON.stringify(all(n));
          expect(dump).not.toContain('ZQMARK');
          if (!capture) expect(n.payloads).toEqual([]);
          else {
            const stored = n.payloads.map((p) => text(p.bytes)).join('');
            for (const v of Object.values(payload))
              expect(stored).toContain(JSON.stringify(v).match(/ZQMARK\d+QZ/)![0]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never throws on odd shapes', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.anything() as fc.Arbitrary<never>),
        fc.bigInt({ min: -(1n << 70n), max: 1n << 70n }),
        (attrs, t) => {
          const n = run(
            exportOf([
              span('9000000000000002', { attributes: attrs, startTimeUnixNano: t, endTimeUnixNano: t }),
              span('9000000000000003', {
                attributes: attrs,
                events: [{ name: 'x', timeUnixNano: t, attributes: attrs }],
              }),
            ]),
          );
          expect(n.acceptedSpans + n.rejectedSpans).toBe(2);
        },
      ),
      { numRuns: 200 },
    );
  });
});
