import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import type { VectorStoreScope } from '../../../vector-stores/model.js';
import {
  parseAttach,
  parseCreateBatch,
  parseCreateStore,
  parseFileList,
  parseSearch,
  parseStoreList,
  parseUpdateFile,
  parseUpdateStore,
} from '../../../vector-stores/requests.js';
import type { VectorStores } from '../../../vector-stores/service.js';
import { type GatewayEdgeDeps, REQUEST_ID_HEADER } from './client.js';

/** How soon the OpenAI SDK's poll helpers (createAndPoll) ask again about a file in progress. */
const POLL_AFTER_MS = '250';

type Params = { id: string; file_id: string; batch_id: string };

/**
 * /v1/vector_stores (SPEC 4.1, OpenAI's Vector Stores API): stores, their files and search, on
 * the vector stores of the API key's own project (src/vector-stores). JSON bodies, in the v1 scope.
 */
export const registerVectorStoreRoutes = (scope: FastifyInstance, deps: GatewayEdgeDeps): void => {
  const storesOf = (): VectorStores => {
    if (!deps.vectorStores)
      throw new ServiceError(
        'service_unavailable',
        'the vector stores API is unavailable: this gateway process has no analytics store to keep chunks in; ' +
          'set SVC_CLICKHOUSE_URL, or run the gateway in one `svc serve` with the query or ingest role',
      );
    return deps.vectorStores;
  };
  const ownerOf = (request: FastifyRequest, reply: FastifyReply): VectorStoreScope => {
    reply.header(REQUEST_ID_HEADER, request.id);
    const key = request.apiKey!;
    return { orgId: key.orgId, projectId: key.projectId, apiKeyId: key.apiKeyId };
  };
  const params = (request: FastifyRequest) => request.params as Params;
  const opts = { bodyLimit: deps.bodyLimit };

  scope.post('/vector_stores', opts, async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await storesOf().create(owner, parseCreateStore(request.body)));
  });

  scope.get('/vector_stores', async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await storesOf().list(owner, parseStoreList(request.query)));
  });

  scope.get('/vector_stores/:id', async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await storesOf().retrieve(owner, params(request).id));
  });

  scope.post('/vector_stores/:id', opts, async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await storesOf().update(owner, params(request).id, parseUpdateStore(request.body)));
  });

  scope.delete('/vector_stores/:id', async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await storesOf().delete(owner, params(request).id));
  });

  scope.post('/vector_stores/:id/files', opts, async (request, reply) => {
    const owner = ownerOf(request, reply);
    const file = await storesOf().attach(owner, params(request).id, parseAttach(request.body));
    if (file.status === 'in_progress') reply.header('openai-poll-after-ms', POLL_AFTER_MS);
    return reply.send(file);
  });

  scope.get('/vector_stores/:id/files', async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await storesOf().listFiles(owner, params(request).id, parseFileList(request.query)));
  });

  scope.get('/vector_stores/:id/files/:file_id', async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { id, file_id } = params(request);
    const file = await storesOf().retrieveFile(owner, id, file_id);
    if (file.status === 'in_progress') reply.header('openai-poll-after-ms', POLL_AFTER_MS);
    return reply.send(file);
  });

  scope.post('/vector_stores/:id/files/:file_id', opts, async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { id, file_id } = params(request);
    return reply.send(await storesOf().updateFile(owner, id, file_id, parseUpdateFile(request.body)));
  });

  scope.delete('/vector_stores/:id/files/:file_id', async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { id, file_id } = params(request);
    return reply.send(await storesOf().detach(owner, id, file_id));
  });

  scope.post('/vector_stores/:id/search', opts, async (request, reply) => {
    ownerOf(request, reply);
    return reply.send(
      await storesOf().search(request.apiKey!, params(request).id, parseSearch(request.body)),
    );
  });

  scope.get('/vector_stores/:id/files/:file_id/content', async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { id, file_id } = params(request);
    return reply.send(await storesOf().fileContent(owner, id, file_id));
  });

  // File batches: many files attached at once, polled by the SDK's createAndPoll/uploadAndPoll.
  scope.post('/vector_stores/:id/file_batches', opts, async (request, reply) => {
    const owner = ownerOf(request, reply);
    const batch = await storesOf().createBatch(owner, params(request).id, parseCreateBatch(request.body));
    if (batch.status === 'in_progress') reply.header('openai-poll-after-ms', POLL_AFTER_MS);
    return reply.send(batch);
  });

  scope.get('/vector_stores/:id/file_batches/:batch_id', async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { id, batch_id } = params(request);
    const batch = await storesOf().retrieveBatch(owner, id, batch_id);
    if (batch.status === 'in_progress') reply.header('openai-poll-after-ms', POLL_AFTER_MS);
    return reply.send(batch);
  });

  scope.post('/vector_stores/:id/file_batches/:batch_id/cancel', opts, async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { id, batch_id } = params(request);
    return reply.send(await storesOf().cancelBatch(owner, id, batch_id));
  });

  scope.get('/vector_stores/:id/file_batches/:batch_id/files', async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { id, batch_id } = params(request);
    return reply.send(await storesOf().listBatchFiles(owner, id, batch_id, parseFileList(request.query)));
  });
};
