import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';

/**
 * `POST /v1/traces/ingest` (SPEC 4.1): the trace export of an agents SDK, sent under a service API
 * key, is acknowledged with a success envelope and not persisted (the service's own traces arrive
 * over OTLP, SPEC 4.3). An agents SDK pointed at the gateway then exports without retries or
 * failure logs. The body is a JSON object whose `data` is the array of exported items.
 */
export const registerTracesIngestRoute = (v1: FastifyInstance): void => {
  v1.post('/traces/ingest', async (request, reply) => {
    const body = request.body as { data?: unknown } | null | undefined;
    const data = body !== null && typeof body === 'object' ? body.data : undefined;
    if (!Array.isArray(data)) {
      throw new ServiceError('invalid_request_error', 'data: an array of exported trace items is required', {
        param: 'data',
      });
    }
    return reply.code(200).send({ object: 'traces.ingest', accepted: data.length, persisted: false });
  });
};
