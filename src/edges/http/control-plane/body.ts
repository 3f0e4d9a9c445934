import type { z } from 'zod';
import { ServiceError } from '../../../lib/errors.js';

/** Parses a request body with zod; the first issue becomes a 400 naming its field. */
export const parseBody = <T extends z.ZodType>(schema: T, body: unknown): z.infer<T> => {
  const parsed = schema.safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map(String).join('.') || 'body';
  throw new ServiceError('bad_request', `${field}: ${issue.message}`, { param: field });
};
