import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../lib/json-depth.js';

/**
 * The model edges' JSON parser: the server's own (an empty body is no body; prototype-poisoning
 * checks), after the nesting depth of the text is known to be bounded. Everything downstream of the
 * edge (translation, metering, the recorded body) walks the parsed body recursively, after an
 * upstream may already have served it; a body nested deeper is refused here, before admission, with
 * a 400 in the edge's envelope (SPEC 4.1 rule 10, 7.1, 7.2).
 */
export const boundJsonDepth = (scope: FastifyInstance): void => {
  const { onProtoPoisoning, onConstructorPoisoning } = scope.initialConfig;
  const parseJson = scope.getDefaultJsonParser(
    onProtoPoisoning ?? 'error',
    onConstructorPoisoning ?? 'error',
  );
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString();
    if (text === '') return done(null, undefined);
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      const message = `the JSON body nests deeper than ${MAX_JSON_DEPTH} levels`;
      return done(new ServiceError('invalid_request_error', message, { param: 'body' }));
    }
    parseJson(request, text, done);
  });
};
