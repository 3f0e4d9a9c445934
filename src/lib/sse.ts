/**
 * Server-sent events: an incremental parser for upstream streams (bytes arrive split anywhere) and
 * the frame writer for our own. Only what LLM upstreams use: `event`, `data` (multi-line joined
 * with '\n'), comments ignored, events dispatched on a blank line.
 */

export interface SseEvent {
  event: string | undefined;
  data: string;
}

export class SseParser {
  private buffer = '';
  private readonly decoder = new TextDecoder();
  private event: string | undefined;
  private data: string[] = [];
  /** Bytes taken in so far; the caller enforces its size cap with it. */
  bytes = 0;

  /** Feeds a chunk; returns the events it completed. */
  push(chunk: Uint8Array): SseEvent[] {
    this.bytes += chunk.byteLength;
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const nl = this.buffer.indexOf('\n', start);
      if (nl === -1) break;
      let line = this.buffer.slice(start, nl);
      start = nl + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      this.line(line, out);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** End of input: a final event without its blank line still counts. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    if (this.buffer.length > 0) this.line(this.buffer, out);
    this.buffer = '';
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
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }
}

/** One `data:` frame (the primary dialect's streaming shape). */
export const dataFrame = (payload: string): string => `data: ${payload}\n\n`;

/** One named frame (the alternate dialect's `event: <name>` then `data: <json>`). */
export const eventFrame = (event: string, payload: string): string => `event: ${event}\ndata: ${payload}\n\n`;
