import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../lib/errors.js';
import { formDataBody } from '../../../providers/form-data.js';
import { type MultipartLimits, multipartParts } from './multipart.js';

// The edge's multipart reader against two independent writers: the platform's FormData (undici's
// encoder, what SDKs send) and the gateway's own upstream encoder (providers/form-data.ts), which
// the platform's FormData parser must read back too.

const LIMITS: MultipartLimits = { fileBytes: 1_024, files: 4, fields: 8, fieldBytes: 64 };

const read = async (body: Buffer, contentType: string, limits = LIMITS) => {
  const parts: {
    kind: string;
    name: string;
    value?: string;
    filename?: string;
    type?: string;
    bytes?: Buffer;
  }[] = [];
  for await (const p of multipartParts(Readable.from([body]), { 'content-type': contentType }, limits)) {
    if (p.kind === 'field') parts.push({ kind: 'field', name: p.name, value: p.value });
    else {
      const chunks: Buffer[] = [];
      for await (const c of p.bytes) chunks.push(c);
      parts.push({
        kind: 'file',
        name: p.name,
        filename: p.filename,
        type: p.contentType,
        bytes: Buffer.concat(chunks),
      });
    }
  }
  return parts;
};

const platform = async (form: FormData) => {
  const r = new Request('http://x/', { method: 'POST', body: form });
  return { body: Buffer.from(await r.arrayBuffer()), type: r.headers.get('content-type')! };
};

const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

describe('multipartParts', () => {
  it('reads what the platform FormData writes: fields and files in order, bytes exact', async () => {
    const f = new FormData();
    f.append('prompt', 'a hat, "quoted" é');
    f.append('image[]', new Blob([everyByte], { type: 'image/png' }), 'one.png');
    f.append('image[]', new Blob([Buffer.from('\r\n--not-a-boundary\r\n')]), 'two.bin');
    const { body, type } = await platform(f);
    expect(await read(body, type)).toEqual([
      { kind: 'field', name: 'prompt', value: 'a hat, "quoted" é' },
      { kind: 'file', name: 'image[]', filename: 'one.png', type: 'image/png', bytes: everyByte },
      {
        kind: 'file',
        name: 'image[]',
        filename: 'two.bin',
        type: 'application/octet-stream',
        bytes: Buffer.from('\r\n--not-a-boundary\r\n'),
      },
    ]);
  });

  it('the upstream encoder round-trips through the platform parser and through this reader', async () => {
    const files = [
      { field: 'image', filename: 'a "b".png', contentType: 'image/png', bytes: everyByte },
      { field: 'mask', filename: 'm.png', contentType: 'not a type', bytes: Buffer.from([0]) },
    ];
    const { body, contentType } = formDataBody({ model: 'm', n: 2, skip: null }, files);
    const parsed = await new Response(new Uint8Array(body), {
      headers: { 'content-type': contentType },
    }).formData();
    expect(parsed.get('model')).toBe('m');
    expect(parsed.get('n')).toBe('2');
    expect(parsed.has('skip')).toBe(false);
    const image = parsed.get('image') as File;
    // Escaped as browsers do, and read back whole.
    expect(image.name).toBe('a "b".png');
    expect(Buffer.from(await image.arrayBuffer()).equals(everyByte)).toBe(true);
    expect((parsed.get('mask') as File).type).toBe('application/octet-stream');
    const mine = await read(body, contentType);
    expect(mine.map((p) => p.name)).toEqual(['model', 'n', 'image', 'mask']);
    expect(mine[2]?.bytes?.equals(everyByte)).toBe(true);
  });

  it('a file past its limit is a 413; a field past its limit is a 413; too many files a 400', async () => {
    const big = new FormData();
    big.append('image', new Blob([Buffer.alloc(1_025)]), 'big.png');
    const b = await platform(big);
    await expect(read(b.body, b.type)).rejects.toMatchObject({ code: 'payload_too_large', status: 413 });
    const field = new FormData();
    field.append('prompt', 'x'.repeat(65));
    const f = await platform(field);
    await expect(read(f.body, f.type)).rejects.toMatchObject({ code: 'payload_too_large' });
    const many = new FormData();
    for (let i = 0; i < 5; i++) many.append('image[]', new Blob(['x']), `${i}.png`);
    const m = await platform(many);
    await expect(read(m.body, m.type)).rejects.toMatchObject({ code: 'invalid_request_error', status: 400 });
  });

  it('a body cut short, a missing boundary and another content type are clear errors', async () => {
    await expect(
      read(
        Buffer.from('--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\nhalf'),
        'multipart/form-data; boundary=xyz',
      ),
    ).rejects.toBeInstanceOf(ServiceError);
    await expect(read(Buffer.from(''), 'multipart/form-data')).rejects.toMatchObject({ status: 400 });
    await expect(read(Buffer.from('{}'), 'application/json')).rejects.toMatchObject({
      code: 'unsupported_media_type',
      status: 415,
    });
  });
});

describe('a file part that fails before it is read', () => {
  it('is a 400 when the consumer reads it later, never an unhandled error event', async () => {
    const body = new (await import('node:stream')).PassThrough();
    const parts = multipartParts(body, { 'content-type': 'multipart/form-data; boundary=X' }, LIMITS);
    body.end(Buffer.from('--X\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc'));
    const first = await parts.next();
    expect(first.value).toMatchObject({ kind: 'file', name: 'file' });
    // The consumer awaits something else first (a database row, say) while the part fails.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const read = async () => {
      if (first.value?.kind !== 'file') return;
      for await (const _ of first.value.bytes);
    };
    await expect(read()).rejects.toMatchObject({ status: 400, code: 'invalid_request_error' });
  });
});
