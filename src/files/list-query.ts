import { ServiceError } from '../lib/errors.js';
import { fileIdTime, LIST_PURPOSES } from './model.js';
import type { ListQuery } from './store.js';

/** OpenAI's bounds on a files page. */
export const LIST_LIMIT_MAX = 10_000;

const invalid = (param: string, message: string) =>
  new ServiceError('invalid_request_error', message, { param });

/** One query parameter: absent, or given once (a repeated parameter is refused, not guessed at). */
const single = (query: Record<string, unknown>, name: string): string | undefined => {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(name, `query parameter ${name} is given more than once`);
  return value;
};

/**
 * `GET /v1/files?purpose=&limit=&order=&after=` (OpenAI's list parameters). A bad value is a 400
 * naming the parameter. Other parameters are ignored, as OpenAI does.
 *
 * `after` is a position, not a lookup: file ids carry their creation time, so the page is the
 * caller's files after that (time, id) in the order asked, whether or not the id still exists or
 * ever belonged to this project. A file deleted between two pages does not break or cut short an
 * iteration, and the answer depends on nothing but the caller's own files and the cursor's text:
 * another project's id tells the caller nothing an invented id would not.
 */
export const parseListQuery = (query: unknown): ListQuery => {
  const q = (query !== null && typeof query === 'object' ? query : {}) as Record<string, unknown>;

  const limitText = single(q, 'limit');
  let limit = LIST_LIMIT_MAX;
  if (limitText !== undefined) {
    limit = /^\d{1,6}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= LIST_LIMIT_MAX))
      throw invalid(
        'limit',
        `limit must be an integer from 1 to ${LIST_LIMIT_MAX}; got ${JSON.stringify(limitText)}`,
      );
  }

  const order = single(q, 'order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc')
    throw invalid('order', `order must be asc or desc; got ${JSON.stringify(order)}`);

  const purpose = single(q, 'purpose') ?? null;
  if (purpose !== null && !LIST_PURPOSES.includes(purpose))
    throw invalid(
      'purpose',
      `purpose must be one of ${LIST_PURPOSES.join(', ')}; got ${JSON.stringify(purpose)}`,
    );

  const afterText = single(q, 'after');
  let after: ListQuery['after'] = null;
  if (afterText !== undefined) {
    const createdAt = fileIdTime(afterText);
    if (!createdAt)
      throw invalid(
        'after',
        `after must be the id of a file of this service (file-...), as in last_id; got ${JSON.stringify(afterText.slice(0, 100))}`,
      );
    after = { id: afterText, createdAt };
  }
  return { purpose, limit, order, after };
};
