import { randomBytes } from 'node:crypto';
import type { UploadedFile } from './contract.js';

/**
 * A multipart/form-data body (RFC 7578) for upstreams that take one (image edits and variations):
 * text fields first, then the files in the order the caller sent them. Built once into a Buffer so a
 * retry or a fallback sends the same bytes again.
 */
export const formDataBody = (
  fields: Record<string, unknown>,
  files: readonly UploadedFile[],
): { body: Buffer; contentType: string } => {
  const boundary = `----svc${randomBytes(12).toString('hex')}`;
  const chunks: Buffer[] = [];
  const head = (disposition: string, type?: string) =>
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n`,
    );
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    chunks.push(head(`name="${quoted(name)}"`), Buffer.from(text), CRLF);
  }
  for (const f of files) {
    const type = /^[\x21-\x7e]+\/[\x21-\x7e]+$/.test(f.contentType)
      ? f.contentType
      : 'application/octet-stream';
    chunks.push(head(`name="${quoted(f.field)}"; filename="${quoted(f.filename)}"`, type), f.bytes, CRLF);
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
};

const CRLF = Buffer.from('\r\n');

/** A name or filename inside a quoted header parameter: quotes and line breaks escaped as browsers do (WHATWG). */
const quoted = (s: string) => s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
