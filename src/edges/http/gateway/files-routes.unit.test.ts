import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { renderPrimaryError, ServiceError } from '../../../lib/errors.js';
import type { GatewayEdgeDeps } from './client.js';
import { registerFileRoutes } from './files-routes.js';
import { acceptMultipart } from './multipart.js';

// /v1/files in a process without an object store: every route answers 503 in the primary envelope.

describe('/v1/files without an object store', () => {
  it('answers 503 service_unavailable with a clear message on every route', async () => {
    const app = Fastify();
    app.setErrorHandler((err, _request, reply) => {
      const e = err instanceof ServiceError ? err : new ServiceError('internal_error', String(err));
      return reply.code(e.status).send(renderPrimaryError(e));
    });
    app.addHook('onRequest', async (request) => {
      request.apiKey = {
        apiKeyId: 'key_1',
        projectId: 'prj_1',
        orgId: 'org_1',
        workspaceId: 'ws_1',
        name: 'k',
        prefix: 'svc_sk_',
        tracing: false,
      };
    });
    await app.register(
      async (scope) => {
        acceptMultipart(scope);
        registerFileRoutes(scope, { files: null } as unknown as GatewayEdgeDeps);
      },
      { prefix: '/v1' },
    );
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(64 * 1024)]), 'a.bin');
    form.append('purpose', 'batch');
    const upload = new Request('http://x/', { method: 'POST', body: form });
    const requests = [
      {
        method: 'POST' as const,
        url: '/v1/files',
        headers: { 'content-type': upload.headers.get('content-type')! },
        payload: Buffer.from(await upload.arrayBuffer()),
      },
      { method: 'GET' as const, url: '/v1/files' },
      { method: 'GET' as const, url: '/v1/files/file-x' },
      { method: 'GET' as const, url: '/v1/files/file-x/content' },
      { method: 'DELETE' as const, url: '/v1/files/file-x' },
    ];
    for (const r of requests) {
      const res = await app.inject(r);
      expect(res.statusCode, r.url).toBe(503);
      expect(res.json().error, `${r.method} ${r.url}`).toMatchObject({
        type: 'service_unavailable',
        code: 'service_unavailable',
        message: expect.stringMatching(/files API is unavailable: this gateway process has no object store/),
      });
      expect(res.headers['x-svc-request-id']).toBeDefined();
    }
    await app.close();
  });
});
