import { blake3Hex } from '../../lib/blake3.js';
import { toBytes } from '../bus.js';
import { type BodySide, subjects } from '../subjects.js';
import { type BodyRef, INLINE_BODY_MAX_BYTES, type InlineBody, isChunkedBody } from './request-completed.js';

/** One message the publisher sends: a body chunk or the envelope itself. */
export interface OutboundMessage {
  subject: string;
  messageId: string;
  /** A string is sent as its UTF-8 bytes; the envelope stays a string so the spool keeps it readable. */
  data: Uint8Array | string;
}

export interface BodyTarget {
  orgId: string;
  requestId: string;
  side: BodySide;
}

export interface BuiltBody {
  ref: BodyRef;
  /** Empty for an inline body; otherwise in order, to be published before the envelope. */
  chunks: OutboundMessage[];
}

/** Chunks are as large as an inline body may be, so no single bus message grows past that bound. */
export const BODY_CHUNK_BYTES = INLINE_BODY_MAX_BYTES;

export { blake3Hex };

// ignoreBOM keeps a leading BOM in the text, so the text re-encodes to exactly the hashed bytes.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const utf8Text = (bytes: Uint8Array): string | undefined => {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
};

const base64Length = (n: number): number => 4 * Math.ceil(n / 3);

/**
 * Text is kept readable unless JSON escaping would make it larger than base64 (control characters
 * cost six bytes each escaped), which bounds an inline body on the wire at 4/3 of its size.
 */
const inlineRef = (bytes: Uint8Array, digest: string): InlineBody => {
  const text = utf8Text(bytes);
  if (text !== undefined && Buffer.byteLength(JSON.stringify(text)) - 2 <= base64Length(bytes.byteLength)) {
    return { encoding: 'utf8', data: text, byte_count: bytes.byteLength, blake3: digest };
  }
  return {
    encoding: 'base64',
    data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
    byte_count: bytes.byteLength,
    blake3: digest,
  };
};

export const chunkSubjectPrefix = (target: BodyTarget): string =>
  `${subjects.request(target.orgId, target.requestId)}.body.${target.side}.chunk`;

/** Deterministic, so a republished chunk is dropped by the bus as a duplicate. */
export const chunkMessageId = (target: BodyTarget, n: number): string =>
  `${target.requestId}:${target.side}:${n}`;

/**
 * The reference the envelope carries for one body, and the chunk messages that must be on the
 * bus before the envelope when the body is larger than an inline body may be (SPEC 6, 8).
 */
export const buildBodyRef = (body: Uint8Array | string, target: BodyTarget): BuiltBody => {
  const bytes = toBytes(body);
  const digest = blake3Hex(bytes);
  if (bytes.byteLength <= INLINE_BODY_MAX_BYTES) return { ref: inlineRef(bytes, digest), chunks: [] };
  const count = Math.ceil(bytes.byteLength / BODY_CHUNK_BYTES);
  const chunks: OutboundMessage[] = [];
  for (let n = 0; n < count; n++) {
    chunks.push({
      subject: subjects.bodyChunk(target.orgId, target.requestId, target.side, n),
      messageId: chunkMessageId(target, n),
      data: bytes.subarray(n * BODY_CHUNK_BYTES, (n + 1) * BODY_CHUNK_BYTES),
    });
  }
  return {
    ref: {
      chunks: count,
      byte_count: bytes.byteLength,
      blake3: digest,
      subject_prefix: chunkSubjectPrefix(target),
    },
    chunks,
  };
};

export type BodyBytesResult = { ok: true; bytes: Uint8Array } | { ok: false; error: string };

/**
 * The body a reference stands for, checked against its byte count and blake3; `chunks` are the
 * chunk payloads in chunk order (ignored for an inline body).
 */
export const bodyBytes = (ref: BodyRef, chunks: readonly Uint8Array[] = []): BodyBytesResult => {
  let bytes: Uint8Array;
  if (isChunkedBody(ref)) {
    if (chunks.length !== ref.chunks)
      return { ok: false, error: `expected ${ref.chunks} chunks, got ${chunks.length}` };
    bytes = Buffer.concat(chunks);
  } else {
    bytes = ref.encoding === 'utf8' ? toBytes(ref.data) : Buffer.from(ref.data, 'base64');
  }
  if (bytes.byteLength !== ref.byte_count)
    return { ok: false, error: `expected ${ref.byte_count} bytes, got ${bytes.byteLength}` };
  if (blake3Hex(bytes) !== ref.blake3) return { ok: false, error: 'blake3 does not match' };
  return { ok: true, bytes };
};
