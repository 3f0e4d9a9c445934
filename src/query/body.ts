import { blake3Hex } from '../events/envelopes/body.js';
import { ServiceError } from '../lib/errors.js';
import type { ObjectStore } from '../objects/port.js';
import { ObjectStoreError } from '../objects/port.js';
import type { RawRow } from './requests.js';

export type BodySideName = 'request' | 'response';

/**
 * Reads one stored body: exactly the row's range of the row's pack, under the row's org prefix
 * (the object store cannot address another org's object), then checks length and blake3 against
 * the row. The bytes are returned only after both checks pass, so a tampered or truncated pack
 * yields an error and never a partial or altered body.
 */
export const readVerifiedBody = async (
  objects: ObjectStore,
  row: RawRow,
  side: BodySideName,
): Promise<Buffer> => {
  const p = side === 'request' ? 'req' : 'res';
  const pack = String(row[`${p}_body_pack`] ?? '');
  if (pack === '') throw new ServiceError('not_found', `no ${side} body was captured for this request`);
  const offset = Number(row[`${p}_body_offset`]);
  const length = Number(row[`${p}_body_length`]);
  const byteCount = Number(row[`${p}_body_byte_count`]);
  const expected = String(row[`${p}_body_blake3`] ?? '');
  if (length !== byteCount)
    throw new ServiceError('internal_error', 'stored body reference is inconsistent', { status: 500 });
  let bytes: Buffer;
  try {
    bytes = await objects.getRange(String(row.org_id), pack, offset, length);
  } catch (err) {
    if (err instanceof ObjectStoreError)
      throw new ServiceError('internal_error', `stored body is unavailable (${err.code})`, { status: 502 });
    throw err;
  }
  if (bytes.byteLength !== byteCount || blake3Hex(bytes) !== expected)
    throw new ServiceError('internal_error', 'stored body failed integrity verification (blake3 mismatch)', {
      status: 502,
      details: { integrity: 'blake3_mismatch' },
    });
  return bytes;
};

export const bodyUrls = (row: RawRow): { request: string | null; response: string | null } => {
  const url = (side: BodySideName) =>
    `/api/body/by-request/${encodeURIComponent(String(row.request_id))}?org_id=${encodeURIComponent(String(row.org_id))}&side=${side}`;
  return {
    request: row.req_body_pack ? url('request') : null,
    response: row.res_body_pack ? url('response') : null,
  };
};
