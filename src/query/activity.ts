import { ServiceError } from '../lib/errors.js';
import { type ExportResult, toCsv } from './export.js';
import type { Panel } from './panels.js';
import type { Caller } from './scope.js';

/**
 * Activity panels (SPEC 4.5: "Activity panels keep the legacy manifest CSV shape and org scope
 * only"). usage_daily and usage_breakdown predate the finance export; the consumers built on them
 * read a manifest block before the CSV, and they only ever covered one whole organization. So:
 *
 * Scope: exactly one org, named by org_id. workspace_id, project_id and api_key_id are refused
 * with 400 naming the parameter, and a developer token bound to one project is refused with 403
 * (its grant is narrower than an org-wide panel). cost_detail (the finance path) keeps every scope.
 *
 * The legacy manifest CSV shape, version 1 (CRLF line ends, the same CSV quoting as cost_detail):
 *
 *   # svc-manifest v1
 *   # panel=usage_daily
 *   # scope=org
 *   # org_id=<org id>
 *   # from=<RFC 3339 UTC, inclusive>
 *   # to=<RFC 3339 UTC, exclusive>
 *   # dimension=<comma-separated keys, empty when none>
 *   # generated_at=<RFC 3339 UTC>
 *   # rows=<number of data rows below the header>
 *   <CSV header row>
 *   <data rows>
 *
 * The manifest keys are always present and always in this order; a reader skips lines starting
 * with `#` up to the header. A manifest value never holds a line break: `%`, CR and LF in a value
 * are percent-encoded. The JSON format carries the same fields as a `manifest` object.
 */

export type ActivityPanel = Exclude<Panel, 'cost_detail'>;
export const ACTIVITY_PANELS: readonly ActivityPanel[] = ['usage_daily', 'usage_breakdown'];
export const isActivityPanel = (p: Panel): p is ActivityPanel => p !== 'cost_detail';

export const MANIFEST_VERSION = 'svc-manifest v1';

/** What the panel parameter's 400 says: the panels and the shape and scope rules of each kind. */
export const PANEL_HELP =
  'panel must be one of cost_detail (finance export, the default: scope by org_id with optional ' +
  'project_id and api_key_id, or by workspace_id), usage_daily or usage_breakdown (activity panels: ' +
  'org_id only, CSV in the legacy manifest shape of `# key=value` lines before the header)';

const NOT_ORG_SCOPE = ['workspace_id', 'project_id', 'api_key_id'] as const;

/** Throws unless the request names exactly one org and nothing narrower or wider. */
export const assertActivityScope = (
  panel: ActivityPanel,
  q: Record<string, string | undefined>,
  caller: Caller,
): void => {
  for (const param of NOT_ORG_SCOPE)
    if (q[param] !== undefined)
      throw new ServiceError(
        'bad_request',
        `${param} is not accepted by the activity panel ${panel}: activity panels cover exactly one organization (org_id only); use panel=cost_detail to scope by ${param}`,
        { param },
      );
  if (!q.org_id)
    throw new ServiceError('bad_request', `the activity panel ${panel} needs org_id (org scope only)`, {
      param: 'org_id',
    });
  if (caller.kind === 'developer' && caller.projectId)
    throw new ServiceError(
      'forbidden',
      `this developer token is bound to one project; the activity panel ${panel} covers a whole organization`,
      { param: 'project_id' },
    );
};

export interface Manifest {
  panel: ActivityPanel;
  scope: 'org';
  org_id: string;
  from: string;
  to: string;
  dimension: string;
  generated_at: string;
  rows: string;
}

export const activityManifest = (m: {
  panel: ActivityPanel;
  orgId: string;
  from: Date;
  to: Date;
  dimensionKeys: readonly string[];
  generatedAt: Date;
  rows: number;
}): Manifest => ({
  panel: m.panel,
  scope: 'org',
  org_id: m.orgId,
  from: m.from.toISOString(),
  to: m.to.toISOString(),
  dimension: m.dimensionKeys.join(','),
  generated_at: m.generatedAt.toISOString(),
  rows: String(m.rows),
});

const MANIFEST_KEYS: readonly (keyof Manifest)[] = [
  'panel',
  'scope',
  'org_id',
  'from',
  'to',
  'dimension',
  'generated_at',
  'rows',
];

const manifestValue = (v: string): string =>
  v.replaceAll('%', '%25').replaceAll('\r', '%0D').replaceAll('\n', '%0A');

export const toManifestCsv = (manifest: Manifest, result: ExportResult): string => {
  const head = [`# ${MANIFEST_VERSION}`, ...MANIFEST_KEYS.map((k) => `# ${k}=${manifestValue(manifest[k])}`)];
  return `${head.join('\r\n')}\r\n${toCsv(result)}`;
};
