/**
 * A small event-stream encoder for the fake runtime, written from the format description and kept
 * independent of the decoder under test (which uses the AWS codec): prelude (total length, headers
 * length, prelude CRC32), string headers, payload, message CRC32. Node 20 has no CRC32 of its own
 * we may count on, so the IEEE table is built here.
 */

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export const crc32 = (bytes: Uint8Array): number => {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC_TABLE[(crc ^ b) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
};

const STRING_TYPE = 7;

const encodeHeaders = (headers: Record<string, string>): Buffer => {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name, 'utf8');
    const v = Buffer.from(value, 'utf8');
    const head = Buffer.alloc(1 + n.length + 1 + 2);
    head.writeUInt8(n.length, 0);
    n.copy(head, 1);
    head.writeUInt8(STRING_TYPE, 1 + n.length);
    head.writeUInt16BE(v.length, 2 + n.length);
    parts.push(head, v);
  }
  return Buffer.concat(parts);
};

/** One whole message. */
export const encodeFrame = (headers: Record<string, string>, payload: Uint8Array | string): Buffer => {
  const h = encodeHeaders(headers);
  const p = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  const total = 12 + h.length + p.length + 4;
  const out = Buffer.alloc(total);
  out.writeUInt32BE(total, 0);
  out.writeUInt32BE(h.length, 4);
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8);
  h.copy(out, 12);
  p.copy(out, 12 + h.length);
  out.writeUInt32BE(crc32(out.subarray(0, total - 4)), total - 4);
  return out;
};

export const eventFrame = (eventType: string, body: Record<string, unknown>): Buffer =>
  encodeFrame(
    { ':message-type': 'event', ':event-type': eventType, ':content-type': 'application/json' },
    JSON.stringify(body),
  );

/** Stream exception frames name the exception in lower camel case, as the runtime does. */
export const exceptionFrame = (name: string, message: string): Buffer =>
  encodeFrame(
    {
      ':message-type': 'exception',
      ':exception-type': name.charAt(0).toLowerCase() + name.slice(1),
      ':content-type': 'application/json',
    },
    JSON.stringify({ message }),
  );

/** Flips one bit of the prelude CRC or of the message CRC. */
export const corruptFrame = (frame: Buffer, where: 'prelude' | 'message'): Buffer => {
  const copy = Buffer.from(frame);
  const at = where === 'prelude' ? 8 : copy.length - 1;
  copy[at] = copy[at]! ^ 0x01;
  return copy;
};

/** A seeded generator, so a failing random split can be replayed from its seed. */
export const seededRandom = (seed: number): (() => number) => {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
};

/** Cuts `bytes` at random boundaries (pieces of 1 to maxPiece bytes). */
export const splitRandomly = (bytes: Buffer, random: () => number, maxPiece = 64): Buffer[] => {
  const pieces: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const size = 1 + Math.floor(random() * maxPiece);
    pieces.push(bytes.subarray(at, at + size));
    at += size;
  }
  return pieces;
};

export interface ScriptedBlock {
  text?: string;
  toolUse?: { toolUseId: string; name: string; input: unknown };
}

/**
 * The ConverseStream events of one reply: messageStart, per block (text deltas word by word; a
 * tool block as start, input pieces, stop), messageStop, metadata with the usage.
 */
export const replyEvents = (
  blocks: ScriptedBlock[],
  stopReason: string,
  usage: { inputTokens: number; outputTokens: number },
  options: { inputPieces?: number } = {},
): Buffer[] => {
  const frames = [eventFrame('messageStart', { role: 'assistant' })];
  for (const [contentBlockIndex, block] of blocks.entries()) {
    if (block.text !== undefined) {
      for (const word of block.text.match(/\S+\s*/g) ?? [''])
        frames.push(eventFrame('contentBlockDelta', { contentBlockIndex, delta: { text: word } }));
    } else if (block.toolUse) {
      const { toolUseId, name, input } = block.toolUse;
      frames.push(
        eventFrame('contentBlockStart', { contentBlockIndex, start: { toolUse: { toolUseId, name } } }),
      );
      const json = JSON.stringify(input);
      const n = Math.max(1, options.inputPieces ?? 3);
      const size = Math.ceil(json.length / n);
      for (let i = 0; i < json.length; i += size) {
        frames.push(
          eventFrame('contentBlockDelta', {
            contentBlockIndex,
            delta: { toolUse: { input: json.slice(i, i + size) } },
          }),
        );
      }
    }
    frames.push(eventFrame('contentBlockStop', { contentBlockIndex }));
  }
  frames.push(eventFrame('messageStop', { stopReason }));
  frames.push(
    eventFrame('metadata', {
      usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens },
      metrics: { latencyMs: 12 },
    }),
  );
  return frames;
};
