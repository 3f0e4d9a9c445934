import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { StreamFailure } from '../provider.js';

/**
 * The binary event-stream framing of the runtime's streaming replies. Decoding (prelude and message
 * CRCs, headers) is the AWS codec's; what is ours is cutting the byte stream into whole messages,
 * whatever the TCP chunk boundaries, without ever holding more than one bounded frame.
 */

/** Prelude (total length, headers length, prelude CRC) plus the trailing message CRC. */
const MIN_MESSAGE_BYTES = 16;
/** The event-stream format's own ceiling for one message. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

export class FramingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FramingError';
  }
}

export class FrameSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need: number | null = null;

  constructor(private readonly maxFrameBytes = MAX_FRAME_BYTES) {}

  /** Bytes in; every message completed by them out, in order. */
  push(bytes: Uint8Array): Buffer[] {
    if (bytes.byteLength === 0) return [];
    // A copy: the caller may reuse its buffer, and frames must not change under the decoder.
    this.chunks.push(Buffer.from(bytes));
    this.buffered += bytes.byteLength;
    const frames: Buffer[] = [];
    for (;;) {
      if (this.need === null) {
        if (this.buffered < 4) break;
        this.need = this.declaredLength();
      }
      if (this.buffered < this.need) break;
      const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
      frames.push(all.subarray(0, this.need));
      const rest = all.subarray(this.need);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.buffered = rest.length;
      this.need = null;
    }
    return frames;
  }

  /** The stream ended: anything still buffered is a cut frame. */
  end(): void {
    if (this.buffered > 0)
      throw new FramingError(`the stream ended inside a frame (${this.buffered} bytes pending)`);
  }

  private declaredLength(): number {
    const head = this.chunks[0]!.length >= 4 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    const length = head.readUInt32BE(0);
    // Refused before accumulating: a corrupted prelude must not make us buffer gigabytes.
    if (length < MIN_MESSAGE_BYTES || length > this.maxFrameBytes)
      throw new FramingError(
        `a frame declares ${length} bytes (accepted: ${MIN_MESSAGE_BYTES}-${this.maxFrameBytes})`,
      );
    return length;
  }
}

export type RuntimeEvent =
  | { kind: 'event'; type: string; body: Record<string, unknown> }
  | { kind: 'exception'; name: string; message: string };

const codec = new EventStreamCodec(toUtf8, fromUtf8);

const header = (m: Message, name: string): string | undefined => {
  const h = m.headers[name];
  return h?.type === 'string' ? h.value : undefined;
};

const json = (bytes: Uint8Array): Record<string, unknown> => {
  if (bytes.byteLength === 0) return {};
  const parsed: unknown = JSON.parse(toUtf8(bytes));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new FramingError('an event payload is not a JSON object');
  return parsed as Record<string, unknown>;
};

/** One whole message to an event; CRC failures and malformed payloads throw. */
export const decodeFrame = (frame: Uint8Array): RuntimeEvent => {
  const m = codec.decode(frame);
  const type = header(m, ':message-type');
  if (type === 'event') {
    const eventType = header(m, ':event-type');
    if (eventType === undefined) throw new FramingError('an event frame names no :event-type');
    return { kind: 'event', type: eventType, body: json(m.body) };
  }
  if (type === 'exception') {
    const body = json(m.body);
    const message =
      typeof body.message === 'string' ? body.message : typeof body.Message === 'string' ? body.Message : '';
    return { kind: 'exception', name: header(m, ':exception-type') ?? 'UnknownException', message };
  }
  if (type === 'error') {
    return {
      kind: 'exception',
      name: header(m, ':error-code') ?? 'UnknownError',
      message: header(m, ':error-message') ?? '',
    };
  }
  throw new FramingError(`a frame has the unknown :message-type ${String(type)}`);
};

/**
 * The runtime events of a response body. Transport failures, framing, CRC and payload errors, and
 * a body larger than `maxBytes` all end in a StreamFailure with a fixed, URL-free message.
 */
export async function* runtimeEvents(
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<RuntimeEvent> {
  const splitter = new FrameSplitter(Math.min(MAX_FRAME_BYTES, Math.max(maxBytes, MIN_MESSAGE_BYTES)));
  let total = 0;
  const decodeAll = function* (frames: Buffer[]) {
    for (const frame of frames) {
      try {
        yield decodeFrame(frame);
      } catch {
        throw new StreamFailure('decode', 'upstream sent an undecodable event-stream frame');
      }
    }
  };
  const iterator = body[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Uint8Array>;
    try {
      next = await iterator.next();
    } catch {
      throw new StreamFailure('read', 'upstream stream read failed');
    }
    if (next.done) break;
    total += next.value.byteLength;
    if (total > maxBytes) throw new StreamFailure('size_cap', `upstream stream exceeded ${maxBytes} bytes`);
    let frames: Buffer[];
    try {
      frames = splitter.push(next.value);
    } catch {
      throw new StreamFailure('decode', 'upstream sent an undecodable event-stream frame');
    }
    yield* decodeAll(frames);
  }
  try {
    splitter.end();
  } catch {
    throw new StreamFailure('decode', 'upstream stream ended inside an event-stream frame');
  }
}
