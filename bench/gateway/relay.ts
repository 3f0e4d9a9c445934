import { request } from 'node:http';
import { wallClockMs } from './mock-upstream.js';

export interface Arrival {
  kind: string;
  /** Milliseconds since the request was sent. */
  atMs: number;
  /** For content chunks: milliseconds between the mock writing the chunk and the client reading it. */
  lagMs: number | null;
}

const arrival = (frame: string, atMs: number, now: number): Arrival => {
  const data = frame.replace(/^data: /, '');
  if (data === '[DONE]') return { kind: '[DONE]', atMs, lagMs: null };
  const chunk = JSON.parse(data) as {
    choices?: { delta?: { role?: string; content?: string }; finish_reason?: string | null }[];
    usage?: unknown;
  };
  const choice = chunk.choices?.[0];
  if (!choice) return { kind: chunk.usage ? 'usage' : 'other', atMs, lagMs: null };
  if (choice.finish_reason) return { kind: `finish (${choice.finish_reason})`, atMs, lagMs: null };
  if (choice.delta?.role) return { kind: 'role', atMs, lagMs: null };
  const [word = '', sentAt] = (choice.delta?.content ?? '').split('@');
  return { kind: `content ${JSON.stringify(word)}`, atMs, lagMs: sentAt ? now - Number(sentAt) : null };
};

/** Streams one chat request and notes when each SSE frame reaches the client. */
export const frameArrivals = (
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<Arrival[]> =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    const arrivals: Arrival[] = [];
    let pending = '';
    const req = request(url, { method: 'POST', headers, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`relay check: ${url} answered ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        const now = wallClockMs();
        const atMs = performance.now() - started;
        pending += text;
        let end = pending.indexOf('\n\n');
        while (end !== -1) {
          arrivals.push(arrival(pending.slice(0, end), atMs, now));
          pending = pending.slice(end + 2);
          end = pending.indexOf('\n\n');
        }
      });
      res.on('end', () => resolve(arrivals));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });

/**
 * Relayed as it arrives: every content chunk (the mock writes one each 100 ms) reaches the client
 * within 50 ms of the mock writing it, so nothing is batched or held back. Judged on that lag
 * rather than on offsets from the request, which a late timer in a busy mock would push out too.
 */
export const relayVerdict = (
  arrivals: Arrival[],
): { ok: boolean; firstContentMs: number; maxLagMs: number } => {
  const content = arrivals.filter((a) => a.kind.startsWith('content'));
  const lags = content.map((a) => a.lagMs ?? Number.POSITIVE_INFINITY);
  const maxLagMs = Math.max(...lags);
  return {
    ok: content.length > 1 && maxLagMs <= 50,
    firstContentMs: content[0]?.atMs ?? Number.NaN,
    maxLagMs,
  };
};
