// autocannon ships no types and @types/autocannon is not a dependency: the part of its
// programmatic API that bench/gateway uses, as documented in its README.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface Options {
    url: string;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    body?: string | Buffer;
    connections?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds to wait for a response. */
    timeout?: number;
    pipelining?: number;
  }

  export interface Result {
    /** Seconds, to 10 ms. */
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    mismatches: number;
    '2xx': number;
    statusCodeStats: Record<string, { count: number }>;
    requests: { average: number; total: number; sent: number };
  }

  export interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, bytes: number, responseTimeMs: number) => void,
    ): this;
  }

  export default function autocannon(options: Options): Instance;
}
