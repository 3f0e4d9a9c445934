import { Buffer } from 'node:buffer';
import {
  type Attributes as ApiAttributes,
  context,
  createTraceState,
  type HrTime,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Attributes, AttributeValue, OtlpExport, OtlpSpan } from './model.js';
import {
  decodeOtlpJson,
  decodeOtlpProtobuf,
  encodeExportResponseProtobuf,
  encodeStatusProtobuf,
  exportResponseJson,
  OtlpDecodeError,
  statusJson,
} from './otlp.js';

// ---- A tiny protobuf writer for hand-built inputs -------------------------------------------

const varint = (value: bigint | number): number[] => {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
};
const tag = (field: number, wire: number): number[] => varint((field << 3) | wire);
const len = (field: number, ...body: number[][]): number[] => {
  const flat = body.flat();
  return [...tag(field, 2), ...varint(flat.length), ...flat];
};
const str = (field: number, s: string): number[] => len(field, [...Buffer.from(s, 'utf8')]);
const vint = (field: number, v: bigint | number): number[] => [...tag(field, 0), ...varint(v)];
const fixed64 = (field: number, v: bigint): number[] => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return [...tag(field, 1), ...b];
};
const fixed32 = (field: number, v: number): number[] => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return [...tag(field, 5), ...b];
};
const double = (field: number, v: number): number[] => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return [...tag(field, 1), ...b];
};
/** One unknown field of every valid wire type, numbered so that no OTLP message knows them. */
const unknownFields = (): number[] => [
  ...vint(99, 300),
  ...fixed64(98, 7n),
  ...str(97, 'ignored'),
  ...fixed32(96, 1),
  ...len(5000, str(1, 'nested unknown')),
];

const keyValue = (key: string, anyValue: number[] | undefined): number[] =>
  anyValue === undefined ? str(1, key) : [...str(1, key), ...len(2, anyValue)];
/** ExportTraceServiceRequest with one ResourceSpans holding one ScopeSpans of `spans`. */
const request = (spans: number[][], resource: number[] = []): Uint8Array =>
  Uint8Array.from(len(1, len(1, resource), len(2, ...spans.map((s) => len(2, s)))));
const onlySpan = (decoded: OtlpExport): OtlpSpan => decoded.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
const attributesOf = (...anyValues: [string, number[] | undefined][]): Attributes =>
  onlySpan(decodeOtlpProtobuf(request([anyValues.flatMap(([k, v]) => len(9, keyValue(k, v)))]))).attributes;

// ---- Expectations from the SDK's own spans -------------------------------------------------

const ns = ([s, n]: HrTime): bigint => BigInt(s) * 1_000_000_000n + BigInt(n);
const expectedValue = (v: unknown): AttributeValue => {
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (Array.isArray(v)) return v.map(expectedValue);
  if (typeof v === 'object') return expectedAttributes(v as Record<string, unknown>);
  if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) return BigInt(v).toString();
  return v as AttributeValue;
};
const expectedAttributes = (a: Record<string, unknown>): Attributes =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, expectedValue(v)]));
const expectedSpan = (s: ReadableSpan): OtlpSpan => ({
  traceId: s.spanContext().traceId,
  spanId: s.spanContext().spanId,
  parentSpanId: s.parentSpanContext?.spanId ?? '',
  traceState: s.spanContext().traceState?.serialize() ?? '',
  name: s.name,
  kind: s.kind + 1, // the API has no "unspecified"; OTLP does
  startTimeUnixNano: ns(s.startTime),
  endTimeUnixNano: ns(s.endTime),
  attributes: expectedAttributes(s.attributes),
  events: s.events.map((e) => ({
    timeUnixNano: ns(e.time),
    name: e.name,
    attributes: expectedAttributes(e.attributes ?? {}),
  })),
  links: s.links.map((l) => ({
    traceId: l.context.traceId,
    spanId: l.context.spanId,
    attributes: expectedAttributes(l.attributes ?? {}),
  })),
  status: { code: s.status.code, message: s.status.message ?? '' },
});
const allSpans = (decoded: OtlpExport): OtlpSpan[] =>
  decoded.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));

const T0: HrTime = [1_767_225_600, 123_456_789];
const at = (plusNs: number): HrTime => [T0[0], T0[1] + plusNs];

/** Real SDK spans: two scopes, a remote parent with trace state, events, links, a pending span. */
const sdkSpans = (): { finished: ReadableSpan[]; pending: ReadableSpan; all: ReadableSpan[] } => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'checkout',
      'service.instance': 7,
      'host.tags': ['a', 'b'],
    }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('agent-sdk', '1.2.3');
  const other = provider.getTracer('http-client', '0.9.0');
  const remoteParent = trace.setSpanContext(context.active(), {
    traceId: 'abcdef0123456789abcdef0123456789',
    spanId: '00f067aa0ba902b7',
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: createTraceState('vendor=x,other=y'),
  });
  const root = tracer.startSpan(
    'agent.run',
    {
      kind: SpanKind.SERVER,
      startTime: T0,
      attributes: {
        'llm.model_name': 'gpt-4o',
        'llm.token_count.prompt': 1234,
        'neg.int': -42,
        'big.int': 2 ** 60,
        'min.unsafe': -(2 ** 53),
        'llm.temperature': 0.25,
        stream: false,
        tags: ['x', 'y', 'z'],
        ints: [1, -2, 3],
        doubles: [0.5, 1.5],
        bools: [true, false],
        'with.gaps': [1, null, 3],
        unicode: 'héllo ✓ 🙂',
      },
    },
    remoteParent,
  );
  root.addEvent('gen_ai.content.prompt', { 'gen_ai.prompt': 'hi', index: 0 }, at(1_000));
  root.addEvent('no.attributes', undefined, at(2_000));
  const linked = other.startSpan('linked.target', { startTime: T0 });
  linked.end(at(500));
  const child = other.startSpan(
    'POST /v1/chat',
    {
      kind: SpanKind.CLIENT,
      startTime: at(10),
      links: [{ context: linked.spanContext(), attributes: { 'link.reason': 'retry', 'link.n': 2 } }],
    },
    trace.setSpan(context.active(), root),
  );
  child.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream 502' });
  child.end(at(999_999_999)); // crosses into the next second in the HrTime nanos slot
  root.setStatus({ code: SpanStatusCode.OK });
  root.end(at(1_000_000));
  // Never ended: the SDK's span object is itself a ReadableSpan, with endTime [0, 0].
  const pending = tracer.startSpan(
    'still.running',
    { kind: SpanKind.PRODUCER, startTime: at(5) },
    remoteParent,
  ) as unknown as ReadableSpan;
  const finished = exporter.getFinishedSpans();
  return { finished, pending, all: [...finished, pending] };
};

/** A hand-made ReadableSpan for what the SDK's API refuses: scope attributes, bytes, kvlists. */
const richSpan = (): ReadableSpan => ({
  name: 'rich',
  kind: SpanKind.INTERNAL,
  spanContext: () => ({
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
  }),
  startTime: T0,
  endTime: at(42),
  status: { code: SpanStatusCode.UNSET },
  attributes: {
    blob: new Uint8Array([0, 1, 2, 250, 255]),
    nested: { model: 'claude', usage: { input: 10, ratio: 0.5, cached: [1, 2] }, ok: true },
  } as unknown as ApiAttributes,
  links: [],
  events: [],
  duration: [0, 42],
  ended: true,
  resource: resourceFromAttributes({ 'service.name': 'rich-svc' }),
  instrumentationScope: {
    name: 'openinference',
    version: '2.0.0',
    schemaUrl: 'https://opentelemetry.io/schemas/1.26.0',
    attributes: { 'scope.owner': 'team-a', 'scope.level': 3 },
  } as ReadableSpan['instrumentationScope'],
  droppedAttributesCount: 0,
  droppedEventsCount: 0,
  droppedLinksCount: 0,
});

const protobufOf = (spans: ReadableSpan[]): Uint8Array => ProtobufTraceSerializer.serializeRequest(spans)!;
const jsonOf = (spans: ReadableSpan[]): string =>
  new TextDecoder().decode(JsonTraceSerializer.serializeRequest(spans)!);

const expectDecodeError = (f: () => unknown, message?: RegExp): void => {
  let thrown: unknown;
  try {
    f();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(OtlpDecodeError);
  if (message) expect((thrown as Error).message).toMatch(message);
};

describe('SPEC 4.3 trace ingest: OTLP protobuf decoding of real SDK exports', () => {
  for (const [label, decode] of [
    ['protobuf', (spans: ReadableSpan[]) => decodeOtlpProtobuf(protobufOf(spans))],
    ['json', (spans: ReadableSpan[]) => decodeOtlpJson(jsonOf(spans))],
  ] as const) {
    it(`${label}: every span field round-trips`, () => {
      const { all } = sdkSpans();
      const decoded = decode(all);
      expect(decoded.resourceSpans).toHaveLength(1);
      const [resourceSpans] = decoded.resourceSpans;
      expect(resourceSpans!.resource.attributes).toEqual({
        'service.name': 'checkout',
        'service.instance': 7,
        'host.tags': ['a', 'b'],
      });
      // Scopes come in the order their first span finished.
      const scopes = resourceSpans!.scopeSpans
        .map((s) => s.scope)
        .sort((a, b) => a.name.localeCompare(b.name));
      expect(scopes).toEqual([
        { name: 'agent-sdk', version: '1.2.3', attributes: {} },
        { name: 'http-client', version: '0.9.0', attributes: {} },
      ]);
      const byId = new Map(allSpans(decoded).map((s) => [s.spanId, s]));
      expect(byId.size).toBe(all.length);
      for (const span of all) expect(byId.get(span.spanContext().spanId)).toEqual(expectedSpan(span));
    });

    it(`${label}: scope attributes, bytes and nested key-value lists`, () => {
      const span = richSpan();
      const decoded = decode([span]);
      expect(decoded.resourceSpans[0]!.scopeSpans[0]!.scope).toEqual({
        name: 'openinference',
        version: '2.0.0',
        attributes: { 'scope.owner': 'team-a', 'scope.level': 3 },
      });
      expect(onlySpan(decoded)).toEqual(expectedSpan(span));
      expect(onlySpan(decoded).attributes['blob']).toBe('AAEC+v8=');
    });
  }

  it('spells the literal values a reader would check by hand', () => {
    const { finished, pending } = sdkSpans();
    const decoded = decodeOtlpProtobuf(protobufOf([...finished, pending]));
    const spans = allSpans(decoded);
    const root = spans.find((s) => s.name === 'agent.run')!;
    const child = spans.find((s) => s.name === 'POST /v1/chat')!;
    const open = spans.find((s) => s.name === 'still.running')!;
    expect(root.traceId).toBe('abcdef0123456789abcdef0123456789');
    expect(root.parentSpanId).toBe('00f067aa0ba902b7');
    expect(root.traceState).toBe('vendor=x,other=y');
    expect(root.kind).toBe(2);
    expect(root.startTimeUnixNano).toBe(1_767_225_600_123_456_789n);
    expect(root.endTimeUnixNano).toBe(1_767_225_600_124_456_789n);
    expect(root.status).toEqual({ code: 1, message: '' });
    expect(root.attributes['neg.int']).toBe(-42);
    expect(root.attributes['big.int']).toBe('1152921504606846976');
    expect(root.attributes['min.unsafe']).toBe('-9007199254740992');
    expect(root.attributes['with.gaps']).toEqual([1, null, 3]);
    expect(root.events[0]).toEqual({
      timeUnixNano: 1_767_225_600_123_457_789n,
      name: 'gen_ai.content.prompt',
      attributes: { 'gen_ai.prompt': 'hi', index: 0 },
    });
    expect(child.parentSpanId).toBe(root.spanId);
    expect(child.kind).toBe(3);
    expect(child.endTimeUnixNano).toBe(1_767_225_601_123_456_788n);
    expect(child.status).toEqual({ code: 2, message: 'upstream 502' });
    expect(child.links[0]!.attributes).toEqual({ 'link.reason': 'retry', 'link.n': 2 });
    expect(open.endTimeUnixNano).toBe(0n);
    expect(open.kind).toBe(4);
  });

  it('the two encodings of one export decode identically', () => {
    const { all } = sdkSpans();
    const spans = [...all, richSpan()];
    expect(decodeOtlpJson(jsonOf(spans))).toEqual(decodeOtlpProtobuf(protobufOf(spans)));
  });

  it('the JSON serializer writes intValue as a JSON number and times as strings', () => {
    const json = JSON.parse(jsonOf(sdkSpans().finished));
    const span = json.resourceSpans[0].scopeSpans
      .flatMap((s: { spans: { name: string }[] }) => s.spans)
      .find((s: { name: string }) => s.name === 'agent.run');
    expect(typeof span.startTimeUnixNano).toBe('string');
    const prompt = span.attributes.find((a: { key: string }) => a.key === 'llm.token_count.prompt');
    expect(prompt.value).toEqual({ intValue: 1234 });
  });

  it('decodes a 1,000-span SDK export whole, every span with its attributes and events', () => {
    const spans: ReadableSpan[] = [];
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'bench' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const tracer = provider.getTracer('bench', '1.0.0');
    for (let i = 0; i < 1_000; i++) {
      const s = tracer.startSpan('chat gpt-4o', {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.system': 'openai',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': 1234 + i,
          'gen_ai.usage.output_tokens': 567,
          'gen_ai.request.temperature': 0.7,
          'gen_ai.response.finish_reasons': ['stop'],
          'http.response.status_code': 200,
          'session.id': `sess-${i}`,
          'llm.cost.total': '0.0123',
          'openinference.span.kind': 'LLM',
          'input.value': 'Summarise the following document. '.repeat(10),
        },
      });
      s.addEvent('gen_ai.content.completion', { 'gen_ai.completion': 'done', index: i });
      s.end();
    }
    spans.push(...exporter.getFinishedSpans());
    const bytes = protobufOf(spans);
    // Its rate is bench:traces' business (CPU per span of the route), never a timed test's.
    const decoded = allSpans(decodeOtlpProtobuf(bytes));
    expect(decoded).toHaveLength(1_000);
    expect(new Set(decoded.map((d) => d.spanId)).size).toBe(1_000);
    expect(decoded.every((d) => d.name === 'chat gpt-4o' && d.events.length === 1)).toBe(true);
    expect(decoded[7]!.attributes['gen_ai.usage.input_tokens']).toEqual(1234 + 7);
  });
});

describe('SPEC 4.3 trace ingest: protobuf wire edge cases', () => {
  it('skips unknown fields of every wire type at every level', () => {
    const span = [
      ...unknownFields(),
      ...len(1, [0xaa, 0xbb]),
      ...str(5, 'op'),
      ...len(9, unknownFields(), keyValue('k', [...unknownFields(), ...str(1, 'v')])),
      ...len(11, unknownFields(), str(2, 'ev')),
      ...len(13, unknownFields(), len(2, [1])),
      ...len(15, unknownFields(), vint(3, 2)),
      ...fixed32(16, 0x301), // flags: not in the model
    ];
    const bytes = Uint8Array.from([
      ...unknownFields(),
      ...len(
        1,
        unknownFields(),
        len(1, unknownFields()),
        len(2, unknownFields(), len(1, unknownFields()), len(2, span)),
      ),
      ...len(1000, str(1, 'deprecated instrumentation_library_spans')),
    ]);
    const decoded = onlySpan(decodeOtlpProtobuf(bytes));
    expect(decoded).toMatchObject({
      traceId: 'aabb',
      name: 'op',
      attributes: { k: 'v' },
      events: [{ name: 'ev', timeUnixNano: 0n, attributes: {} }],
      links: [{ traceId: '', spanId: '01', attributes: {} }],
      status: { code: 2, message: '' },
    });
  });

  it('skips a known field number carrying an unexpected wire type', () => {
    const decoded = onlySpan(
      decodeOtlpProtobuf(request([[...vint(5, 7), ...fixed32(7, 1), ...str(6, 'x')]])),
    );
    expect(decoded).toMatchObject({ name: '', startTimeUnixNano: 0n, kind: 0 });
  });

  it('int64 values: negatives, the safe-integer edges, and beyond 2^53 as decimal text', () => {
    const int = (v: bigint): number[] => vint(3, v);
    expect(
      attributesOf(
        ['minus.one', int(-1n)],
        ['min', int(-(2n ** 63n))],
        ['max', int(2n ** 63n - 1n)],
        ['max.safe', int(2n ** 53n - 1n)],
        ['min.safe', int(-(2n ** 53n - 1n))],
        ['two.53', int(2n ** 53n)],
        ['minus.two.53', int(-(2n ** 53n))],
        ['two.32', int(2n ** 32n)],
      ),
    ).toEqual({
      'minus.one': -1,
      min: '-9223372036854775808',
      max: '9223372036854775807',
      'max.safe': Number.MAX_SAFE_INTEGER,
      'min.safe': Number.MIN_SAFE_INTEGER,
      'two.53': '9007199254740992',
      'minus.two.53': '-9007199254740992',
      'two.32': 4294967296,
    });
  });

  it('nested key-value lists, arrays, bytes, doubles, bools and empty values', () => {
    const kvlist = (...pairs: number[][]): number[] => len(6, ...pairs.map((p) => len(1, p)));
    const array = (...values: number[][]): number[] => len(5, ...values.map((v) => len(1, v)));
    expect(
      attributesOf(
        ['outer', kvlist(keyValue('inner', array(vint(3, 1), kvlist(keyValue('deep', vint(2, 1))))))],
        ['empty.any', []],
        ['no.value', undefined],
        ['empty.array', array()],
        ['empty.kvlist', kvlist()],
        ['bytes', len(7, [0xde, 0xad, 0xbe, 0xef])],
        ['pi', double(4, Math.PI)],
        ['false', vint(2, 0)],
        ['last.oneof.member.wins', [...str(1, 'first'), ...vint(3, 9)]],
      ),
    ).toEqual({
      outer: { inner: [1, { deep: true }] },
      'empty.any': null,
      'no.value': null,
      'empty.array': [],
      'empty.kvlist': {},
      bytes: '3q2+7w==',
      pi: Math.PI,
      false: false,
      'last.oneof.member.wins': 9,
    });
  });

  it('the last duplicate key wins; __proto__ is an ordinary own key', () => {
    const attributes = attributesOf(
      ['k', str(1, 'first')],
      ['k', str(1, 'second')],
      ['__proto__', vint(3, 1)],
    );
    expect(attributes['k']).toBe('second');
    expect(Object.getPrototypeOf(attributes)).toBe(Object.prototype);
    expect(Object.hasOwn(attributes, '__proto__')).toBe(true);
    expect(JSON.stringify(attributes)).toBe('{"k":"second","__proto__":1}');
  });

  it('ids are hex of the bytes as received, whatever their length; a pending span ends at 0', () => {
    const span = onlySpan(
      decodeOtlpProtobuf(request([[...len(1, [0xab, 0x01, 0x02]), ...len(2, []), ...fixed64(7, 5n)]])),
    );
    expect(span).toMatchObject({ traceId: 'ab0102', spanId: '', parentSpanId: '', endTimeUnixNano: 0n });
  });

  it('enums are int32: a sign-extended negative kind reads as negative', () => {
    expect(onlySpan(decodeOtlpProtobuf(request([vint(6, -1)]))).kind).toBe(-1);
  });

  it('a singular message repeated on the wire merges (resource, status)', () => {
    const resource = [...len(1, keyValue('a', str(1, '1'))), ...len(1, keyValue('b', str(1, '2')))];
    const bytes = Uint8Array.from(
      len(
        1,
        len(1, resource),
        len(1, len(1, keyValue('c', str(1, '3')))),
        len(2, len(2, [...len(15, str(2, 'm')), ...len(15, vint(3, 2))])),
      ),
    );
    const decoded = decodeOtlpProtobuf(bytes);
    expect(decoded.resourceSpans[0]!.resource.attributes).toEqual({ a: '1', b: '2', c: '3' });
    expect(onlySpan(decoded).status).toEqual({ code: 2, message: 'm' });
  });

  it('invalid UTF-8 decodes with replacement characters', () => {
    expect(attributesOf(['s', len(1, [0x61, 0xff, 0x62])])['s']).toBe('a\uFFFDb');
  });

  it('an empty body is an empty export', () => {
    expect(decodeOtlpProtobuf(new Uint8Array(0))).toEqual({ resourceSpans: [] });
  });

  it('every strict prefix of a real export throws OtlpDecodeError naming a byte offset', () => {
    const bytes = protobufOf(sdkSpans().finished);
    for (let cut = 1; cut < bytes.length; cut++) {
      expectDecodeError(() => decodeOtlpProtobuf(bytes.subarray(0, cut)), /at byte \d+/);
    }
  });

  it.each([
    ['truncated varint', [0x0a, 0x80], /truncated varint at byte 1/],
    ['varint longer than 10 bytes', [0x08, ...Array(10).fill(0xff), 0x01], /longer than 10 bytes at byte 1/],
    ['length past the end', [0x0a, 0x05, 0x00], /runs past the end .* at byte 1/],
    [
      'nested length past its parent',
      [0x0a, 0x02, 0x12, 0x05, 0, 0, 0, 0, 0],
      /runs past the end of its message \(byte 4\)/,
    ],
    ['start group', [0x0b], /wire type 3/],
    ['end group', [0x0c], /wire type 4/],
    ['wire type 6', [0x0e], /wire type 6/],
    ['field number 0', [0x02, 0x00], /invalid field tag 2 at byte 0/],
    ['truncated fixed64', [...tag(98, 1), 1, 2, 3], /truncated fixed64/],
    ['truncated fixed32', [...tag(96, 5), 1], /truncated fixed32/],
  ])('%s throws OtlpDecodeError', (_, bytes, message) => {
    expectDecodeError(() => decodeOtlpProtobuf(Uint8Array.from(bytes)), message);
  });

  it('nesting deeper than 64 throws OtlpDecodeError, not a stack overflow', () => {
    const nested = (levels: number): number[] => {
      let value = vint(3, 1);
      for (let i = 0; i < levels; i++) value = len(5, len(1, value));
      return value;
    };
    expect(attributesOf(['ok', nested(25)])['ok']).toBeDefined();
    expectDecodeError(() => attributesOf(['deep', nested(40)]), /nesting deeper than 64/);
    expectDecodeError(() => attributesOf(['deeper', nested(1_000)]), /nesting deeper than 64/);
  });

  it('works on a view into a larger buffer', () => {
    const inner = request([str(5, 'offset')]);
    const outer = new Uint8Array(inner.length + 10);
    outer.set(inner, 7);
    expect(onlySpan(decodeOtlpProtobuf(outer.subarray(7, 7 + inner.length))).name).toBe('offset');
  });
});

/** Either an export or an OtlpDecodeError, never anything else. */
const decodesOrRefuses = (decode: () => OtlpExport): boolean => {
  try {
    return Array.isArray(decode().resourceSpans);
  } catch (error) {
    if (error instanceof OtlpDecodeError) return true;
    throw error;
  }
};

/** Random protobuf messages whose field numbers collide with OTLP's, so decoding goes deep. */
const protobufTree = fc.letrec<{ message: number[] }>((tie) => ({
  message: fc
    .array(
      fc.oneof(
        { depthIdentifier: 'protobuf', maxDepth: 6 },
        fc
          .tuple(fc.integer({ min: 1, max: 16 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }))
          .map(([f, v]) => vint(f, v)),
        fc
          .tuple(fc.integer({ min: 1, max: 16 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }))
          .map(([f, v]) => fixed64(f, v)),
        fc.tuple(fc.integer({ min: 1, max: 16 }), fc.nat()).map(([f, v]) => fixed32(f, v)),
        fc
          .tuple(fc.integer({ min: 1, max: 16 }), fc.uint8Array({ maxLength: 20 }))
          .map(([f, b]) => len(f, [...b])),
        fc.tuple(fc.integer({ min: 1, max: 16 }), tie('message')).map(([f, m]) => len(f, m)),
      ),
      { maxLength: 6, depthIdentifier: 'protobuf' },
    )
    .map((fields) => fields.flat()),
}));

describe('SPEC 4.3 trace ingest: arbitrary input never throws anything but OtlpDecodeError', () => {
  const seeds = [protobufOf(sdkSpans().all), protobufOf([richSpan()])];

  it('random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) =>
        decodesOrRefuses(() => decodeOtlpProtobuf(bytes)),
      ),
      { numRuns: 2_000 },
    );
  });

  it('random protobuf-shaped trees', () => {
    fc.assert(
      fc.property(protobufTree.message, (message) =>
        decodesOrRefuses(() => decodeOtlpProtobuf(Uint8Array.from(message))),
      ),
      { numRuns: 2_000 },
    );
  });

  it('random mutations of real encodings', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({
        kind: fc.constant('insert' as const),
        at: fc.nat(),
        byte: fc.integer({ min: 0, max: 255 }),
      }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), byte: fc.constant(0) }),
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat(), byte: fc.constant(0) }),
    );
    fc.assert(
      fc.property(
        fc.nat({ max: seeds.length - 1 }),
        fc.array(mutation, { minLength: 1, maxLength: 8 }),
        (i, edits) => {
          const bytes = [...seeds[i]!];
          for (const { kind, at, byte } of edits) {
            const p = at % (bytes.length + 1);
            if (kind === 'set' && p < bytes.length) bytes[p] = byte;
            else if (kind === 'insert') bytes.splice(p, 0, byte);
            else if (kind === 'delete') bytes.splice(p, 1);
            else if (kind === 'truncate') bytes.length = p;
          }
          return decodesOrRefuses(() => decodeOtlpProtobuf(Uint8Array.from(bytes)));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  const otlpKeys = [
    'resourceSpans',
    'resource_spans',
    'resource',
    'attributes',
    'scopeSpans',
    'scope',
    'name',
    'version',
    'spans',
    'traceId',
    'spanId',
    'parentSpanId',
    'traceState',
    'kind',
    'startTimeUnixNano',
    'endTimeUnixNano',
    'timeUnixNano',
    'events',
    'links',
    'status',
    'code',
    'message',
    'key',
    'value',
    'values',
    'stringValue',
    'boolValue',
    'intValue',
    'doubleValue',
    'arrayValue',
    'kvlistValue',
    'bytesValue',
  ];
  const otlpJson = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthIdentifier: 'json', maxDepth: 8 },
      fc.constantFrom(
        null,
        true,
        0,
        -1,
        1.5,
        2 ** 70,
        '',
        'ab',
        'ABCD',
        '123',
        '-9',
        'NaN',
        'SPAN_KIND_SERVER',
        'zz',
      ),
      fc.array(tie('value'), { maxLength: 4, depthIdentifier: 'json' }),
      fc.dictionary(fc.constantFrom(...otlpKeys), tie('value'), { maxKeys: 5, depthIdentifier: 'json' }),
    ),
  }));

  it('random JSON, and random JSON built from OTLP field names', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          otlpJson.value.map((v) => JSON.stringify(v) ?? ''),
        ),
        (text) => decodesOrRefuses(() => decodeOtlpJson(text)),
      ),
      { numRuns: 3_000 },
    );
  });
});

describe('SPEC 4.3 trace ingest: OTLP/JSON mapping', () => {
  const span = (fields: Record<string, unknown>): string =>
    JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [fields] }] }] });
  const decodeSpan = (fields: Record<string, unknown>): OtlpSpan => onlySpan(decodeOtlpJson(span(fields)));
  const attribute = (value: unknown): AttributeValue =>
    decodeSpan({ attributes: [{ key: 'k', value }] }).attributes['k']!;

  it('{} is a valid empty export; null fields count as absent', () => {
    expect(decodeOtlpJson('{}')).toEqual({ resourceSpans: [] });
    expect(decodeOtlpJson('{"resourceSpans":null}')).toEqual({ resourceSpans: [] });
    expect(decodeOtlpJson('\uFEFF{}')).toEqual({ resourceSpans: [] });
    expect(decodeSpan({ name: null, status: null, kind: null })).toMatchObject({ name: '', kind: 0 });
  });

  it('snake_case proto field names decode like lowerCamelCase ones', () => {
    const camel = decodeOtlpJson(
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: 'AA',
                    spanId: 'bb',
                    parentSpanId: 'cc',
                    traceState: 't',
                    startTimeUnixNano: '1',
                    endTimeUnixNano: 2,
                    events: [{ timeUnixNano: '3' }],
                    attributes: [{ key: 'k', value: { intValue: '4' } }],
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    const snake = decodeOtlpJson(
      JSON.stringify({
        resource_spans: [
          {
            scope_spans: [
              {
                spans: [
                  {
                    trace_id: 'aa',
                    span_id: 'BB',
                    parent_span_id: 'cc',
                    trace_state: 't',
                    start_time_unix_nano: 1,
                    end_time_unix_nano: '2',
                    events: [{ time_unix_nano: 3 }],
                    attributes: [{ key: 'k', value: { int_value: 4 } }],
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    expect(snake).toEqual(camel);
    expect(onlySpan(camel)).toMatchObject({
      traceId: 'aa',
      spanId: 'bb',
      startTimeUnixNano: 1n,
      attributes: { k: 4 },
    });
  });

  it('enums as integers or names', () => {
    expect(decodeSpan({ kind: 'SPAN_KIND_SERVER', status: { code: 'STATUS_CODE_ERROR' } })).toMatchObject({
      kind: 2,
      status: { code: 2 },
    });
    expect(decodeSpan({ kind: 5, status: { code: 1, message: 'fine' } })).toMatchObject({
      kind: 5,
      status: { code: 1, message: 'fine' },
    });
  });

  it('int64 as strings or numbers; doubles incl. the non-finite spellings; bytes re-encoded', () => {
    expect(attribute({ intValue: '-5' })).toBe(-5);
    expect(attribute({ intValue: '9007199254740993' })).toBe('9007199254740993');
    expect(attribute({ intValue: '-9223372036854775808' })).toBe('-9223372036854775808');
    expect(attribute({ intValue: 2 ** 60 })).toBe('1152921504606846976');
    expect(attribute({ doubleValue: 'Infinity' })).toBe(Number.POSITIVE_INFINITY);
    expect(attribute({ doubleValue: 'NaN' })).toBeNaN();
    expect(attribute({ doubleValue: '2.5e-3' })).toBe(0.0025);
    expect(attribute({ bytesValue: '3q2-7w' })).toBe('3q2+7w==');
    expect(attribute({})).toBeNull();
    expect(attribute({ arrayValue: {} })).toEqual([]);
    expect(attribute({ kvlistValue: { values: [{ key: 'a', value: { boolValue: true } }] } })).toEqual({
      a: true,
    });
    expect(decodeSpan({ startTimeUnixNano: '18446744073709551615' }).startTimeUnixNano).toBe(2n ** 64n - 1n);
  });

  it('unknown fields are ignored', () => {
    expect(
      decodeSpan({ name: 'n', flags: 257, droppedAttributesCount: 3, somethingNew: { x: [1] } }).name,
    ).toBe('n');
  });

  it.each([
    ['invalid JSON', '{', /invalid JSON/],
    ['a top-level array', '[]', /\$ must be an object/],
    [
      'spans: 5',
      JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: 5 }] }] }),
      /scopeSpans\[0\]\.spans must be an array/,
    ],
    ['attributes as an object', span({ attributes: {} }), /spans\[0\]\.attributes must be an array/],
    ['a numeric name', span({ name: 3 }), /\.name must be a string/],
    ['a non-hex id', span({ traceId: 'xyz0' }), /traceId must be hex/],
    ['an odd-length id', span({ spanId: 'abc' }), /spanId must be hex/],
    ['an unknown enum name', span({ kind: 'SPAN_KIND_SIDEWAYS' }), /kind must be an enum/],
    ['a fractional enum', span({ kind: 1.5 }), /kind must be an enum/],
    ['a negative time', span({ startTimeUnixNano: '-1' }), /startTimeUnixNano must be an unsigned/],
    ['a time past uint64', span({ endTimeUnixNano: '18446744073709551616' }), /endTimeUnixNano/],
    [
      'an int64 out of range',
      span({ attributes: [{ key: 'k', value: { intValue: '9223372036854775808' } }] }),
      /intValue/,
    ],
    [
      'a string bool',
      span({ attributes: [{ key: 'k', value: { boolValue: 'true' } }] }),
      /boolValue must be a boolean/,
    ],
    [
      'bad base64',
      span({ attributes: [{ key: 'k', value: { bytesValue: '!!' } }] }),
      /bytesValue must be base64/,
    ],
    [
      'two oneof members',
      span({ attributes: [{ key: 'k', value: { stringValue: 'a', intValue: 1 } }] }),
      /both/,
    ],
    ['a non-object status', span({ status: 'ok' }), /status must be an object/],
  ])('%s throws OtlpDecodeError', (_, text, message) => {
    expectDecodeError(() => decodeOtlpJson(text), message);
  });

  it('nesting deeper than 64 throws OtlpDecodeError', () => {
    let value: unknown = { intValue: 1 };
    for (let i = 0; i < 100; i++) value = { arrayValue: { values: [value] } };
    expectDecodeError(() => attribute(value), /nests deeper than 64/);
  });
});

describe('SPEC 4.3 trace ingest: OTLP/HTTP answers read by the real client', () => {
  it('full success is zero bytes and {}', () => {
    expect(encodeExportResponseProtobuf()).toEqual(new Uint8Array(0));
    expect(ProtobufTraceSerializer.deserializeResponse(encodeExportResponseProtobuf())).toEqual({});
    expect(exportResponseJson()).toEqual({});
  });

  it.each([
    [{ rejectedSpans: 3, errorMessage: 'span 2 has no trace id' }],
    [{ rejectedSpans: 2 ** 40, errorMessage: 'ünïcödé ✓' }],
    [{ rejectedSpans: 0, errorMessage: 'warning only' }],
  ])('partial success %o is read back by ProtobufTraceSerializer', (partial) => {
    expect(ProtobufTraceSerializer.deserializeResponse(encodeExportResponseProtobuf(partial))).toEqual({
      partialSuccess: partial.rejectedSpans === 0 ? { errorMessage: partial.errorMessage } : partial,
    });
    const json = exportResponseJson(partial);
    expect(json).toEqual({
      partialSuccess: { rejectedSpans: String(partial.rejectedSpans), errorMessage: partial.errorMessage },
    });
    expect(JsonTraceSerializer.deserializeResponse(new TextEncoder().encode(JSON.stringify(json)))).toEqual(
      json,
    );
  });

  it('an empty partial success still carries the field', () => {
    expect([...encodeExportResponseProtobuf({ rejectedSpans: 0, errorMessage: '' })]).toEqual([0x0a, 0x00]);
  });

  it('refuses a rejected count that is not a non-negative integer', () => {
    expect(() => encodeExportResponseProtobuf({ rejectedSpans: -1, errorMessage: '' })).toThrow(RangeError);
    expect(() => exportResponseJson({ rejectedSpans: 1.5, errorMessage: '' })).toThrow(RangeError);
  });

  it('google.rpc.Status bytes and JSON', () => {
    expect([...encodeStatusProtobuf(3, 'bad')]).toEqual([0x08, 0x03, 0x12, 0x03, 0x62, 0x61, 0x64]);
    expect([...encodeStatusProtobuf(0, '')]).toEqual([]);
    // int32 negatives are sign-extended to ten bytes.
    expect([...encodeStatusProtobuf(-1, '')]).toEqual([0x08, ...Array(9).fill(0xff), 0x01]);
    expect(statusJson(8, 'slow down')).toEqual({ code: 8, message: 'slow down' });
  });
});
