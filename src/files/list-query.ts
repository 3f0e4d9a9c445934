import { ServiceError } from '../lib/errors.js';
import { fileIdTime, LIST_PURPOSES } from './model.js';
import type { ListQuery } from './store.js';

/** OpenAI's bounds on a files page. */
export const LIST_LIMIT_MAX = 10_000;

const invalid = (param: string, message: string) =>
  new ServiceError('invalid_request_error', message, { param });

/** The query string as fastify parsed it: an object of parameters (an absent query is empty). */
export const queryRecord = (query: unknown): Record<string, unknown> =>
  (query !== null && typeof query === 'object' ? query : {}) as Record<string, unknown>;

/** One query parameter: absent, or given once (a repeated parameter is refused, not guessed at). */
export const singleParam = (query: Record<string, unknown>, name: string): string | undefined => {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(name, `query parameter ${name} is given more than once`);
  return value;
};

/** `limit`: an integer from 1 to `max`, `fallback` when absent; anything else is a 400 naming it. */
export const parseLimit = (query: Record<string, unknown>, max: number, fallback: number): number => {
  const text = singleParam(query, 'limit');
  if (text === undefined) return fallback;
  const limit = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= max))
    throw invalid('limit', `limit must be an integer from 1 to ${max}; got ${JSON.stringify(text)}`);
  return limit;
};

/** `order`: asc or desc, desc when absent (OpenAI's lists). */
export const parseOrder = (query: Record<string, unknown>): 'asc' | 'desc' => {
  const order = singleParam(query, 'order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc')
    throw invalid('order', `order must be asc or desc; got ${JSON.stringify(order)}`);
  return order;
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
  const q = queryRecord(query);
  const limit = parseLimit(q, LIST_LIMIT_MAX, LIST_LIMIT_MAX);
  const order = parseOrder(q);

  const purpose = singleParam(q, 'purpose') ?? null;
  if (purpose !== null && !LIST_PURPOSES.includes(purpose))
    throw invalid(
      'purpose',
      `purpose must be one of ${LIST_PURPOSES.join(', ')}; got ${JSON.stringify(purpose)}`,
    );

  const afterText = singleParam(q, 'after');
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
