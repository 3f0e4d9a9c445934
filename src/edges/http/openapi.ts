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

/** The two dialects the gateway speaks, and their public specifications. */
const DIALECTS = {
  openai: { name: 'OpenAI', spec: 'https://github.com/openai/openai-openapi' },
  anthropic: { name: 'Anthropic', spec: 'https://docs.anthropic.com/en/api/messages' },
} as const;

const dialectOf = (url: string): (typeof DIALECTS)[keyof typeof DIALECTS] | null => {
  if (url === '/v1/traces' || url.startsWith('/v1/traces/')) return null;
  if (url.startsWith('/v1/') || url.startsWith('/v1beta/')) return DIALECTS.openai;
  if (url.startsWith('/alt/')) return DIALECTS.anthropic;
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

/** One operation; a field left undefined is not written (the document is served as JSON). */
const operationOf = (route: DocumentedRoute, path: string, params: string[]): Record<string, unknown> => {
  const doc = route.doc ?? {};
  const dialect = dialectOf(route.url);
  const words = path
    .replace(/[{}]/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  const isPublic = doc.public || (route.role === 'server' && PUBLIC_SERVER_ROUTES.has(route.url));
  return {
    operationId: `${route.method.toLowerCase()}${words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}`,
    tags: [route.role],
    summary: doc.summary ?? `${route.method} ${route.url}`,
    description: doc.description,
    parameters: params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    responses: {
      default: {
        description: dialect
          ? `As the ${dialect.name} API answers; errors in its envelope`
          : 'The answer; errors as {"error": code, "message": text}',
      },
    },
    externalDocs: dialect
      ? { description: `The ${dialect.name} API specification of this operation`, url: dialect.spec }
      : undefined,
    requestBody: doc.body
      ? { required: true, content: { 'application/json': { schema: bodySchema(doc.body) } } }
      : undefined,
    security: isPublic ? [] : undefined,
  };
};

/** The document; HEAD routes fastify adds beside every GET are left out (they answer as the GET does). */
export const openApiDocument = (routes: readonly DocumentedRoute[]): Record<string, unknown> => {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    if (route.method === 'HEAD' || route.method === 'OPTIONS') continue;
    const { path, params } = openApiPath(route.url);
    const method = route.method.toLowerCase();
    paths[path] ??= {};
    paths[path][method] ??= operationOf(route, path, params);
  }
  const sorted = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Model Gateway Service',
      version: VERSION,
      description:
        'The HTTP surface of this process: the roles it serves, their /api routes and the process routes. ' +
        `/v1 follows the OpenAI API (${DIALECTS.openai.spec}) and /alt the Anthropic Messages API ` +
        `(${DIALECTS.anthropic.spec}); their operations are listed and not restated.`,
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
