import { Agent, request } from 'undici';
import type { AccessKeyPair } from '../../providers/bedrock/credentials.js';

import { bodyMessage, exceptionName, redactMessage } from '../../providers/bedrock/exceptions.js';
import { signRequest } from '../../providers/bedrock/sign.js';

/**
 * The two control-plane listings the catalog collector reads (SPEC 4.7, SPEC 5): foundation models
 * (required) and inference profiles (optional: without the action, profile-only models are emitted
 * disabled). Signed like runtime calls: service bedrock, the region given.
 */

export interface ModelSummary {
  modelId: string;
  modelName: string;
  providerName: string;
  outputModalities: string[];
  responseStreamingSupported: boolean;
  inferenceTypesSupported: string[];
  status: string;
}

export interface ProfileSummary {
  id: string;
  status: string;
  /** Model ids (not ARNs) the profile routes to, in any region. */
  modelIds: Set<string>;
}

export interface Listing {
  models: ModelSummary[];
  profiles: ProfileSummary[] | null;
  /** Why profiles could not be listed, when they could not. */
  profilesError: string | null;
}

export class ListingError extends Error {}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s) => typeof s === 'string') : []);
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

type Get = (
  path: string,
  query?: Record<string, string>,
) => Promise<{ status: number; name: string | null; body: unknown }>;

const getter =
  (origin: string, region: string, credentials: AccessKeyPair, agent: Agent): Get =>
  async (path, query = {}) => {
    const search = new URLSearchParams(query).toString();
    const url = `${origin}${path}${search ? `?${search}` : ''}`;
    const headers = await signRequest({
      method: 'GET',
      url,
      body: null,
      headers: { accept: 'application/json' },
      credentials,
      region,
    });
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(url, {
        method: 'GET',
        headers,
        dispatcher: agent,
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
    } catch {
      // The transport error would quote the URL; the operator gave the origin and knows it.
      throw new ListingError(`GET ${path}: the control plane could not be reached`);
    }
    const raw = await response.body.text().catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const errortype = response.headers['x-amzn-errortype'];
    const name =
      response.statusCode === 200
        ? null
        : exceptionName(Array.isArray(errortype) ? errortype[0] : errortype, body);
    return { status: response.statusCode, name, body };
  };

const failure = (path: string, r: { status: number; name: string | null; body: unknown }): string =>
  `GET ${path} answered HTTP ${r.status}${r.name ? ` ${r.name}` : ''}: ${redactMessage(bodyMessage(r.body) ?? '')}`.trim();

const modelsOf = (body: unknown): ModelSummary[] => {
  const list = (body as { modelSummaries?: unknown })?.modelSummaries;
  if (!Array.isArray(list))
    throw new ListingError('GET /foundation-models: the answer has no modelSummaries');
  return list.map((m: Record<string, unknown>) => ({
    modelId: text(m.modelId),
    modelName: text(m.modelName) || text(m.modelId),
    providerName: text(m.providerName),
    outputModalities: strings(m.outputModalities),
    responseStreamingSupported: m.responseStreamingSupported === true,
    inferenceTypesSupported: strings(m.inferenceTypesSupported),
    status: text((m.modelLifecycle as { status?: unknown } | undefined)?.status) || 'UNKNOWN',
  }));
};

const MODEL_ARN = /foundation-model\/(.+)$/;

const profilesOf = (body: unknown): ProfileSummary[] => {
  const list = (body as { inferenceProfileSummaries?: unknown })?.inferenceProfileSummaries;
  if (!Array.isArray(list))
    throw new ListingError('GET /inference-profiles: the answer has no inferenceProfileSummaries');
  return list.map((p: Record<string, unknown>) => ({
    id: text(p.inferenceProfileId),
    status: text(p.status),
    modelIds: new Set(
      (Array.isArray(p.models) ? p.models : []).flatMap((m: { modelArn?: unknown }) => {
        const id = MODEL_ARN.exec(text(m?.modelArn))?.[1];
        return id ? [id] : [];
      }),
    ),
  }));
};

/** Both listings; profiles page by nextToken. */
export const fetchListing = async (options: {
  origin: string;
  region: string;
  credentials: AccessKeyPair;
  onPage?: (pages: number) => void;
}): Promise<Listing> => {
  const agent = new Agent({ keepAliveTimeout: 1_000 });
  try {
    const get = getter(options.origin, options.region, options.credentials, agent);
    const models = await get('/foundation-models');
    if (models.status !== 200) throw new ListingError(failure('/foundation-models', models));
    options.onPage?.(1);
    const profiles: ProfileSummary[] = [];
    let token: string | undefined;
    for (let page = 2; ; page++) {
      const r = await get('/inference-profiles', {
        maxResults: '100',
        ...(token ? { nextToken: token } : {}),
      });
      if (r.status !== 200) {
        if (r.name === 'AccessDeniedException' || r.status === 403)
          return {
            models: modelsOf(models.body),
            profiles: null,
            profilesError: failure('/inference-profiles', r),
          };
        throw new ListingError(failure('/inference-profiles', r));
      }
      profiles.push(...profilesOf(r.body));
      options.onPage?.(page);
      const next = (r.body as { nextToken?: unknown }).nextToken;
      if (typeof next !== 'string' || next === '') break;
      token = next;
    }
    return { models: modelsOf(models.body), profiles, profilesError: null };
  } finally {
    await agent.close();
  }
};
