import { CATALOG_COLUMNS, type CatalogColumn } from '../../commands/registry/catalog.js';
import { RATES_COLUMNS, type RatesColumn, UNBOUNDED } from '../../commands/registry/rates.js';
import { csvDataLine } from '../../lib/csv.js';
import { SseParser } from '../../lib/sse.js';
import { type AzureHttp, excerpt, type HttpResult } from '../../providers/azure/client.js';
import { type ListedDeployment, type ListingTarget, listDeployments } from '../../providers/azure/listing.js';
import { chatUrl } from '../../providers/azure/requests.js';
import { NO_BASE_URL } from '../../providers/endpoint.js';

/**
 * SPEC 4.7 deployment-host catalog collector: rows come from the live deployment listing, and each
 * capability is written only as far as a probe of the deployment proved it.
 */

/** SPEC 9.3: the probes' inference version, unrelated to any connection's api_version. */
export const DEFAULT_INFERENCE_VERSION = '2024-06-01';
export const INFERENCE_VERSION_ENV = 'AZURE_OPENAI_API_VERSION';

export const inferenceVersion = (flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string =>
  flag ?? (env[INFERENCE_VERSION_ENV] || DEFAULT_INFERENCE_VERSION);

export class CollectorError extends Error {
  override name = 'CollectorError';
}

export type ProbeOutcome = 'answered' | 'refused' | 'uncertain';
export interface Probe {
  outcome: ProbeOutcome;
  detail: string;
}
export type ProbeName = 'baseline' | 'tools' | 'stream';

export interface CollectedRow {
  deployment: string;
  model: string;
  dispatchable: boolean;
  probes: Partial<Record<ProbeName, Probe>>;
  /** null is a blank cell: not proven either way. */
  chat: boolean | null;
  tools: boolean | null;
  streaming: boolean | null;
  routable: boolean;
  reasons: string[];
}

export interface Collection {
  surface: string;
  listing_url: string;
  api_version: string;
  rows: CollectedRow[];
  /** Listed deployments that yield no row (the listing named no model), with why. */
  skipped: { deployment: string; reason: string }[];
}

const PROBE_TOOL = {
  type: 'function',
  function: {
    name: 'svc_catalog_probe',
    description: 'Never called: its presence tests tool support.',
    parameters: { type: 'object', properties: {} },
  },
};

const PROBE_BODIES: Record<ProbeName, Record<string, unknown>> = {
  baseline: { messages: [{ role: 'user', content: 'Reply with OK.' }], max_tokens: 1 },
  tools: {
    messages: [{ role: 'user', content: 'Reply with OK.' }],
    max_tokens: 1,
    tools: [PROBE_TOOL],
    tool_choice: 'auto',
  },
  stream: { messages: [{ role: 'user', content: 'Reply with OK.' }], max_tokens: 1, stream: true },
};

/** A 4xx other than auth, timeout and throttling is the deployment declining the request as sent. */
const isRefusal = (status: number) => status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);

const streamCompleted = (text: string): boolean => {
  const parser = new SseParser();
  const events = [...parser.push(new TextEncoder().encode(text)), ...parser.end()];
  return events.some((e) => e.data === '[DONE]');
};

const answered = (probe: ProbeName, text: string): boolean => {
  if (probe === 'stream') return streamCompleted(text);
  try {
    return Array.isArray((JSON.parse(text) as { choices?: unknown }).choices);
  } catch {
    return false;
  }
};

export const judgeProbe = (probe: ProbeName, result: HttpResult): Probe => {
  if (!result.ok) return { outcome: 'uncertain', detail: result.error };
  const { status, text } = result.answer;
  const detail = `HTTP ${status}${status === 200 ? '' : `: ${excerpt(text, 200)}`}`;
  if (status === 200) {
    return answered(probe, text)
      ? { outcome: 'answered', detail }
      : { outcome: 'uncertain', detail: `HTTP 200 but not a complete reply: ${excerpt(text, 200)}` };
  }
  return { outcome: isRefusal(status) ? 'refused' : 'uncertain', detail };
};

/** SPEC 4.7: true only when answered, false only when refused after the baseline succeeded. */
const capability = (probe: Probe | undefined, baselineAnswered: boolean): boolean | null => {
  if (probe?.outcome === 'answered') return true;
  if (probe?.outcome === 'refused' && baselineAnswered) return false;
  return null;
};

const isDispatchable = (d: ListedDeployment) => d.status === null || /^succeeded$/i.test(d.status);

const probeRow = async (
  d: ListedDeployment & { model: string },
  target: { origin: string; secret: string; apiVersion: string },
  http: AzureHttp,
): Promise<CollectedRow> => {
  if (!isDispatchable(d)) {
    return {
      deployment: d.name,
      model: d.model,
      dispatchable: false,
      probes: {},
      chat: null,
      tools: null,
      streaming: null,
      routable: false,
      reasons: [`deployment status is ${d.status}; not probed`],
    };
  }
  const url = chatUrl(target.origin, d.name, target.apiVersion);
  const probes: Partial<Record<ProbeName, Probe>> = {};
  for (const name of ['baseline', 'tools', 'stream'] as const) {
    const headers = {
      'api-key': target.secret,
      'content-type': 'application/json',
      accept: name === 'stream' ? 'text/event-stream' : 'application/json',
    };
    probes[name] = judgeProbe(
      name,
      await http.send('POST', url, headers, JSON.stringify(PROBE_BODIES[name])),
    );
  }
  const baseline = probes.baseline?.outcome === 'answered';
  const row = {
    chat: baseline ? true : null,
    tools: capability(probes.tools, baseline),
    streaming: capability(probes.stream, baseline),
  };
  const reasons = (['baseline', 'tools', 'stream'] as const)
    .filter((name) => probes[name]?.outcome !== 'answered')
    .map((name) => `${name} probe ${probes[name]?.outcome}: ${probes[name]?.detail}`);
  return {
    deployment: d.name,
    model: d.model,
    dispatchable: true,
    probes,
    ...row,
    routable: row.chat === true && row.tools !== null && row.streaming !== null,
    reasons,
  };
};

/**
 * Lists the deployments, refuses a listing where one base model has two deployments (which one a
 * row would describe is ambiguous), and probes each dispatchable deployment in name order.
 */
export const collectAzure = async (
  target: ListingTarget & { apiVersion: string },
  http: AzureHttp,
  onProgress?: (done: number, total: number) => void,
): Promise<Collection> => {
  const listing = await listDeployments(target, http);
  if (!listing.ok) throw new CollectorError(listing.message);
  const skipped: Collection['skipped'] = [];
  const byModel = new Map<string, ListedDeployment & { model: string }>();
  for (const d of [...listing.deployments].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (d.model === null) {
      skipped.push({ deployment: d.name, reason: 'the listing names no underlying model' });
      continue;
    }
    const earlier = byModel.get(d.model);
    if (earlier !== undefined) {
      throw new CollectorError(
        `base model ${d.model} has two deployments (${earlier.name} and ${d.name}); a catalog row describes one model once, so the run stops: remove one or collect from a resource with one`,
      );
    }
    byModel.set(d.model, { ...d, model: d.model });
  }
  const rows: CollectedRow[] = [];
  const all = [...byModel.values()];
  onProgress?.(0, all.length);
  for (const d of all) {
    rows.push(await probeRow(d, target, http));
    onProgress?.(rows.length, all.length);
  }
  return {
    surface: listing.surface,
    listing_url: listing.url,
    api_version: target.apiVersion,
    rows,
    skipped,
  };
};

const bool = (value: boolean | null) => (value === null ? '' : String(value));

/**
 * The catalog and rates CSV pair (SPEC 2.8). Prices are not in any listing, nor is the context
 * length: it is written only when the operator states it (one value for every row, as the bedrock
 * collector's --context-length), else left blank; an import refuses blanks, quoting the cell.
 */
export const collectionCsv = (
  c: Collection,
  options: { baseUrl?: string; effectiveFrom: string; contextLength?: number | null },
): { catalog: string; rates: string } => {
  let catalog = csvDataLine(CATALOG_COLUMNS);
  let rates = csvDataLine(RATES_COLUMNS);
  for (const r of c.rows) {
    const row: Record<CatalogColumn, string> = {
      model: r.model,
      provider_model_id: r.model,
      base_url: options.baseUrl ?? NO_BASE_URL,
      display_name: r.model,
      family: r.model,
      release_date: '',
      description: `deployment ${r.deployment}`,
      chat: bool(r.chat),
      embeddings: '',
      // SPEC 4.7: these endpoints report no responses support.
      responses: 'false',
      images: '',
      moderations: '',
      tools: bool(r.tools),
      streaming: bool(r.streaming),
      reasoning: '',
      input_modalities: 'text',
      output_modalities: 'text',
      context_length: options.contextLength == null ? '' : String(options.contextLength),
      max_output_tokens: '',
      enabled: String(r.routable),
    };
    catalog += csvDataLine(CATALOG_COLUMNS.map((k) => row[k]));
    for (const meter of ['input_token', 'output_token']) {
      const rate: Record<RatesColumn, string> = {
        model: r.model,
        tier: 'standard',
        meter,
        modality: 'text',
        min_context: '0',
        max_context: UNBOUNDED,
        cache_ttl: '',
        tool_type: '',
        price: '',
        effective_from: options.effectiveFrom,
        effective_to: '',
      };
      rates += csvDataLine(RATES_COLUMNS.map((k) => rate[k]));
    }
  }
  return { catalog, rates };
};
