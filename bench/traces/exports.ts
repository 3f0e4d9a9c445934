import { randomBytes } from 'node:crypto';
import { type Context, context, type HrTime, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/**
 * Agent-shaped OTLP/HTTP protobuf exports for bench:traces, made fast enough that the load
 * generator is never the bottleneck: a few templates are built once through the real SDK
 * (ReadableSpans from BasicTracerProvider, encoded by @opentelemetry/otlp-transformer's
 * ProtobufTraceSerializer, as OTLPTraceExporter sends them), and every export sent is a copy of one
 * with its ids, timestamps and session id patched in place at byte offsets found once. So each
 * export has new trace and span ids (nothing dedupes), current timestamps, and the exact bytes an
 * SDK would send, for well under a millisecond of the bench's CPU.
 *
 * One template is TRACES traces of SPANS_PER_TRACE spans (512 spans, BatchSpanProcessor's default
 * maxExportBatchSize): an AGENT root, five steps of CHAIN > RETRIEVER, EMBEDDING, LLM, TOOL, LLM,
 * and a closing LLM; about 15 attributes a span (OpenInference kind, session and user, model,
 * provider, token counts, cost, invocation parameters, tool schema), input.value and output.value
 * of a few hundred bytes each, and one failed tool call with an exception event per trace.
 */

export const SPANS_PER_TRACE = 32;
export const TRACES_PER_EXPORT = 16;
export const SPANS_PER_EXPORT = SPANS_PER_TRACE * TRACES_PER_EXPORT;

/** The session id attribute ends in a fixed-width slot (a letter and six digits) patched per export. */
const SESSION_SLOT = 7;
export const sessionIdOf = (run: string, session: number | 'warmup'): string =>
  session === 'warmup'
    ? `bench-${run}-w${'0'.repeat(SESSION_SLOT - 1)}`
    : `bench-${run}-s${String(session).padStart(SESSION_SLOT - 1, '0')}`;

/** A seeded generator, so templates are text-like and reproducible. */
const prng = (seed: number) => {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
};

const WORDS =
  'the agent plan step search result document answer question context model tool call weather city price order account ticket refund status summary user customer support invoice shipping delay policy travel booking flight hotel report analysis data table revenue quarter forecast risk compliance review draft email meeting schedule'.split(
    ' ',
  );

const textOf = (rand: () => number, bytes: number): string => {
  let out = '';
  while (out.length < bytes) out += `${WORDS[Math.floor(rand() * WORDS.length)]} `;
  return out.slice(0, bytes);
};

const MODELS = [
  ['gpt-4o', 'openai'],
  ['gpt-4o-mini', 'openai'],
  ['claude-3-5-sonnet', 'anthropic'],
] as const;
const TOOLS = ['search_web', 'get_weather', 'lookup_order', 'create_ticket', 'run_sql'];

interface Template {
  bytes: Buffer;
  /** Per template trace index: where its 16 id bytes sit. */
  traceIdAt: number[][];
  /** Per span (trace-major, SPANS_PER_TRACE each): where its 8 id bytes sit (its own and its children's parent ids). */
  spanIdAt: number[][];
  /** Where each fixed64 time sits, with the template's value there. */
  timesAt: { offset: number; ns: bigint }[];
  /** Where the session id's digits start. */
  sessionAt: number[];
}

const hexBytes = (hex: string) => Buffer.from(hex, 'hex');

/** Every offset of `needle` in `hay`. */
const offsetsOf = (hay: Buffer, needle: Buffer): number[] => {
  const out: number[] = [];
  for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + 1)) out.push(at);
  return out;
};

const nsOf = (t: HrTime): bigint => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
const hrOf = (ns: bigint): HrTime => [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];

/** The spans of one template, through the real SDK, in the order BatchSpanProcessor would queue them (by end). */
const buildSpans = (seed: number, run: string, payloadBytes: number, baseNs: bigint): ReadableSpan[] => {
  const rand = prng(seed);
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'bench-agent',
      'service.version': '1.4.2',
      'deployment.environment': 'production',
      'telemetry.sdk.language': 'nodejs',
      'telemetry.sdk.name': 'opentelemetry',
    }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('openinference.instrumentation.bench', '0.1.0');
  const session = sessionIdOf(run, 0);
  let clock = baseNs;
  // Distinct odd nanoseconds everywhere, so each time value is found at its own offsets only.
  const tick = (ms: number) => {
    clock += BigInt(Math.round(ms * 1e6)) + 1n + BigInt(Math.floor(rand() * 997)) * 2n;
    return hrOf(clock);
  };
  for (let t = 0; t < TRACES_PER_EXPORT; t++) {
    const user = `user-${Math.floor(rand() * 10_000)}`;
    const common = { 'session.id': session, 'user.id': user };
    const io = () => ({
      'input.value': textOf(rand, payloadBytes),
      'input.mime_type': 'text/plain',
      'output.value': textOf(rand, Math.round(payloadBytes * 0.75)),
      'output.mime_type': 'text/plain',
    });
    const start = (
      name: string,
      parent: Context,
      kind: SpanKind,
      attributes: Record<string, string | number>,
    ) =>
      tracer.startSpan(name, { kind, attributes: { ...common, ...attributes }, startTime: tick(1) }, parent);
    const root = start('research-agent', context.active(), SpanKind.SERVER, {
      'openinference.span.kind': 'AGENT',
      'agent.name': 'researcher',
      'graph.node.id': 'agent',
      metadata: JSON.stringify({ tenant_tier: 'pro', run: t, experiment: 'baseline' }),
      'llm.token_count.total': 0,
      ...io(),
    });
    const rootCtx = trace.setSpan(context.active(), root);
    const llm = (parent: Context, name: string) => {
      const [model, provider] = MODELS[Math.floor(rand() * MODELS.length)]!;
      const prompt = 200 + Math.floor(rand() * 3_000);
      const completion = 20 + Math.floor(rand() * 600);
      const span = start(name, parent, SpanKind.CLIENT, {
        'openinference.span.kind': 'LLM',
        'llm.model_name': model,
        'llm.provider': provider,
        'llm.system': provider,
        'llm.token_count.prompt': prompt,
        'llm.token_count.completion': completion,
        'llm.token_count.total': prompt + completion,
        'llm.cost.total': Number(((prompt * 2.5 + completion * 10) / 1e6).toFixed(6)),
        'llm.invocation_parameters': JSON.stringify({ temperature: 0.2, max_tokens: 1024, top_p: 1 }),
        ...io(),
      });
      span.setStatus({ code: SpanStatusCode.OK });
      span.end(tick(300 + rand() * 2_500));
    };
    const failing = Math.floor(rand() * 5);
    for (let step = 0; step < 5; step++) {
      const chain = start(`step-${step}`, rootCtx, SpanKind.INTERNAL, {
        'openinference.span.kind': 'CHAIN',
        'graph.node.id': `step_${step}`,
        'graph.node.parent_id': 'agent',
        ...io(),
      });
      const chainCtx = trace.setSpan(context.active(), chain);
      const retriever = start('retrieve', chainCtx, SpanKind.INTERNAL, {
        'openinference.span.kind': 'RETRIEVER',
        'retrieval.top_k': 4,
        'retrieval.index': 'kb-articles',
        ...io(),
      });
      retriever.end(tick(20 + rand() * 80));
      const embedding = start('embed-query', chainCtx, SpanKind.CLIENT, {
        'openinference.span.kind': 'EMBEDDING',
        'embedding.model_name': 'text-embedding-3-small',
        'llm.token_count.prompt': 12 + Math.floor(rand() * 60),
        ...io(),
      });
      embedding.end(tick(15 + rand() * 40));
      llm(chainCtx, 'ChatCompletion');
      const toolName = TOOLS[Math.floor(rand() * TOOLS.length)]!;
      const tool = start(toolName, chainCtx, SpanKind.INTERNAL, {
        'openinference.span.kind': 'TOOL',
        'tool.name': toolName,
        'tool.description': `Calls ${toolName.replace('_', ' ')} with the model's arguments`,
        'tool.parameters': JSON.stringify({
          type: 'object',
          properties: { q: { type: 'string' } },
          required: ['q'],
        }),
        ...io(),
      });
      if (step === failing) {
        tool.recordException(
          { name: 'TimeoutError', message: `${toolName} timed out after 5000 ms` },
          tick(1),
        );
        tool.setStatus({ code: SpanStatusCode.ERROR, message: `${toolName} timed out` });
      }
      tool.end(tick(40 + rand() * 400));
      llm(chainCtx, 'ChatCompletion');
      chain.end(tick(1));
    }
    llm(rootCtx, 'summarize');
    root.setStatus({ code: SpanStatusCode.OK });
    root.end(tick(1));
  }
  const spans = exporter.getFinishedSpans();
  if (spans.length !== SPANS_PER_EXPORT)
    throw new Error(`template has ${spans.length} spans, not ${SPANS_PER_EXPORT}`);
  return spans;
};

/** Encodes a template once and finds where every id, time and session digit sits in its bytes. */
const buildTemplate = (seed: number, run: string, payloadBytes: number, baseNs: bigint): Template => {
  const spans = buildSpans(seed, run, payloadBytes, baseNs);
  const encoded = ProtobufTraceSerializer.serializeRequest(spans);
  if (!encoded) throw new Error('the serializer returned nothing');
  const bytes = Buffer.from(encoded);
  const traceOrder = [...new Set(spans.map((s) => s.spanContext().traceId))];
  const children = new Map<string, number>();
  for (const s of spans) {
    const p = s.parentSpanContext?.spanId;
    if (p) children.set(p, (children.get(p) ?? 0) + 1);
  }
  // Spans trace-major (template trace index, then order within it), as the patcher numbers them.
  const byTrace = traceOrder.map((id) => spans.filter((s) => s.spanContext().traceId === id));
  const traceIdAt = traceOrder.map((id) => {
    const at = offsetsOf(bytes, hexBytes(id));
    if (at.length !== SPANS_PER_TRACE)
      throw new Error(`trace id found ${at.length} times, not ${SPANS_PER_TRACE}`);
    return at;
  });
  const spanIdAt = byTrace.flat().map((s) => {
    const id = s.spanContext().spanId;
    const at = offsetsOf(bytes, hexBytes(id));
    if (at.length !== 1 + (children.get(id) ?? 0)) throw new Error(`span id ${id} found ${at.length} times`);
    return at;
  });
  const timesAt: Template['timesAt'] = [];
  const times = new Set<bigint>();
  for (const s of spans) {
    times.add(nsOf(s.startTime));
    times.add(nsOf(s.endTime));
    for (const e of s.events) times.add(nsOf(e.time));
  }
  for (const ns of times) {
    const le = Buffer.alloc(8);
    le.writeBigUInt64LE(ns);
    const at = offsetsOf(bytes, le);
    if (at.length === 0) throw new Error(`time ${ns} not found in the encoded export`);
    for (const offset of at) timesAt.push({ offset, ns });
  }
  const session = Buffer.from(sessionIdOf(run, 0));
  const sessionAt = offsetsOf(bytes, session).map((at) => at + session.length - SESSION_SLOT);
  if (sessionAt.length !== SPANS_PER_EXPORT) throw new Error(`session id found ${sessionAt.length} times`);
  return { bytes, traceIdAt, spanIdAt, timesAt, sessionAt };
};

export interface ExportFactory {
  /** Bytes of one encoded export (they vary a little with the random text). */
  averageBytes: number;
  /** Export `index` (unique within the run) of session `session`, timestamped to end now. */
  make(index: number, session: number | 'warmup'): Buffer;
}

/**
 * `templates` distinct templates (different text, users, models) of `payloadBytes`-byte inputs;
 * export i uses template i mod templates. Trace ids are <run tag 4 bytes><export index 4 bytes BE>
 * <trace index><7 bytes of the template's>, so a session's traces sit together in trace_id order.
 */
export const exportFactory = (options: {
  run: string;
  templates: number;
  payloadBytes: number;
}): ExportFactory => {
  const baseNs = BigInt(Date.now()) * 1_000_000n;
  const templates = Array.from({ length: options.templates }, (_, i) =>
    buildTemplate(0x5eed + i * 7919, options.run, options.payloadBytes, baseNs),
  );
  // The template's last time: an export is shifted so that its last span ended just now.
  const lastNs = templates.map((t) => {
    let last = 0n;
    for (const { ns } of t.timesAt) if (ns > last) last = ns;
    return last;
  });
  const tag = randomBytes(4);
  tag[0]! |= 0x10;
  const traceId = Buffer.alloc(16);
  const spanId = Buffer.alloc(8);
  return {
    averageBytes: Math.round(templates.reduce((n, t) => n + t.bytes.length, 0) / templates.length),
    make: (index, session) => {
      const which = index % templates.length;
      const t = templates[which]!;
      const out = Buffer.allocUnsafe(t.bytes.length);
      t.bytes.copy(out);
      for (let tr = 0; tr < TRACES_PER_EXPORT; tr++) {
        tag.copy(traceId, 0);
        traceId.writeUInt32BE(index, 4);
        traceId[8] = tr;
        const first = t.traceIdAt[tr]![0]!;
        t.bytes.copy(traceId, 9, first + 9, first + 16);
        for (const at of t.traceIdAt[tr]!) traceId.copy(out, at);
        for (let s = 0; s < SPANS_PER_TRACE; s++) {
          const offsets = t.spanIdAt[tr * SPANS_PER_TRACE + s]!;
          spanId.writeUInt32BE(index, 0);
          spanId[4] = tr;
          spanId[5] = s;
          spanId[6] = t.bytes[offsets[0]! + 6]!;
          spanId[7] = t.bytes[offsets[0]! + 7]! | 1;
          for (const at of offsets) spanId.copy(out, at);
        }
      }
      const shift = BigInt(Date.now()) * 1_000_000n - lastNs[which]!;
      for (const { offset, ns } of t.timesAt) out.writeBigUInt64LE(ns + shift, offset);
      const digits = sessionIdOf('', session).slice(-SESSION_SLOT);
      for (const at of t.sessionAt) out.write(digits, at, 'latin1');
      return out;
    },
  };
};
