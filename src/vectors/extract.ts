import { Worker } from 'node:worker_threads';
/**
 * Text extraction for vector store files (SPEC 4.1 /v1/vector_stores): bytes, a filename and a
 * content type in, the text to chunk out. Plain text, Markdown, JSON, source code and other text
 * formats are decoded as UTF-8 (or UTF-16 with a byte order mark); PDF text is read with PDF.js
 * (the `unpdf` build, pure JS, loaded on the first PDF).
 *
 * A file that cannot be indexed is an expected outcome, not an exception: the result names the
 * code OpenAI reports in a vector store file's `last_error` (`unsupported_file`, `invalid_file`,
 * `server_error`) and a message for the caller.
 */

export type ExtractionErrorCode = 'unsupported_file' | 'invalid_file' | 'server_error';

export interface ExtractionError {
  code: ExtractionErrorCode;
  message: string;
}

export type FileFormat = 'text' | 'markdown' | 'json' | 'pdf';

export type ExtractionResult =
  | { ok: true; format: FileFormat; text: string; pages?: number }
  | { ok: false; error: ExtractionError };

export interface ExtractionInput {
  bytes: Uint8Array;
  filename: string;
  /** As uploaded; parameters (`; charset=utf-8`) are ignored. Absent or generic: the extension decides. */
  contentType?: string | null;
}

const MARKDOWN_EXTENSIONS = new Set(['md', 'markdown', 'mdx']);
/** Text formats OpenAI's file_search accepts, plus a few common plain-text cousins. */
const TEXT_EXTENSIONS = new Set([
  'txt',
  'text',
  'log',
  'csv',
  'tsv',
  'html',
  'htm',
  'xml',
  'css',
  'tex',
  'rst',
  'yaml',
  'yml',
  'toml',
  'ini',
  'c',
  'h',
  'cc',
  'cpp',
  'hpp',
  'cs',
  'go',
  'java',
  'js',
  'mjs',
  'cjs',
  'ts',
  'tsx',
  'jsx',
  'php',
  'py',
  'rb',
  'rs',
  'sh',
  'sql',
  'swift',
  'kt',
]);
const UNSUPPORTED_HINT = 'supported: plain text, Markdown, JSON, PDF and source code files';

const TEXT_TYPES: Record<string, FileFormat> = {
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'application/json': 'json',
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
};
/** Types that say nothing about the content: the filename's extension decides instead. */
const GENERIC_TYPES = new Set(['', 'application/octet-stream', 'binary/octet-stream', 'application/unknown']);

const extensionOf = (filename: string): string => {
  const base = filename.slice(filename.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot + 1).toLowerCase();
};

/** Which extractor a file goes to, or null when none can read it. */
export const detectFormat = (filename: string, contentType?: string | null): FileFormat | null => {
  const ext = extensionOf(filename);
  if (ext === 'pdf') return 'pdf';
  if (ext === 'json') return 'json';
  if (MARKDOWN_EXTENSIONS.has(ext)) return 'markdown';
  if (TEXT_EXTENSIONS.has(ext)) return 'text';
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (GENERIC_TYPES.has(type)) return null;
  const known = TEXT_TYPES[type];
  if (known) return known;
  if (type.startsWith('text/') || type.endsWith('+json')) return type.endsWith('+json') ? 'json' : 'text';
  return null;
};

const fail = (code: ExtractionErrorCode, message: string): ExtractionResult => ({
  ok: false,
  error: { code, message },
});

const hasBom = (b: Uint8Array, ...bom: number[]): boolean => bom.every((v, i) => b[i] === v);

/** UTF-8, or UTF-16 when a byte order mark says so; null when the bytes are not such text. */
export const decodeText = (bytes: Uint8Array): string | null => {
  let encoding: 'utf-8' | 'utf-16le' | 'utf-16be' = 'utf-8';
  if (hasBom(bytes, 0xff, 0xfe)) encoding = 'utf-16le';
  else if (hasBom(bytes, 0xfe, 0xff)) encoding = 'utf-16be';
  let text: string;
  try {
    // The decoder drops a leading byte order mark itself.
    text = new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
  // NUL does not occur in text files; it marks a binary file with a text extension.
  return text.includes('\u0000') ? null : text;
};

const extractPlain = (input: ExtractionInput, format: 'text' | 'markdown' | 'json'): ExtractionResult => {
  const text = decodeText(input.bytes);
  if (text === null) {
    return fail('invalid_file', `${input.filename} is not valid UTF-8 or UTF-16 text`);
  }
  if (format === 'json') {
    try {
      JSON.parse(text);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      return fail('invalid_file', `${input.filename} is not valid JSON: ${reason}`);
    }
  }
  if (text.trim() === '') return fail('invalid_file', `${input.filename} contains no text`);
  return { ok: true, format, text };
};

/**
 * PDF text is read in a worker thread of its own: a small PDF can inflate to gigabytes of content
 * streams, and PDF.js works synchronously, so on the calling thread one hostile file would stall
 * every request of the process. The worker has a heap of PDF_HEAP_MB, PDF_TIMEOUT_MS to answer and
 * PDF_TEXT_MAX characters of text at most; past any of them the file is `invalid_file`.
 */
export const PDF_HEAP_MB = 512;
export const PDF_TIMEOUT_MS = 60_000;
export const PDF_TEXT_MAX = 16 * 1_048_576;

// Plain JavaScript evaluated in the worker: no loader needed, from source or from dist alike.
const PDF_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  let doc;
  try {
    const { getDocumentProxy } = await import(workerData.unpdf);
    doc = await getDocumentProxy(workerData.bytes, { verbosity: 0 });
    const pages = [];
    let size = 0;
    for (let i = 1; i <= doc.numPages; i++) {
      const page = await doc.getPage(i);
      const content = await page.getTextContent();
      const text = content.items.map((item) => (typeof item.str === 'string' ? item.str + (item.hasEOL ? '\\n' : '') : '')).join('');
      page.cleanup();
      size += text.length;
      if (size > workerData.textMax) {
        parentPort.postMessage({ ok: false, name: 'TextTooLarge', message: 'more than ' + workerData.textMax + ' characters of text' });
        return;
      }
      pages.push(text);
    }
    parentPort.postMessage({ ok: true, pages, totalPages: doc.numPages });
  } catch (err) {
    parentPort.postMessage({ ok: false, name: (err && err.name) || '', message: (err && err.message) || String(err) });
  } finally {
    if (doc) await doc.destroy().catch(() => {});
  }
})();
`;

type PdfAnswer =
  | { ok: true; pages: string[]; totalPages: number }
  | { ok: false; name: string; message: string };

const readPdf = (bytes: Uint8Array): Promise<PdfAnswer> =>
  new Promise((resolve) => {
    let settled = false;
    const worker = new Worker(PDF_WORKER, {
      eval: true,
      // PDF.js may take ownership of the buffer it is given: the worker gets a copy anyway.
      workerData: {
        bytes: new Uint8Array(bytes),
        unpdf: import.meta.resolve('unpdf'),
        textMax: PDF_TEXT_MAX,
      },
      resourceLimits: { maxOldGenerationSizeMb: PDF_HEAP_MB, maxYoungGenerationSizeMb: 64 },
      stdout: true,
      stderr: true,
    });
    const settle = (answer: PdfAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      resolve(answer);
    };
    const timer = setTimeout(
      () =>
        settle({
          ok: false,
          name: 'Timeout',
          message: `reading it took longer than ${PDF_TIMEOUT_MS / 1_000} s`,
        }),
      PDF_TIMEOUT_MS,
    );
    worker.on('message', (m: PdfAnswer) => settle(m));
    worker.on('error', (err: Error & { code?: string }) =>
      settle(
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? { ok: false, name: 'TooLarge', message: `reading it needs more than ${PDF_HEAP_MB} MiB` }
          : { ok: false, name: 'WorkerError', message: err.message },
      ),
    );
    worker.on('exit', (code) =>
      settle({ ok: false, name: 'WorkerError', message: `the PDF reader exited (${code})` }),
    );
  });

/** PDF.js names its own exceptions, and the reader its limits; these describe the file, anything else is ours. */
const PDF_FILE_ERRORS = new Set([
  'InvalidPDFException',
  'FormatError',
  'MissingPDFException',
  'UnexpectedResponseException',
  'Timeout',
  'TooLarge',
  'TextTooLarge',
]);

const extractPdf = async (input: ExtractionInput): Promise<ExtractionResult> => {
  const answer = await readPdf(input.bytes);
  if (!answer.ok) {
    if (answer.name === 'PasswordException')
      return fail('invalid_file', `${input.filename} is password-protected`);
    if (PDF_FILE_ERRORS.has(answer.name))
      return fail('invalid_file', `${input.filename} is not a readable PDF: ${answer.message}`);
    return fail('server_error', `reading ${input.filename} failed: ${answer.message}`);
  }
  const joined = answer.pages.map((page) => page.trim()).join('\n\n');
  if (joined.trim() === '')
    return fail(
      'invalid_file',
      `${input.filename} has no extractable text (a scanned PDF needs OCR, which is not done here)`,
    );
  return { ok: true, format: 'pdf', text: joined, pages: answer.totalPages };
};

const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d]; // %PDF-
const isPdf = (bytes: Uint8Array): boolean => hasBom(bytes, ...PDF_MAGIC);

/** The text of one file, or why it cannot be indexed. */
export const extractFileText = async (input: ExtractionInput): Promise<ExtractionResult> => {
  const format = detectFormat(input.filename, input.contentType) ?? (isPdf(input.bytes) ? 'pdf' : null);
  if (format === null) {
    const ext = extensionOf(input.filename);
    const what = ext === '' ? `${input.filename} (no extension)` : `.${ext} files`;
    return fail('unsupported_file', `${what} cannot be indexed; ${UNSUPPORTED_HINT}`);
  }
  if (input.bytes.byteLength === 0) return fail('invalid_file', `${input.filename} is empty`);
  if (format === 'pdf') return extractPdf(input);
  return extractPlain(input, format);
};
