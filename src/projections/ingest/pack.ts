import { blake3Hex } from '../../events/envelopes/body.js';
import type { BodySide } from '../../events/subjects.js';
import type { ObjectStore } from '../../objects/port.js';
import type { StoredBody } from './rows.js';

/**
 * Body packs: the bodies of one flush for one organization, appended as frames
 * into one object under that organization's prefix. The object store replaces whole objects, so a
 * pack is written once, complete, and never appended to afterwards; each frame's payload is then
 * addressable by its exact byte range, and the row that references it carries the byte count and
 * blake3 a reader checks against what `getRange` returns.
 *
 * A frame is a one-line text header followed by the payload:
 *   `SVCF1 <request_id> <req|res> <byte count> <blake3>\n<payload>`
 * The rows are the index; the headers make a pack readable on its own (audit, recovery).
 */

export interface Frame {
  requestId: string;
  side: BodySide;
  /** Already checked against the envelope's byte count and blake3. */
  bytes: Uint8Array;
  blake3: string;
}

export interface BuiltPack {
  key: string;
  data: Buffer;
  /** In the order of the frames given. */
  stored: StoredBody[];
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** `packs/<yyyy>/<mm>/<dd>/<batch id>.pack`, dated by the flush (UTC). */
export const packKey = (batchId: string, at: Date): string =>
  `packs/${at.getUTCFullYear()}/${pad2(at.getUTCMonth() + 1)}/${pad2(at.getUTCDate())}/${batchId}.pack`;

export const frameHeader = (frame: Frame): string =>
  `SVCF1 ${frame.requestId} ${frame.side} ${frame.bytes.byteLength} ${frame.blake3}\n`;

export const buildPack = (key: string, frames: readonly Frame[]): BuiltPack => {
  const parts: Uint8Array[] = [];
  const stored: StoredBody[] = [];
  let offset = 0;
  for (const frame of frames) {
    const header = Buffer.from(frameHeader(frame));
    parts.push(header, frame.bytes);
    offset += header.byteLength;
    stored.push({
      pack: key,
      offset,
      length: frame.bytes.byteLength,
      byteCount: frame.bytes.byteLength,
      blake3: frame.blake3,
    });
    offset += frame.bytes.byteLength;
  }
  return { key, data: Buffer.concat(parts, offset), stored };
};

export class PackVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PackVerificationError';
  }
}

/**
 * Writes the pack (the store fsyncs before it resolves) and checks the stored size, so a short
 * write can never leave rows pointing past the end of their pack.
 */
export const writePack = async (objects: ObjectStore, orgId: string, pack: BuiltPack): Promise<void> => {
  const info = await objects.put(orgId, pack.key, pack.data);
  if (info.size !== pack.data.byteLength) {
    throw new PackVerificationError(
      `pack ${pack.key} of ${orgId}: stored ${info.size} bytes, wrote ${pack.data.byteLength}`,
    );
  }
};

/** Reads one stored body back by its exact range and checks its byte count and blake3. */
export const readStoredBody = async (
  objects: ObjectStore,
  orgId: string,
  body: StoredBody,
): Promise<Buffer> => {
  const bytes = await objects.getRange(orgId, body.pack, body.offset, body.length);
  if (bytes.byteLength !== body.byteCount)
    throw new PackVerificationError(`expected ${body.byteCount} bytes, read ${bytes.byteLength}`);
  if (blake3Hex(bytes) !== body.blake3) throw new PackVerificationError('blake3 does not match');
  return bytes;
};
