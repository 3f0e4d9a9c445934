import { gzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { IntakeResult } from '../../../projections/traces/intake.js';
import { MAX_SPANS } from '../../../traces/otlp.js';
import { type OtlpRouteDeps, registerOtlpTraceRoute } from './otlp.js';

const KEY = 'svc_ti_good';
const ok: IntakeResult = { acceptedSpans: 0, rejectedSpans: 0, rejections: [], messages: 0 };

const serve = async (over: Partial<OtlpRouteDeps> = {}) => {
  const app = Fastify();
  await registerOtlpTraceRoute(app, {
    verifyKey: async (s) => (s === KEY ? { orgId: 'org_a', projectId: 'prj_a', capture: false } : null),
    accept: async () => ok,
    maxBodyBytes: 1024 * 1024,
    maxInFlight: 8,
    maxInFlightBytes: 4 * 1024 * 1024,
    ...over,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  return { app, url: `http://127.0.0.1:${address.port}/v1/traces` };
};

const post = (url: string, body: Uint8Array | string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers },
  });

describe('SPEC 4.3 POST /v1/traces answers as OTLP/HTTP says under load and failure', () => {
  it('answers 503 with Retry-After when the key cannot be checked (the keys database is away)', async () => {
    const { app, url } = await serve({
      verifyKey: async () => {
        throw new Error('connect ECONNREFUSED');
      },
    });
    try {
      const r = await post(url, '{}');
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('5');
      expect(((await r.json()) as { code: number }).code).toBe(14);
    } finally {
      await app.close();
    }
  });

  it('refuses with 429 an export past the bytes in flight, and takes one again once the first is answered', async () => {
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const { app, url } = await serve({
      maxInFlightBytes: 1_000,
      accept: async () => {
        await held;
        return ok;
      },
    });
    try {
      const body = JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(700) });
      const first = post(url, body);
      await new Promise((r) => setTimeout(r, 100));
      const second = await post(url, body);
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toBe('1');
      release();
      expect((await first).status).toBe(200);
      expect((await post(url, body)).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('refuses an export of more spans than MAX_SPANS with 413, however small its gzip', async () => {
    const { app, url } = await serve();
    try {
      // ExportTraceServiceRequest{1: ResourceSpans{2: ScopeSpans{2: Span{}} x N}}: two bytes a span.
      const n = MAX_SPANS + 1;
      const spans = Buffer.alloc(n * 2);
      for (let i = 0; i < n; i++) spans[i * 2] = 0x12;
      const len = (x: number) => {
        const out: number[] = [];
        while (x > 0x7f) {
          out.push((x & 0x7f) | 0x80);
          x >>>= 7;
        }
        out.push(x);
        return Buffer.from(out);
      };
      const scope = Buffer.concat([Buffer.from([0x12]), len(spans.length), spans]);
      const resource = Buffer.concat([Buffer.from([0x0a]), len(scope.length), scope]);
      const r = await post(url, gzipSync(resource), {
        'content-type': 'application/x-protobuf',
        'content-encoding': 'gzip',
      });
      expect(r.status).toBe(413);
      expect(r.headers.get('content-type')).toMatch(/protobuf/);
    } finally {
      await app.close();
    }
  });

  it('answers another method with 405 and Allow: POST', async () => {
    const { app, url } = await serve();
    try {
      const r = await fetch(url, { headers: { authorization: `Bearer ${KEY}` } });
      expect(r.status).toBe(405);
      expect(r.headers.get('allow')).toBe('POST');
    } finally {
      await app.close();
    }
  });
});
