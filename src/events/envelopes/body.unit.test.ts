import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { STREAMS, streamOf, subjectMatches } from '../subjects.js';
import { BODY_CHUNK_BYTES, blake3Hex, bodyBytes, buildBodyRef } from './body.js';
import { INLINE_BODY_MAX_BYTES, isChunkedBody } from './request-completed.js';

const target = { orgId: 'org_a', requestId: 'req_9', side: 'res' as const };

describe('body references', () => {
  it('hashes with blake3 (reference vector) and counts bytes, not characters', () => {
    expect(blake3Hex(new TextEncoder().encode('abc'))).toBe(
      '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85',
    );
    const { ref, chunks } = buildBodyRef('héllo ✓', target);
    expect(chunks).toEqual([]);
    expect(ref).toEqual({
      encoding: 'utf8',
      data: 'héllo ✓',
      byte_count: 10,
      blake3: blake3Hex(new TextEncoder().encode('héllo ✓')),
    });
  });

  it('inlines bytes that are not UTF-8, or escape badly, as base64', () => {
    const binary = Uint8Array.from([0xff, 0xfe, 0x00, 0x41]);
    expect(buildBodyRef(binary, target).ref).toMatchObject({
      encoding: 'base64',
      data: '//4AQQ==',
      byte_count: 4,
    });
    const controls = new Uint8Array(300).fill(0x01);
    expect(buildBodyRef(controls, target).ref).toMatchObject({ encoding: 'base64' });
    const bom = Uint8Array.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]);
    const ref = buildBodyRef(bom, target).ref;
    expect(ref).toMatchObject({ encoding: 'utf8', data: '\ufeff{}' });
    const back = bodyBytes(ref);
    expect(back.ok && Buffer.from(back.bytes).equals(Buffer.from(bom))).toBe(true);
  });

  it('keeps a body of exactly 256 KB inline and chunks one byte more', () => {
    expect(isChunkedBody(buildBodyRef(new Uint8Array(INLINE_BODY_MAX_BYTES).fill(0x61), target).ref)).toBe(
      false,
    );
    const over = buildBodyRef(new Uint8Array(INLINE_BODY_MAX_BYTES + 1).fill(0x61), target);
    expect(over.ref).toMatchObject({ chunks: 2, byte_count: INLINE_BODY_MAX_BYTES + 1 });
    expect(over.chunks.map((c) => (c.data as Uint8Array).byteLength)).toEqual([BODY_CHUNK_BYTES, 1]);
  });

  it('splits a 1 MB body onto chunk subjects of the requests stream and reassembles it', () => {
    const body = randomBytes(1_000_000);
    const { ref, chunks } = buildBodyRef(body, target);
    if (!isChunkedBody(ref)) throw new Error('expected a chunked body');
    expect(ref).toEqual({
      chunks: 4,
      byte_count: 1_000_000,
      blake3: blake3Hex(body),
      subject_prefix: 'svc.requests.org_a.req_9.body.res.chunk',
    });
    expect(chunks.map((c) => c.subject)).toEqual([0, 1, 2, 3].map((n) => `${ref.subject_prefix}.${n}`));
    expect(chunks.map((c) => c.messageId)).toEqual([
      'req_9:res:0',
      'req_9:res:1',
      'req_9:res:2',
      'req_9:res:3',
    ]);
    const requests = STREAMS.find((s) => s.key === 'requests')!;
    for (const c of chunks) {
      expect(subjectMatches(requests.subjects, c.subject)).toBe(true);
      expect(streamOf(c.subject)?.key).toBe('requests');
    }
    const parts = chunks.map((c) => c.data as Uint8Array);
    const back = bodyBytes(ref, parts);
    expect(back.ok).toBe(true);
    if (back.ok) expect(blake3Hex(back.bytes)).toBe(ref.blake3);
  });

  it('detects a missing, reordered or altered chunk', () => {
    const { ref, chunks } = buildBodyRef(randomBytes(600_000), target);
    const parts = chunks.map((c) => c.data as Uint8Array);
    expect(bodyBytes(ref, parts.slice(1))).toMatchObject({ ok: false });
    expect(bodyBytes(ref, [parts[1]!, parts[0]!, parts[2]!])).toMatchObject({ ok: false });
    const altered = Uint8Array.from(parts[2]!);
    altered[0] = (altered[0]! + 1) % 256;
    expect(bodyBytes(ref, [parts[0]!, parts[1]!, altered])).toEqual({
      ok: false,
      error: 'blake3 does not match',
    });
  });
});
