import { describe, expect, it } from 'vitest';
import {
  corruptFrame,
  crc32,
  encodeFrame,
  eventFrame,
  exceptionFrame,
  replyEvents,
  seededRandom,
  splitRandomly,
} from '../../../test/fakes/bedrock-runtime-frames.js';
import { StreamFailure } from '../provider.js';
import { decodeFrame, FrameSplitter, type RuntimeEvent, runtimeEvents } from './eventstream.js';

const frames = replyEvents(
  [
    { text: 'Checking the forecast now.' },
    { toolUse: { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Oslo' } } },
  ],
  'tool_use',
  { inputTokens: 21, outputTokens: 9 },
);
const bytes = Buffer.concat(frames);

async function* chunks(pieces: Buffer[]): AsyncGenerator<Uint8Array> {
  for (const p of pieces) yield p;
}

const collect = async (pieces: Buffer[], maxBytes = 1_000_000): Promise<RuntimeEvent[]> => {
  const out: RuntimeEvent[] = [];
  for await (const e of runtimeEvents(chunks(pieces), maxBytes)) out.push(e);
  return out;
};

const failureOf = async (pieces: Buffer[], maxBytes?: number) => {
  const seen: RuntimeEvent[] = [];
  try {
    for await (const e of runtimeEvents(chunks(pieces), maxBytes ?? 1_000_000)) seen.push(e);
  } catch (err) {
    return { err: err as StreamFailure, seen };
  }
  throw new Error('the stream did not fail');
};

describe('the test encoder agrees with the format', () => {
  it('CRC32 of the standard check string', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
  });

  it('the AWS codec decodes what the test encoder wrote', () => {
    expect(decodeFrame(eventFrame('messageStop', { stopReason: 'end_turn' }))).toEqual({
      kind: 'event',
      type: 'messageStop',
      body: { stopReason: 'end_turn' },
    });
    expect(decodeFrame(exceptionFrame('ThrottlingException', 'slow down'))).toEqual({
      kind: 'exception',
      name: 'throttlingException',
      message: 'slow down',
    });
  });
});

describe('FrameSplitter', () => {
  it('frames split at random boundaries decode identically to whole frames', async () => {
    const whole = await collect(frames);
    expect(whole.map((e) => (e.kind === 'event' ? e.type : e.name))).toEqual([
      'messageStart',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'contentBlockStart',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'messageStop',
      'metadata',
    ]);
    for (let seed = 1; seed <= 200; seed++) {
      const random = seededRandom(seed);
      const pieces = splitRandomly(bytes, random, 1 + Math.floor(random() * 80));
      expect(await collect(pieces), `seed ${seed}`).toEqual(whole);
    }
  });

  it('one byte at a time, and everything in one chunk, decode identically too', async () => {
    const whole = await collect(frames);
    expect(await collect([...bytes].map((b) => Buffer.from([b])))).toEqual(whole);
    expect(await collect([bytes])).toEqual(whole);
  });

  it('holds at most one frame: a declared length over the cap is refused before buffering it', () => {
    const splitter = new FrameSplitter(1_024);
    const huge = Buffer.alloc(8);
    huge.writeUInt32BE(10 * 1024 * 1024, 0);
    expect(() => splitter.push(huge)).toThrow(/declares/);
    const tiny = Buffer.alloc(4);
    tiny.writeUInt32BE(3, 0);
    expect(() => new FrameSplitter().push(tiny)).toThrow(/declares/);
  });

  it('leftover bytes at the end are a cut frame', () => {
    const splitter = new FrameSplitter();
    splitter.push(frames[0]!.subarray(0, 10));
    expect(() => splitter.end()).toThrow(/inside a frame/);
  });
});

describe('corrupted framing ends the stream with a StreamFailure', () => {
  it.each(['prelude', 'message'] as const)('a bad %s CRC after two good frames', async (where) => {
    const broken = [frames[0]!, frames[1]!, corruptFrame(frames[2]!, where), ...frames.slice(3)];
    const random = seededRandom(99);
    const { err, seen } = await failureOf(splitRandomly(Buffer.concat(broken), random, 17));
    expect(err).toBeInstanceOf(StreamFailure);
    expect(err.kind).toBe('decode');
    expect(seen).toHaveLength(2);
  });

  it('a stream cut inside a frame', async () => {
    const { err, seen } = await failureOf([bytes.subarray(0, bytes.length - 5)]);
    expect(err.kind).toBe('decode');
    expect(seen.length).toBe(frames.length - 1);
  });

  it('a payload that is not JSON', async () => {
    const bad = encodeFrame({ ':message-type': 'event', ':event-type': 'messageStart' }, 'not json');
    expect((await failureOf([bad])).err.kind).toBe('decode');
  });

  it('a body over the response cap', async () => {
    const { err } = await failureOf(splitRandomly(bytes, seededRandom(3), 32), 200);
    expect(err.kind).toBe('size_cap');
  });

  it('a transport failure mid-body is a read failure with a fixed message', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield frames[0]!;
      throw new Error('socket hang up at https://bedrock-runtime.us-east-1.amazonaws.com');
    }
    const seen: RuntimeEvent[] = [];
    const err = await (async () => {
      try {
        for await (const e of runtimeEvents(failing(), 1_000_000)) seen.push(e);
      } catch (e) {
        return e as StreamFailure;
      }
    })();
    expect(err).toBeInstanceOf(StreamFailure);
    expect(err!.kind).toBe('read');
    expect(err!.message).not.toContain('amazonaws');
    expect(seen).toHaveLength(1);
  });
});
