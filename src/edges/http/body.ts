import { z } from 'zod';
import { ServiceError } from '../../lib/errors.js';
import { fieldOf, unstorableIn } from '../../lib/storable.js';

/**
 * Any JSON value PostgreSQL can store (src/lib/storable.ts): no NUL, no unpaired surrogate in any
 * string or key, bounded nesting. Every `/api` body goes through it before its own schema, so a
 * field the schema passes through (a connection's metadata, a comment) cannot carry such text into
 * `text` or `jsonb` and come back as a 500.
 */
const storableJson = z.unknown().superRefine((value, ctx) => {
  const bad = unstorableIn(value);
  if (bad) ctx.addIssue({ code: 'custom', path: bad.path, message: bad.problem });
});

/** Parses a request body with zod; the first issue becomes a 400 naming its field. */
export const parseBody = <T extends z.ZodType>(schema: T, body: unknown): z.infer<T> => {
  const parsed = storableJson.pipe(schema).safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = fieldOf(issue.path as (string | number)[]);
  throw new ServiceError('bad_request', `${field}: ${issue.message}`, { param: field });
};
