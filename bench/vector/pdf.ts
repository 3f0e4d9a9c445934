/**
 * A minimal valid PDF (1.4, Helvetica, one text line per `'` operator) with a correct
 * cross-reference table, so the bench attaches real PDFs without a PDF writer.
 */
export const makePdf = (pages: string[][]): Uint8Array => {
  const objects: string[] = ['<< /Type /Catalog /Pages 2 0 R >>'];
  const pageIds = pages.map((_, i) => 4 + i * 2);
  objects.push(
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`,
  );
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  for (const [i, lines] of pages.entries()) {
    const shown = lines.map((l) => `(${l.replace(/[\\()]/g, (c) => `\\${c}`)}) '`);
    const content = ['BT', '/F1 10 Tf', '40 760 Td', '12 TL', ...shown, 'ET'].join('\n');
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageIds[i]! + 1} 0 R >>`,
    );
    objects.push(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`);
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

/** Text as PDF pages of at most `linesPerPage` lines of at most `width` characters. */
export const textToPdf = (text: string, width = 95, linesPerPage = 60): Uint8Array => {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      if (line.length + word.length + 1 > width && line !== '') {
        lines.push(line);
        line = word;
      } else line = line === '' ? word : `${line} ${word}`;
    }
    if (line !== '') lines.push(line);
  }
  const pages: string[][] = [];
  for (let i = 0; i < lines.length; i += linesPerPage) pages.push(lines.slice(i, i + linesPerPage));
  return makePdf(pages.length === 0 ? [[]] : pages);
};
