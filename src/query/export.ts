import type { AnalyticsStore } from '../analytics/port.js';
import { csvLine } from '../lib/csv.js';
import { ServiceError } from '../lib/errors.js';
import { formatUsd, parseUsd } from '../lib/money.js';
import type { ControlPlaneReads } from '../projections/control-plane/reads.js';
import { type DimensionBinding, dimensionColumn } from './dimensions.js';
import { type Panel, type PanelQuery, type PanelRow, runPanel } from './panels.js';

export interface ExportRequest extends PanelQuery {
  panel: Panel;
  workspaceIds: readonly string[];
}

export interface ExportResult {
  columns: string[];
  rows: Record<string, string | null>[];
}

const FIXED: Record<Panel, { before: string[]; after: string[] }> = {
  cost_detail: {
    before: [
      'usage_date_utc',
      'org_id',
      'org_name',
      'project_id',
      'project_name',
      'api_key_id',
      'api_key_name',
      'api_key_prefix',
      'provider',
      'model',
      'cost_band',
    ],
    after: ['cost_usd'],
  },
  usage_daily: {
    before: ['usage_date_utc', 'org_id', 'org_name', 'project_id', 'project_name', 'provider', 'model'],
    after: [
      'requests',
      'errors',
      'prompt_tokens',
      'completion_tokens',
      'total_tokens',
      'cache_read_tokens',
      'cache_write_tokens',
      'cost_usd',
    ],
  },
  usage_breakdown: {
    before: [
      'usage_date_utc',
      'org_id',
      'org_name',
      'project_id',
      'project_name',
      'api_key_id',
      'api_key_name',
      'api_key_prefix',
      'provider',
      'model',
      'meter',
      'modality',
      'tier',
    ],
    after: ['quantity'],
  },
};

export const exportColumns = (panel: Panel, d: DimensionBinding): string[] => [
  ...FIXED[panel].before,
  ...d.keys.map(dimensionColumn),
  ...FIXED[panel].after,
];

/** Display names come from the control plane's read model; an id it no longer knows stays blank. */
const nameIndex = async (reads: ControlPlaneReads, workspaceIds: readonly string[]) => {
  const [orgs, projects, keys] = await Promise.all([
    reads.organizations(workspaceIds),
    reads.projects({ workspaceIds }),
    reads.apiKeys({ workspaceIds }),
  ]);
  return {
    org: new Map(orgs.map((o) => [o.org_id, o.name])),
    project: new Map(projects.map((p) => [p.project_id, p.name])),
    key: new Map(keys.map((k) => [k.api_key_id, { name: k.name, prefix: k.prefix }])),
  };
};

export const runExport = async (
  analytics: AnalyticsStore,
  reads: ControlPlaneReads,
  req: ExportRequest,
): Promise<ExportResult> => {
  const raw = await runPanel(analytics, req.panel, req);
  if (raw.length > req.maxRows)
    throw new ServiceError(
      'bad_request',
      `the export exceeds the row cap of ${req.maxRows} rows: narrow the window, the scope or the dimensions`,
      { param: 'to' },
    );
  const names = await nameIndex(reads, req.workspaceIds);
  const columns = exportColumns(req.panel, req.dimensions);
  const rows = raw.map((r: PanelRow) => {
    const out: Record<string, string | null> = {};
    const key = r.api_key_id ? names.key.get(r.api_key_id) : undefined;
    const extra: Record<string, string | null> = {
      org_name: names.org.get(r.org_id ?? '') ?? null,
      project_name: names.project.get(r.project_id ?? '') ?? null,
      api_key_name: key?.name ?? null,
      api_key_prefix: key?.prefix ?? null,
    };
    req.dimensions.keys.forEach((k, i) => {
      extra[dimensionColumn(k)] = r[`d${i}`] ?? null;
    });
    for (const c of columns) out[c] = c in extra ? (extra[c] ?? null) : (r[c] ?? null);
    if (out.cost_usd !== undefined && out.cost_usd !== null) out.cost_usd = formatUsd(parseUsd(out.cost_usd));
    return out;
  });
  return { columns, rows };
};

export const toCsv = (result: ExportResult): string => {
  let text = csvLine(result.columns);
  for (const row of result.rows) text += csvLine(result.columns.map((c) => row[c]));
  return text;
};
