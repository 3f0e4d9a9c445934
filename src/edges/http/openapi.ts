import { z } from 'zod';
import { VERSION } from '../../lib/version.js';
import { SESSION_COOKIE } from './session-credential.js';

/**
 * The OpenAPI 3.1 document of the HTTP surface one process serves, generated from the routes as
 * fastify registered them and the zod schemas they declare (`routeDoc`): every registered route
 * is in it, and nothing else. The `/v1` and `/alt` dialects are the OpenAI and Anthropic APIs; their
 * operations point at those specifications instead of restating them.
 */

/** What a route says about itself, in its route options: `app.post(url, routeDoc({...}), handler)`. */
export interface RouteDoc {
  summary?: string;
  description?: string;
  /** The request body's schema: the one its handler parses with. */
  body?: z.ZodType;
  /** No authentication (health, sign-in, webhooks that carry their own signature). */
  public?: boolean;
}

/** Route options that carry a route's documentation (fastify keeps `config` on the route). */
export const routeDoc = (doc: RouteDoc): { config: { openapi: RouteDoc } } => ({ config: { openapi: doc } });

/** One registered route: the role that serves it (or `server` for the process's own), and its doc. */
export interface DocumentedRoute {
  role: string;
  method: string;
  url: string;
  doc?: RouteDoc;
}

/** The public specifications of the two dialects the gateway speaks. */
export const DIALECT_SPECS = {
  openai: 'https://github.com/openai/openai-openapi',
  anthropic: 'https://docs.anthropic.com/en/api/messages',
} as const;

const dialectOf = (url: string): 'openai' | 'anthropic' | null => {
  if (url === '/v1/traces' || url.startsWith('/v1/traces/')) return null;
  if (url.startsWith('/v1/') || url.startsWith('/v1beta/')) return 'openai';
  if (url.startsWith('/alt/')) return 'anthropic';
  return null;
};

/**
 * A fastify URL pattern as an OpenAPI path template and its parameters: `:id` becomes `{id}`, `::`
 * a literal colon, a trailing `*` the parameter `{path}` (the rest of the path).
 */
export const openApiPath = (url: string): { path: string; params: string[] } => {
  const params: string[] = [];
  const LITERAL_COLON = '\u0000';
  let path = url.replaceAll('::', LITERAL_COLON).replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_m, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  if (path.endsWith('*')) {
    params.push('path');
    path = `${path.slice(0, -1)}{path}`;
  }
  return { path: path.replaceAll(LITERAL_COLON, ':'), params };
};

const PUBLIC_SERVER_ROUTES = new Set(['/healthz', '/livez', '/readyz', '/metrics', '/openapi.json']);

const bodySchema = (schema: z.ZodType): Record<string, unknown> => {
  try {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
      io: 'input',
      unrepresentable: 'any',
    }) as Record<string, unknown>;
    return rest;
  } catch {
    return {};
  }
};

const operationOf = (route: DocumentedRoute, params: string[]): Record<string, unknown> => {
  const doc = route.doc ?? {};
  const dialect = dialectOf(route.url);
  const op: Record<string, unknown> = {
    operationId: `${route.method.toLowerCase()}${openApiPath(route.url)
      .path.replace(/[{}]/g, '')
      .split(/[^A-Za-z0-9]+/)
      .filter(Boolean)
      .map((w) => w[0]!.toUpperCase() + w.slice(1))
      .join('')}`,
    tags: [route.role],
    summary: doc.summary ?? `${route.method} ${route.url}`,
    ...(doc.description ? { description: doc.description } : {}),
    parameters: params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    responses: {
      default: {
        description: dialect
          ? `As the ${dialect === 'openai' ? 'OpenAI' : 'Anthropic'} API answers; errors in its envelope`
          : 'The answer; errors as {"error": code, "message": text}',
      },
    },
  };
  if (dialect)
    op.externalDocs = {
      description: `The ${dialect === 'openai' ? 'OpenAI' : 'Anthropic'} API specification of this operation`,
      url: DIALECT_SPECS[dialect],
    };
  if (doc.body)
    op.requestBody = { required: true, content: { 'application/json': { schema: bodySchema(doc.body) } } };
  if (doc.public || (route.role === 'server' && PUBLIC_SERVER_ROUTES.has(route.url))) op.security = [];
  return op;
};

/** The document; HEAD routes fastify adds beside every GET are left out (they answer as the GET does). */
export const openApiDocument = (routes: readonly DocumentedRoute[]): Record<string, unknown> => {
  const paths: Record<string, Record<string, unknown>> = {};
  const seen = new Set<string>();
  for (const route of routes) {
    if (route.method === 'HEAD' || route.method === 'OPTIONS') continue;
    const { path, params } = openApiPath(route.url);
    const key = `${route.method} ${path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operationOf(route, params);
  }
  const sorted = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Model Gateway Service',
      version: VERSION,
      description:
        'The HTTP surface of this process: the roles it serves, their /api routes and the process routes. ' +
        `/v1 follows the OpenAI API (${DIALECT_SPECS.openai}) and /alt the Anthropic Messages API ` +
        `(${DIALECT_SPECS.anthropic}); their operations are listed and not restated.`,
    },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A service API key (/v1, /alt), the admin token, a developer token or an audit:read token',
        },
        apiKeyHeader: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'A service API key (/alt)',
        },
        session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'A console session' },
      },
    },
    security: [{ bearer: [] }, { apiKeyHeader: [] }, { session: [] }],
    paths: sorted,
  };
};
