import { z } from 'zod';
import type { Destination } from '../destinations.js';
import { type AzureHttp, excerpt } from './client.js';
import { shortDeploymentName } from './origin.js';

/** SPEC 9.3: the listing versions are the surfaces' own, unrelated to the inference api_version. */
export const PROJECTS_LISTING_VERSION = '2025-05-01';
export const DATA_PLANE_LISTING_VERSION = '2023-03-15-preview';

const MAX_PAGES = 50;

export interface ListedDeployment {
  /** The short name: what the data plane addresses and what metadata stores. */
  name: string;
  /** Every identifier the listing reported for it (resource path id, name, short name). */
  identifiers: string[];
  /** The underlying model; null when the surface did not say. */
  model: string | null;
  modelVersion: string | null;
  /** Provisioning state when the surface reports one. */
  status: string | null;
}

export interface ListingTarget {
  /** The data-plane origin (SPEC 4.7 origin resolution). */
  origin: string;
  /** Whose choice the origin and the project endpoint are (providers/destinations.ts); default operator. */
  originDestination?: Destination;
  projectDestination?: Destination;
  projectEndpoint?: string;
  discoveryApiVersion?: string;
  secret: string;
}

export type SurfaceName = 'projects' | 'data-plane';

export interface TriedSurface {
  surface: SurfaceName;
  url: string;
  outcome: string;
}

export type Listing =
  | { ok: true; surface: SurfaceName; url: string; deployments: ListedDeployment[]; tried: TriedSurface[] }
  | { ok: false; tried: TriedSurface[]; message: string };

// The data plane answers `{data: [...]}`; the projects surface (and ARM) `{value: [...], nextLink}`.
const dataPlaneItem = z.looseObject({
  id: z.string().min(1),
  model: z.string().optional(),
  status: z.string().optional(),
});
const projectsItem = z.looseObject({
  name: z.string().optional(),
  id: z.string().optional(),
  modelName: z.string().optional(),
  modelVersion: z.string().optional(),
  properties: z
    .looseObject({
      model: z.looseObject({ name: z.string().optional(), version: z.string().optional() }).optional(),
      provisioningState: z.string().optional(),
    })
    .optional(),
});
const dataPlanePage = z.looseObject({ data: z.array(dataPlaneItem) });
const projectsPage = z.looseObject({ value: z.array(projectsItem), nextLink: z.string().nullish() });
type Page =
  | { kind: 'data-plane'; page: z.infer<typeof dataPlanePage> }
  | { kind: 'projects'; page: z.infer<typeof projectsPage> };

const parsePage = (text: string): Page | null => {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const dataPlane = dataPlanePage.safeParse(json);
  if (dataPlane.success) return { kind: 'data-plane', page: dataPlane.data };
  const projects = projectsPage.safeParse(json);
  return projects.success ? { kind: 'projects', page: projects.data } : null;
};

const identifiersOf = (...ids: (string | undefined)[]): string[] => {
  const out = new Set<string>();
  for (const id of ids) {
    if (id === undefined || id === '') continue;
    out.add(id);
    out.add(shortDeploymentName(id));
  }
  return [...out];
};

const deploymentsOf = (p: Page): ListedDeployment[] => {
  if (p.kind === 'data-plane') {
    return p.page.data.map((d) => ({
      name: shortDeploymentName(d.id),
      identifiers: identifiersOf(d.id),
      model: d.model ?? null,
      modelVersion: null,
      status: d.status ?? null,
    }));
  }
  const out: ListedDeployment[] = [];
  for (const d of p.page.value) {
    const id = d.name ?? d.id;
    if (id === undefined) continue;
    out.push({
      name: shortDeploymentName(id),
      identifiers: identifiersOf(d.id, d.name),
      model: d.modelName ?? d.properties?.model?.name ?? null,
      modelVersion: d.modelVersion ?? d.properties?.model?.version ?? null,
      status: d.properties?.provisioningState ?? null,
    });
  }
  return out;
};

/** One surface, following nextLink within the same origin only: the api-key must not travel elsewhere. */
const listSurface = async (
  http: AzureHttp,
  surface: SurfaceName,
  url: string,
  secret: string,
  destination: Destination,
  tried: TriedSurface[],
): Promise<ListedDeployment[] | null> => {
  const origin = new URL(url).origin;
  const deployments: ListedDeployment[] = [];
  let next: string | null = url;
  for (let pages = 0; next !== null && pages < MAX_PAGES; pages++) {
    const headers = { 'api-key': secret, accept: 'application/json' };
    const result = await http.send('GET', next, headers, undefined, destination);
    if (!result.ok) {
      tried.push({ surface, url: next, outcome: result.error });
      return null;
    }
    const { status, text } = result.answer;
    if (status !== 200) {
      tried.push({ surface, url: next, outcome: `HTTP ${status}: ${excerpt(text) || '(empty body)'}` });
      return null;
    }
    const parsed = parsePage(text);
    if (parsed === null) {
      tried.push({ surface, url: next, outcome: `HTTP 200 but not a deployment listing: ${excerpt(text)}` });
      return null;
    }
    deployments.push(...deploymentsOf(parsed));
    const link = parsed.kind === 'projects' ? parsed.page.nextLink : null;
    next = link && new URL(link, next).origin === origin ? new URL(link, next).toString() : null;
  }
  tried.push({ surface, url, outcome: `HTTP 200 with ${deployments.length} deployments` });
  return deployments;
};

/**
 * SPEC 4.6 deployment discovery listing: the projects surface first when a project endpoint is set,
 * then the data plane; discovery_api_version overrides both versions. When none answers, the
 * message names every URL tried and what each returned.
 */
export const listDeployments = async (target: ListingTarget, http: AzureHttp): Promise<Listing> => {
  const surfaces: [SurfaceName, string, Destination][] = [];
  const version = (fallback: string) => encodeURIComponent(target.discoveryApiVersion ?? fallback);
  if (target.projectEndpoint !== undefined) {
    surfaces.push([
      'projects',
      `${target.projectEndpoint}/deployments?api-version=${version(PROJECTS_LISTING_VERSION)}`,
      target.projectDestination ?? 'operator',
    ]);
  }
  surfaces.push([
    'data-plane',
    `${target.origin}/openai/deployments?api-version=${version(DATA_PLANE_LISTING_VERSION)}`,
    target.originDestination ?? 'operator',
  ]);
  const tried: TriedSurface[] = [];
  for (const [surface, url, destination] of surfaces) {
    const deployments = await listSurface(http, surface, url, target.secret, destination, tried);
    if (deployments !== null) return { ok: true, surface, url, deployments, tried };
  }
  const lines = tried.map((t) => `GET ${t.url} -> ${t.outcome}`);
  return { ok: false, tried, message: `no deployment listing answered; tried: ${lines.join('; ')}` };
};
