/**
 * Server-sent events: an incremental parser for upstream streams (bytes arrive split anywhere) and
 * the frame writer for our own. Only what LLM upstreams use: `event`, `data` (multi-line joined
 * with '\n'), comments ignored, events dispatched on a blank line; lines end in CRLF, LF or CR
 * as the event-stream format allows.
 */

export interface SseEvent {
  event: string | undefined;
  data: string;
}

export class SseParser {
  private readonly decoder = new TextDecoder();
  /** Pieces of the line not yet ended: joined once, when its end arrives, so a long line is linear. */
  private partial: string[] = [];
  /** The last chunk ended in CR: an LF that opens the next one belongs to the same line end. */
  private afterCr = false;
  private event: string | undefined;
  private data: string[] = [];
  /** Bytes taken in so far; the caller enforces its size cap with it. */
  bytes = 0;

  /**
   * Feeds a chunk; returns the events it completed. Each character is looked at once: a 16 MB
   * `data:` line that arrives in 16 KiB pieces costs one pass, not one pass per piece.
   */
  push(chunk: Uint8Array): SseEvent[] {
    this.bytes += chunk.byteLength;
    const text = this.decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    if (text.length === 0) return out;
    let start = 0;
    if (this.afterCr && text.charCodeAt(0) === LF) start = 1;
    this.afterCr = false;
    LINE_END.lastIndex = start;
    for (let m = LINE_END.exec(text); m !== null; m = LINE_END.exec(text)) {
      const end = m.index;
      let line = text.slice(start, end);
      if (this.partial.length > 0) {
        this.partial.push(line);
        line = this.partial.join('');
        this.partial = [];
      }
      start = end + m[0].length;
      // A CR that ends the chunk may be the first half of a CRLF split across two reads.
      if (m[0] === '\r' && start === text.length) this.afterCr = true;
      this.line(line, out);
    }
    if (start < text.length) this.partial.push(text.slice(start));
    return out;
  }

  /** End of input: a final event without its blank line still counts. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    const tail = this.partial.join('') + this.decoder.decode();
    this.partial = [];
    if (tail.length > 0) this.line(tail, out);
    this.line('', out);
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) out.push({ event: this.event, data: this.data.join('\n') });
      this.event = undefined;
      this.data = [];
      return;
    }
    if (line.charCodeAt(0) === COLON) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === SPACE) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }
}

const LF = 0x0a;
const COLON = 0x3a;
const SPACE = 0x20;
/** The three line ends of the event-stream format: CRLF, LF, or a lone CR. */
const LINE_END = /\r\n|\n|\r/g;

/** One `data:` frame (the primary dialect's streaming shape). */
export const dataFrame = (payload: string): string => `data: ${payload}\n\n`;

/** One named frame (the alternate dialect's `event: <name>` then `data: <json>`). */
export const eventFrame = (event: string, payload: string): string => `event: ${event}\ndata: ${payload}\n\n`;
