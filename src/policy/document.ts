import { z } from 'zod';
import { ServiceError } from '../lib/errors.js';
import { fieldOf, unstorableIn } from '../lib/storable.js';

/**
 * The policy document (SPEC 1.9): what an operator or workspace manager allows a scope (an
 * organization, a project, an API key) to do through the gateway. It is versioned by
 * `schema_version` so it can grow: a new rule is a new optional field (older documents keep their
 * meaning), a change of meaning is a new schema version. Unknown fields are refused by name, so a
 * typo never silently allows what it meant to deny.
 *
 * Every rule is optional. Absent: the broader scope's rule applies. `null`: this scope lifts the
 * broader scopes' rule. How scopes combine, field by field, is `resolvePolicies` (evaluate.ts).
 */

/** The gateway routes of SPEC 4.1 and 4.2 a policy may name, built or not yet. */
export const POLICY_ROUTES = [
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/moderations',
  '/v1/images/generations',
  '/v1/images/edits',
  '/v1/images/variations',
  '/v1/files',
  '/v1/vector_stores',
  '/alt/v1/messages',
  '/alt/v1/messages/count_tokens',
] as const;

export const POLICY_SCHEMA_VERSION = 1;

/** A pattern: `*` any run of characters, `?` one; matched whole and case-insensitively. */
const PATTERN = /^[A-Za-z0-9._:/@*?-]{1,128}$/;
/** Wildcards a pattern may hold: matching stays cheap whatever a tenant writes. */
const MAX_STARS = 8;
const pattern = z
  .string()
  .regex(PATTERN, 'a pattern is 1-128 letters, digits, . _ : / @ - and the wildcards * ?')
  .refine((p) => p.split('*').length - 1 <= MAX_STARS, `a pattern holds at most ${MAX_STARS} * wildcards`);
const patterns = z.array(pattern).max(64);

/** An allow list (only these) and a deny list (never these); deny wins over allow. */
const lists = z.strictObject({ allow: patterns.optional(), deny: patterns.optional() });

const perMinute = z.number().int().min(1).max(1_000_000_000);

export const policyDocumentSchema = z.strictObject({
  schema_version: z.literal(POLICY_SCHEMA_VERSION),
  /** Provider ids (a registry lane or its adapter: `openai`, `azure`, `bedrock-gov`, ...). */
  providers: lists.nullable().optional(),
  /** Models: a candidate's model id or its provider model id. */
  models: lists.nullable().optional(),
  /** Routes (POLICY_ROUTES, or patterns over them such as `/v1/images/*`). */
  routes: lists.nullable().optional(),
  /** A ceiling on the output tokens a request may ask for (max_tokens and its spellings). */
  max_tokens: z.number().int().min(1).max(100_000_000).nullable().optional(),
  /** Whether full payload capture (SPEC 1.10, 2.3) is permitted; false forces summaries only. */
  payload_capture: z.boolean().nullable().optional(),
  /**
   * Per API key, across every gateway process: requests and tokens (prompt and completion) in any
   * rolling minute. Set on an organization or project, each of its keys has this limit of its own.
   */
  rate_limits: z
    .strictObject({
      requests_per_minute: perMinute.nullable().optional(),
      tokens_per_minute: perMinute.nullable().optional(),
    })
    .nullable()
    .optional(),
  /** Why the policy exists, for the people who read it later. */
  description: z.string().max(2_000).optional(),
});

export type PolicyDocument = z.infer<typeof policyDocumentSchema>;
export type PolicyRule = Exclude<keyof PolicyDocument, 'schema_version' | 'description'>;
export const POLICY_RULES: readonly PolicyRule[] = [
  'providers',
  'models',
  'routes',
  'max_tokens',
  'payload_capture',
  'rate_limits',
];

/** The scopes a policy is set on, broadest first: the narrowest that states a rule wins. */
export const POLICY_SCOPES = ['org', 'project', 'api_key'] as const;
export type PolicyScope = (typeof POLICY_SCOPES)[number];

/**
 * Who sets a policy. `operator`: the platform administrator, whose rules a workspace can neither
 * change nor lift; `workspace`: the workspace's managers (or the administrator for them). A request
 * must pass both layers: each is resolved on its own, and the stricter answer of the two holds.
 */
export const POLICY_LAYERS = ['operator', 'workspace'] as const;
export type PolicyLayer = (typeof POLICY_LAYERS)[number];

/** Route patterns must name at least one known route: a typo would otherwise deny nothing. */
const checkRoutes = (doc: PolicyDocument): void => {
  for (const side of ['allow', 'deny'] as const)
    for (const p of doc.routes?.[side] ?? []) {
      if (!POLICY_ROUTES.some((r) => globMatch(p, r)))
        throw new ServiceError(
          'bad_request',
          `routes.${side}: ${JSON.stringify(p)} matches no gateway route (${POLICY_ROUTES.join(', ')})`,
          { param: `routes.${side}` },
        );
    }
};

/** The fields a place in the document takes, for an unknown-field message. */
const knownFields = (path: string): string =>
  path === ''
    ? `schema_version ${POLICY_SCHEMA_VERSION} knows ${['schema_version', ...POLICY_RULES, 'description'].join(', ')}`
    : path === 'rate_limits'
      ? 'rate_limits knows requests_per_minute, tokens_per_minute'
      : `${path} knows allow, deny`;

/** A policy document from a caller, or a 400 naming the first field that is wrong. */
export const parsePolicyDocument = (input: unknown): PolicyDocument => {
  const unstorable = unstorableIn(input);
  if (unstorable) {
    const field = fieldOf(unstorable.path as (string | number)[]);
    throw new ServiceError('bad_request', `${field}: ${unstorable.problem}`, { param: field });
  }
  const parsed = policyDocumentSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.join('.');
    const message =
      issue.code === 'unrecognized_keys'
        ? `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}${path ? ` in ${path}` : ''} (${knownFields(path)})`
        : path === 'schema_version'
          ? `schema_version must be ${POLICY_SCHEMA_VERSION}`
          : `${path || 'policy'}: ${issue.message}`;
    throw new ServiceError('bad_request', message, { param: path || 'policy' });
  }
  checkRoutes(parsed.data);
  return parsed.data;
};

/**
 * Whether a glob pattern (`*` any run, `?` one character) matches the whole text, ignoring case.
 * Linear backtracking to the last `*` only, never a regular expression: a pattern a tenant wrote
 * costs at most its length times the text's, whatever it contains.
 */
export const globMatch = (pattern: string, text: string): boolean => {
  const p = pattern.toLowerCase();
  const t = text.toLowerCase();
  let pi = 0;
  let ti = 0;
  let star = -1;
  let mark = 0;
  while (ti < t.length) {
    const c = p[pi];
    if (c === '*') {
      star = pi++;
      mark = ti;
    } else if (pi < p.length && (c === '?' || c === t[ti])) {
      pi++;
      ti++;
    } else if (star !== -1) {
      pi = star + 1;
      ti = ++mark;
    } else return false;
  }
  while (p[pi] === '*') pi++;
  return pi === p.length;
};

export const matchesAny = (patterns: readonly string[], ...values: readonly string[]): string | null => {
  for (const p of patterns) if (values.some((v) => globMatch(p, v))) return p;
  return null;
};
