import type { FastifyInstance } from 'fastify';
import { renderAltErrorEnvelope } from '../../../gateway/render/alt.js';
import { renderPrimaryError, ServiceError } from '../../../lib/errors.js';
import { carriesHop, HOP_HEADER } from '../../../lib/hop.js';

const LOOP_MESSAGE =
  'this request already passed through this gateway: a provider connection (base_url, deployment host or project endpoint) points back at the gateway itself; change that connection to the real upstream';

/**
 * A request carrying this deployment's hop mark (lib/hop.ts) was sent by one of its own upstream
 * calls: refused before authentication and before any upstream call, so one client request makes
 * at most one more. 400 in the dialect's envelope, code loop_detected on the primary edge: SPEC 7.2
 * has no status for a loop (508 is not in its table), and the gateway that sent the request must
 * not retry or fall back on it, which it would do on a 5xx (SPEC 7.3 retry rules).
 */
export const refuseOwnHops = (app: FastifyInstance, hop: string): void => {
  app.addHook('onRequest', (request, reply, done) => {
    if (!carriesHop(request.headers[HOP_HEADER], hop)) return done();
    const err = new ServiceError('bad_request', LOOP_MESSAGE, { displayCode: 'loop_detected' });
    const alt = request.url.startsWith('/alt/') || request.url === '/alt';
    reply.code(err.status).send(alt ? renderAltErrorEnvelope(err) : renderPrimaryError(err));
  });
};
