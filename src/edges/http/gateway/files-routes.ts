import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseListQuery } from '../../../files/list-query.js';
import type { FileScope } from '../../../files/model.js';
import type { Files } from '../../../files/service.js';
import { ServiceError } from '../../../lib/errors.js';
import { type GatewayEdgeDeps, REQUEST_ID_HEADER } from './client.js';
import { multipartParts } from './multipart.js';

/** An upload form: one file, a purpose and the two expires_after fields, with room for mistakes. */
const FORM_LIMITS = { files: 2, fields: 8, fieldBytes: 16 * 1024 };

/**
 * /v1/files (SPEC 4.1, OpenAI's Files API): upload, list, retrieve, content and delete, each on
 * the files of the API key's own project (src/files). Registered in the scope that takes
 * multipart/form-data; the upload streams its file part straight to the object store.
 */
export const registerFileRoutes = (scope: FastifyInstance, deps: GatewayEdgeDeps): void => {
  const filesOf = (request: FastifyRequest): Files => {
    if (!deps.files) {
      // An upload's body is read away, so the client gets this answer rather than a reset.
      request.multipartBody?.resume();
      throw new ServiceError(
        'service_unavailable',
        'the files API is unavailable: this gateway process has no object store to keep files in',
      );
    }
    return deps.files;
  };
  const ownerOf = (request: FastifyRequest, reply: FastifyReply): FileScope => {
    reply.header(REQUEST_ID_HEADER, request.id);
    const key = request.apiKey!;
    return { orgId: key.orgId, projectId: key.projectId, apiKeyId: key.apiKeyId };
  };
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  scope.post('/files', async (request, reply) => {
    const owner = ownerOf(request, reply);
    const files = filesOf(request);
    const form = multipartParts(request.multipartBody, request.headers, {
      ...FORM_LIMITS,
      fileBytes: files.maxBytes,
    });
    return reply.send(await files.upload(owner, form));
  });

  scope.get('/files', async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await filesOf(request).list(owner, parseListQuery(request.query)));
  });

  scope.get('/files/:id', async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await filesOf(request).retrieve(owner, idOf(request)));
  });

  scope.get('/files/:id/content', async (request, reply) => {
    const owner = ownerOf(request, reply);
    const { size, stream } = await filesOf(request).content(owner, idOf(request));
    return reply.type('application/octet-stream').header('content-length', size).send(stream);
  });

  scope.delete('/files/:id', async (request, reply) => {
    const owner = ownerOf(request, reply);
    return reply.send(await filesOf(request).delete(owner, idOf(request)));
  });
};
