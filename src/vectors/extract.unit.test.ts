import { describe, expect, it } from 'vitest';
import { decodeText, detectFormat, extractFileText } from './extract.js';

/**
 * A minimal valid PDF (1.4, Helvetica, one text object per page) with a correct cross-reference
 * table, written by hand so the test needs no PDF writer.
 */
const makePdf = (pages: string[][]): Uint8Array => {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body);
  add('<< /Type /Catalog /Pages 2 0 R >>');
  const pageIds = pages.map((_, i) => 4 + i * 2);
  add(`<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`);
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  for (const [i, lines] of pages.entries()) {
    const escaped = lines.map((l) => `(${l.replace(/[\\()]/g, (c) => `\\${c}`)}) '`);
    const content = ['BT', '/F1 12 Tf', '72 720 Td', '14 TL', ...escaped, 'ET'].join('\n');
    add(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageIds[i]! + 1} 0 R >>`,
    );
    add(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`);
  }
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (const [i, body] of objects.entries()) {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  }
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(Buffer.from(out, 'latin1'));
};

const utf8 = (s: string) => new TextEncoder().encode(s);

describe('detectFormat', () => {
  it('goes by extension first, then by a specific content type', () => {
    expect(detectFormat('report.PDF', 'application/octet-stream')).toBe('pdf');
    expect(detectFormat('notes.md', null)).toBe('markdown');
    expect(detectFormat('data.json', 'text/plain')).toBe('json');
    expect(detectFormat('main.py')).toBe('text');
    expect(detectFormat('upload', 'text/plain; charset=utf-8')).toBe('text');
    expect(detectFormat('upload', 'application/ld+json')).toBe('json');
    expect(detectFormat('upload', 'application/pdf')).toBe('pdf');
    expect(detectFormat('photo.png', 'image/png')).toBeNull();
    expect(detectFormat('slides.pptx', 'application/octet-stream')).toBeNull();
    expect(detectFormat('.bashrc', null)).toBeNull();
  });
});

describe('decodeText', () => {
  it('reads UTF-8 and UTF-16 with a byte order mark, and refuses binary', () => {
    expect(decodeText(utf8('\uFEFFhé'))).toBe('hé');
    expect(decodeText(new Uint8Array([0xff, 0xfe, 0x68, 0x00, 0xe9, 0x00]))).toBe('hé');
    expect(decodeText(new Uint8Array([0xfe, 0xff, 0x00, 0x68, 0x00, 0xe9]))).toBe('hé');
    expect(decodeText(new Uint8Array([0x68, 0xc3]))).toBeNull(); // truncated UTF-8
    expect(decodeText(new Uint8Array([0x68, 0x00, 0x69]))).toBeNull(); // NUL: binary
  });
});

describe('extractFileText', () => {
  it('returns plain text, Markdown and JSON as written', async () => {
    expect(await extractFileText({ bytes: utf8('plain\ntext'), filename: 'a.txt' })).toEqual({
      ok: true,
      format: 'text',
      text: 'plain\ntext',
    });
    expect(await extractFileText({ bytes: utf8('# T\n\n- item'), filename: 'a.md' })).toMatchObject({
      ok: true,
      format: 'markdown',
      text: '# T\n\n- item',
    });
    expect(await extractFileText({ bytes: utf8('{"a": [1, "x"]}'), filename: 'a.json' })).toMatchObject({
      ok: true,
      format: 'json',
      text: '{"a": [1, "x"]}',
    });
  });

  it('reads the text of every page of a PDF, by extension, type or magic bytes', async () => {
    const pdf = makePdf([['Hello vector world', 'Second line (with parens)'], ['Page two text']]);
    const expected = {
      ok: true,
      format: 'pdf',
      pages: 2,
      text: 'Hello vector world\nSecond line (with parens)\n\nPage two text',
    };
    expect(await extractFileText({ bytes: pdf, filename: 'doc.pdf' })).toEqual(expected);
    expect(await extractFileText({ bytes: pdf, filename: 'upload', contentType: 'application/pdf' })).toEqual(
      expected,
    );
    expect(
      await extractFileText({ bytes: pdf, filename: 'upload', contentType: 'application/octet-stream' }),
    ).toEqual(expected);
    // The caller's buffer is left intact for a retry.
    expect(pdf.byteLength).toBeGreaterThan(0);
    expect(await extractFileText({ bytes: pdf, filename: 'doc.pdf' })).toEqual(expected);
  });

  it.each([
    [{ bytes: utf8('x'), filename: 'photo.png', contentType: 'image/png' }, 'unsupported_file', '.png'],
    [{ bytes: utf8('x'), filename: 'deck.pptx' }, 'unsupported_file', 'supported:'],
    [{ bytes: new Uint8Array(), filename: 'a.txt' }, 'invalid_file', 'empty'],
    [{ bytes: utf8(' \n\t'), filename: 'a.txt' }, 'invalid_file', 'no text'],
    [{ bytes: new Uint8Array([0x61, 0xff, 0x62]), filename: 'a.txt' }, 'invalid_file', 'UTF-8'],
    [{ bytes: utf8('{"a": '), filename: 'a.json' }, 'invalid_file', 'not valid JSON'],
    [{ bytes: utf8('%PDF-1.4 not really'), filename: 'a.pdf' }, 'invalid_file', 'not a readable PDF'],
    [{ bytes: makePdf([[]]), filename: 'scan.pdf' }, 'invalid_file', 'no extractable text'],
  ])('reports %j as %s', async (input, code, words) => {
    const result = await extractFileText(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe(code);
    expect(result.error.message).toContain(words);
  });
});
