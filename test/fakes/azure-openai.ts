import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ReplyOptions } from './openai-upstream/behaviours.js';
import { responses } from './openai-upstream/responses.js';
import {
  chatCompletions,
  embeddings,
  imageEdits,
  imageGenerations,
  type RouteResult,
} from './openai-upstream/routes.js';
import { isRecord } from './openai-upstream/wire.js';
import { type FakeFormFile, parseForm } from './openai-upstream.js';

/**
 * A fake Azure OpenAI resource on 127.0.0.1: the data plane (deployment chat, embeddings, the v1
 * responses surface, the deployment listing) and a project's deployment listing. It asserts what
 * the adapter must get right — the api-key header and no Authorization, the api-version query, the
 * path forms — answering a violation the way Azure would and recording it in `violations`.
 * Replies reuse the OpenAI fake's builders: Azure's chat reply is primary-dialect shaped.
 */

export type DeploymentScript =
  | 'answer'
  | 'refuse-tools'
  | 'refuse-stream'
  | 'not-found'
  /** This status and body, for every request or only those asking for tools or a stream. */
  | { status: number; body: unknown; when?: 'tools' | 'stream' };

export interface FakeDeployment {
  name: string;
  model: string;
  version?: string;
  /** The data-plane listing's status (default succeeded). */
  status?: string;
  script?: DeploymentScript;
  reply?: ReplyOptions;
}

export interface FakeAzureOptions {
  apiKey: string;
  /** The inference api-version chat and embeddings must carry. */
  apiVersion: string;
  deployments: FakeDeployment[];
  /** Serves `{projectPath}/deployments` when set, e.g. `/api/projects/p1`. */
  projectPath?: string;
  /** The listing versions to expect; by default SPEC 9.3's. */
  listingVersions?: { dataPlane?: string; projects?: string };
  /** The projects listing reports each deployment's resource path in `id` as well as its name. */
  projectsReportPaths?: boolean;
  /** Serve HTTPS with this key pair (the resource host's v1 surface is always https). */
  tls?: { key: string; cert: string };
}

export interface AzureRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** A multipart body, as the platform's FormData parser read it. */
  form?: { fields: Record<string, string>; files: FakeFormFile[] };
}

export interface FakeAzure {
  readonly url: string;
  readonly port: number;
  readonly requests: readonly AzureRequest[];
  readonly violations: readonly string[];
  setDeployments(deployments: FakeDeployment[]): void;
  /** Forces a listing surface to answer this status (null restores it). */
  failListing(surface: 'data-plane' | 'projects', status: number | null): void;
  reset(): void;
  close(): Promise<void>;
}

const azureError = (code: string, message: string) => ({ error: { code, message } });
const NOT_FOUND = azureError('404', 'Resource not found');
const DEPLOYMENT_NOT_FOUND = azureError(
  'DeploymentNotFound',
  'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.',
);
const BAD_KEY = azureError(
  '401',
  'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
);
const unsupported = (what: string) => ({
  error: {
    message: `${what} is not supported by this deployment.`,
    type: 'invalid_request_error',
    param: what,
    code: 'OperationNotSupported',
  },
});

const sendJson = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
};

const sendRoute = (res: ServerResponse, result: RouteResult) => {
  if (result.kind === 'json') {
    res.writeHead(result.status, { 'content-type': 'application/json' });
    return void res.end(result.body);
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  for (const frame of result.frames) res.write(frame);
  res.end();
};

const DEPLOYMENT_PATH =
  /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings|images\/generations|images\/edits)$/;

export const startFakeAzure = async (options: FakeAzureOptions): Promise<FakeAzure> => {
  let deployments = options.deployments;
  const requests: AzureRequest[] = [];
  const violations: string[] = [];
  const failing = new Map<'data-plane' | 'projects', number>();
  const versions = {
    dataPlane: options.listingVersions?.dataPlane ?? '2023-03-15-preview',
    projects: options.listingVersions?.projects ?? '2025-05-01',
  };
  const find = (name: string) => deployments.find((d) => d.name === name);

  const handle = (r: AzureRequest, res: ServerResponse) => {
    const violation = (what: string, status: number, body: unknown) => {
      violations.push(`${r.method} ${r.path}: ${what}`);
      sendJson(res, status, body);
    };
    if (r.headers.authorization !== undefined) return violation('Authorization header sent', 401, BAD_KEY);
    if (r.headers['api-key'] !== options.apiKey)
      return violation('api-key header missing or wrong', 401, BAD_KEY);
    const version = r.query['api-version'];
    if (r.method === 'GET' && r.path === '/openai/deployments') {
      if (version !== versions.dataPlane) return violation(`listing api-version ${version}`, 404, NOT_FOUND);
      const forced = failing.get('data-plane');
      if (forced !== undefined) return sendJson(res, forced, azureError(String(forced), 'listing failed'));
      const data = deployments.map((d) => ({
        id: d.name,
        model: d.model,
        owner: 'organization-owner',
        object: 'deployment',
        status: d.status ?? 'succeeded',
        scale_settings: { scale_type: 'standard' },
        created_at: 1_700_000_000,
        updated_at: 1_700_000_000,
      }));
      return sendJson(res, 200, { data, object: 'list' });
    }
    if (
      r.method === 'GET' &&
      options.projectPath !== undefined &&
      r.path === `${options.projectPath}/deployments`
    ) {
      if (version !== versions.projects) return violation(`projects api-version ${version}`, 404, NOT_FOUND);
      const forced = failing.get('projects');
      if (forced !== undefined) return sendJson(res, forced, azureError(String(forced), 'listing failed'));
      const value = deployments.map((d) => ({
        ...(options.projectsReportPaths
          ? {
              id: `/subscriptions/s1/resourceGroups/g1/providers/Microsoft.CognitiveServices/accounts/res/deployments/${d.name}`,
            }
          : {}),
        type: 'ModelDeployment',
        name: d.name,
        modelName: d.model,
        modelVersion: d.version ?? '2024-08-06',
        modelPublisher: 'OpenAI',
        capabilities: { chat_completion: 'true' },
        sku: { name: 'GlobalStandard', capacity: 10 },
      }));
      return sendJson(res, 200, { value });
    }
    if (r.method === 'POST' && r.path === '/openai/v1/responses') {
      if (version !== undefined) {
        return violation(
          'api-version on the v1 path',
          400,
          azureError('BadRequest', 'api-version query parameter is not allowed when using /v1 path'),
        );
      }
      const body = isRecord(r.body) ? r.body : {};
      const d = typeof body.model === 'string' ? find(body.model) : undefined;
      if (d === undefined || d.script === 'not-found') return sendJson(res, 404, DEPLOYMENT_NOT_FOUND);
      return sendRoute(res, responses(body, { ...d.reply, model: d.model }));
    }
    const match = r.method === 'POST' ? DEPLOYMENT_PATH.exec(r.path) : null;
    if (!match) return violation('no such path', 404, NOT_FOUND);
    if (version !== options.apiVersion) return violation(`api-version ${version}`, 404, NOT_FOUND);
    const d = find(decodeURIComponent(match[1] ?? ''));
    if (d === undefined || d.script === 'not-found') return sendJson(res, 404, DEPLOYMENT_NOT_FOUND);
    const body: Record<string, unknown> = { ...(isRecord(r.body) ? r.body : {}), model: d.model };
    if (typeof d.script === 'object') {
      const { when } = d.script;
      const applies =
        when === undefined || (when === 'tools' ? body.tools !== undefined : body.stream === true);
      if (applies) return sendJson(res, d.script.status, d.script.body);
    }
    if (match[2] === 'embeddings') return sendRoute(res, embeddings(body, d.reply ?? {}));
    // Image deployments (gpt-image-1, dall-e-3): generations as JSON, edits as multipart read with
    // the platform's own FormData parser; the deployment decides the model, whatever the body says.
    if (match[2] === 'images/generations') return sendRoute(res, imageGenerations(body));
    if (match[2] === 'images/edits') {
      if (!r.form) return sendJson(res, 400, azureError('BadRequest', 'expected multipart/form-data'));
      return sendRoute(res, imageEdits({ ...r.form.fields, model: d.model }, r.form.files));
    }
    if (d.script === 'refuse-tools' && body.tools !== undefined)
      return sendJson(res, 400, unsupported('tools'));
    if (d.script === 'refuse-stream' && body.stream === true)
      return sendJson(res, 400, unsupported('stream'));
    return sendRoute(res, chatCompletions(body, d.reply ?? {}));
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const bytes = Buffer.concat(chunks);
      const form = await parseForm(bytes, req.headers['content-type']);
      const raw = form ? '' : bytes.toString('utf8');
      let body: unknown;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const r = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
        ...(form ? { form } : {}),
      };
      requests.push(r);
      handle(r, res);
    });
  };
  const server = options.tls ? createTlsServer(options.tls, onRequest) : createServer(onRequest);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    violations,
    setDeployments: (list) => {
      deployments = list;
    },
    failListing: (surface, status) => {
      if (status === null) failing.delete(surface);
      else failing.set(surface, status);
    },
    reset: () => {
      requests.length = 0;
      violations.length = 0;
      failing.clear();
      deployments = options.deployments;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
};
