import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiKeyCache, ApiKeyIdentity } from '../../../gateway/auth/api-key-cache.js';
import { renderAltErrorEnvelope } from '../../../gateway/render/alt.js';
import { clientMayRetry, renderPrimaryError, ServiceError } from '../../../lib/errors.js';
import { registerAltRoutes } from '../alt/routes.js';
import { authenticateApiKey } from './auth.js';
import { registerChatRoute } from './chat.js';
import { type GatewayEdgeDeps, retrySignals } from './client.js';
import { registerFileRoutes } from './files-routes.js';
import { registerImageUploadRoutes } from './image-uploads.js';
import { boundJsonDepth } from './json-parser.js';
import { registerJsonOperationRoutes } from './json-routes.js';
import { registerModelRoutes } from './models.js';
import { acceptMultipart } from './multipart.js';
import { countReceivedBytes } from './received-bytes.js';
import { registerTracesIngestRoute } from './traces-ingest.js';
import { registerVectorStoreRoutes } from './vector-store-routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: ApiKeyIdentity;
  }
}

/** Families SPEC 4.1 rule 2 answers with 404 in the primary envelope. */
const UNIMPLEMENTED_FAMILIES = [
  '/batches',
  '/audio',
  '/fine_tuning',
  '/fine-tunes',
  '/realtime',
  '/assistants',
  '/threads',
  '/messages',
];

const toServiceError = (err: unknown): ServiceError => {
  if (err instanceof ServiceError) return err;
  const e = err as { statusCode?: number; code?: string; message?: string };
  if (e.statusCode === 413)
    return new ServiceError('payload_too_large', 'request body is too large for this gateway');
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return new ServiceError('invalid_request_error', e.message ?? 'invalid request body', {
      status: e.statusCode,
    });
  }
  return new ServiceError('internal_error', 'internal error');
};

/**
 * The primary (/v1) and alternate (/alt/v1) edges (SPEC 4.1, 4.2, 9.1): API-key auth, the dialect
 * envelopes, 404s for unknown routes and unsupported families; operations not built yet answer 501.
 */
export const registerGatewayRoutes = async (
  app: FastifyInstance,
  cache: ApiKeyCache,
  chat: GatewayEdgeDeps,
): Promise<void> => {
  await app.register(
    async (v1) => {
      v1.setErrorHandler((err, request, reply) => {
        const e = toServiceError(err);
        if (e.status >= 500) request.log.error({ err }, 'gateway error');
        retrySignals(reply, clientMayRetry(e), null);
        return reply.code(e.status).send(renderPrimaryError(e));
      });
      v1.setNotFoundHandler((request, reply) => {
        const path = request.url.split('?')[0]!.slice('/v1'.length);
        const family = UNIMPLEMENTED_FAMILIES.find((f) => path === f || path.startsWith(`${f}/`));
        const message = family
          ? `${request.method} /v1${path}: the ${family.slice(1)} API is not supported by this gateway`
          : `unknown route ${request.method} /v1${path}`;
        retrySignals(reply, false, null);
        return reply.code(404).send(renderPrimaryError(new ServiceError('not_found', message)));
      });
      v1.addHook('onRequest', async (request: FastifyRequest) => {
        if (request.is404) return;
        request.apiKey = authenticateApiKey(request, cache, { allowXApiKey: false });
      });
      v1.addHook('preParsing', countReceivedBytes);
      boundJsonDepth(v1);
      registerChatRoute(v1, chat);
      registerJsonOperationRoutes(v1, chat);
      registerModelRoutes(v1, chat);
      registerTracesIngestRoute(v1);
      registerVectorStoreRoutes(v1, chat);
      // The routes that take multipart/form-data; every other route still answers it with a 415.
      await v1.register(async (uploads) => {
        acceptMultipart(uploads);
        registerImageUploadRoutes(uploads, chat);
        registerFileRoutes(uploads, chat);
      });
    },
    { prefix: '/v1' },
  );

  await app.register(
    async (v1beta) => {
      v1beta.post('/models/:action', async (_request, reply) =>
        reply
          .code(501)
          .send(
            renderPrimaryError(
              new ServiceError(
                'not_implemented',
                'generateContent is not supported: use /v1/chat/completions or /alt/v1/messages',
              ),
            ),
          ),
      );
    },
    { prefix: '/v1beta' },
  );

  await app.register(
    async (alt) => {
      alt.setErrorHandler((err, request, reply) => {
        const e = toServiceError(err);
        if (e.status >= 500) request.log.error({ err }, 'gateway error');
        retrySignals(reply, clientMayRetry(e), null);
        return reply.code(e.status).send(renderAltErrorEnvelope(e));
      });
      alt.setNotFoundHandler((request, reply) => {
        retrySignals(reply, false, null);
        return reply
          .code(404)
          .send(
            renderAltErrorEnvelope(
              new ServiceError('not_found', `unknown route ${request.method} ${request.url.split('?')[0]}`),
            ),
          );
      });
      alt.addHook('onRequest', async (request: FastifyRequest) => {
        if (request.is404) return;
        request.apiKey = authenticateApiKey(request, cache, { allowXApiKey: true });
      });
      alt.addHook('preParsing', countReceivedBytes);
      boundJsonDepth(alt);
      registerAltRoutes(alt, chat);
    },
    { prefix: '/alt' },
  );
};
