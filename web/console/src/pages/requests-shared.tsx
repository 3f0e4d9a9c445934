/**
 * What the query pages (requests, sessions, traces, usage) share: the scope parameters every query
 * route needs, request-row types and cells, pagination, exact decimal sums and body formatting.
 */
import type { ComponentChildren } from 'preact';
import { ApiError, type Params, queryPath, urlOf } from '../api';
import { Link } from '../router';
import { useScope } from '../scope';
import { Button, formatUsd, SelectField, TextField } from '../ui';

/** org_id, and project_id when the scope names a project: what every query route takes. */
export const useQueryScope = (): { org_id: string; project_id: string | undefined; ready: boolean } => {
  const s = useScope();
  return { org_id: s.orgId, project_id: s.projectId || undefined, ready: s.orgId !== '' };
};

/** A query route (`/requests/...`) through the console proxy with the scope and more parameters. */
export const queryUrl = (route: string, params: Params): string => urlOf(queryPath(route), params);

/** A server path the query API hands out (`/api/body/...`) as the console proxy's path. */
export const proxiedPath = (url: string): string =>
  url.startsWith('/api/query/') ? url : url.startsWith('/api/') ? queryPath(url.slice(4)) : url;

/** A request row as the query routes return it (SPEC 2.12; src/query/requests.ts). */
export interface RequestRow {
  request_id: string;
  org_id: string;
  project_id: string;
  workspace_id?: string;
  api_key_id: string;
  route: string;
  model_requested: string;
  model_served: string | null;
  provider: string | null;
  stream: boolean | number;
  status: string;
  http_status: number;
  error_type: string | null;
  error_code: string | null;
  started_at: string;
  finished_at: string | null;
  latency_ms: number | string;
  ttfb_ms: number | string | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  reasoning_tokens?: number | null;
  total_cost_usd: string;
  billing_status: string;
  billing_reason: string | null;
  funding: string | null;
  session_id: string | null;
  end_user_id: string | null;
  full_tracing: boolean | number;
  tool_call_count: number | string;
  attempt_count?: number | string;
  has_request_body?: boolean | number;
  has_response_body?: boolean | number;
}

export interface PageOf<T> {
  data: T[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

export interface Facets {
  providers: string[];
  models: string[];
}

export const yes = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 'true';

export const StatusCell = (props: { status: string; http: number | string | null | undefined }) => {
  const code = Number(props.http ?? 0);
  const ok = code > 0 && code < 400;
  return (
    <span class={`badge ${ok ? 'badge-ok' : 'badge-err'}`}>
      {props.status}
      {code ? ` ${code}` : ''}
    </span>
  );
};

export const tokens = (r: { prompt_tokens: number; completion_tokens: number; total_tokens: number }) =>
  `${r.prompt_tokens} + ${r.completion_tokens} = ${r.total_tokens}`;

export const ms = (v: number | string | null | undefined): string =>
  v === null || v === undefined || v === '' ? '—' : `${Number(v).toLocaleString('en-US')} ms`;

export const modelOf = (r: { model_served?: string | null; model_requested?: string | null }) =>
  r.model_served || r.model_requested || '—';

export const RequestLink = (props: { id: string; children?: ComponentChildren }) => (
  <Link to={`/requests/${encodeURIComponent(props.id)}`}>{props.children ?? props.id}</Link>
);

/** Exact decimal arithmetic for money strings (no float ever touches a sum). */
const SCALE = 18;
const toUnits = (v: string | number | null | undefined): bigint => {
  const s = String(v ?? '0').trim() || '0';
  const m = /^(-?)(\d*)(?:\.(\d*))?$/.exec(s);
  if (!m) return 0n;
  const frac = (m[3] ?? '').slice(0, SCALE).padEnd(SCALE, '0');
  const units = BigInt(m[2] || '0') * 10n ** BigInt(SCALE) + BigInt(frac || '0');
  return m[1] === '-' ? -units : units;
};
const fromUnits = (u: bigint): string => {
  const neg = u < 0n;
  const abs = neg ? -u : u;
  const int = abs / 10n ** BigInt(SCALE);
  const frac = (abs % 10n ** BigInt(SCALE)).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
};
export const sumUsd = (values: readonly (string | number | null | undefined)[]): string =>
  fromUnits(values.reduce<bigint>((acc, v) => acc + toUnits(v), 0n));
export const sameUsd = (a: string, b: string): boolean => toUnits(a) === toUnits(b);
/** For chart geometry only (bar heights); never for a figure shown as text. */
export const usdForGeometry = (v: string | number | null | undefined): number => Number(v ?? 0) || 0;

export const Money = (props: { value: string | number | null | undefined }) => (
  <span title={props.value === null || props.value === undefined ? undefined : `$${props.value}`}>
    {formatUsd(props.value)}
  </span>
);

/** A body as text: pretty JSON when it parses as JSON, else as it came. */
export const prettyBody = (text: string): string => {
  const t = text.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return JSON.stringify(JSON.parse(t), null, 2);
    } catch {
      // Not JSON after all (a stream transcript, say): shown as is.
    }
  }
  return text;
};

/** `2026-05-01T10:00` (an input of type datetime-local, read as UTC) as RFC 3339; '' stays ''. */
export const utcInstant = (local: string): string => {
  if (!local) return '';
  if (/^\d{4}-\d{2}-\d{2}$/.test(local)) return local;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(local)) return `${local}:00Z`;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(local)) return `${local}Z`;
  return local;
};

export const Pager = (props: {
  what: string;
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
  onOffset: (offset: number) => void;
}) => {
  const { total, limit, offset } = props;
  const first = total === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, total);
  return (
    <nav class="pager row" aria-label={`${props.what} pages`}>
      <span role="status">
        {first}–{last} of {total} {props.what}
      </span>
      <Button disabled={offset === 0} onClick={() => props.onOffset(Math.max(0, offset - limit))}>
        Previous page
      </Button>
      <Button disabled={!props.hasMore} onClick={() => props.onOffset(offset + limit)}>
        Next page
      </Button>
    </nav>
  );
};

/** A key/value list of a record's fields. */
export const Fields = (props: { rows: readonly [string, ComponentChildren][] }) => (
  <dl class="qp-fields">
    {props.rows.map(([k, v]) => (
      <div key={k}>
        <dt>{k}</dt>
        <dd>{v === null || v === undefined || v === '' ? '—' : v}</dd>
      </div>
    ))}
  </dl>
);

export const LIMITS = [
  { value: '25', label: '25' },
  { value: '50', label: '50' },
  { value: '100', label: '100' },
  { value: '200', label: '200' },
] as const;

export const intParam = (v: string | null, fallback: number): number => {
  const n = Number(v);
  return v !== null && v !== '' && Number.isInteger(n) && n >= 0 ? n : fallback;
};

/** True when the route itself is missing (the server's catch-all 404), not an unknown id. */
export const isMissingRoute = (e: unknown): boolean =>
  e instanceof ApiError && e.status === 404 && e.message.startsWith('no route');

/** Orders money strings exactly (for sorting groups by spend). */
export const compareUsd = (a: string, b: string): number => {
  const d = toUnits(a) - toUnits(b);
  return d > 0n ? 1 : d < 0n ? -1 : 0;
};

/**
 * The end of a list's filter form, shared by requests and sessions: the time window, rows per
 * page (which applies at once), and the apply and clear buttons.
 */
export const WindowAndPaging = (props: {
  from: string;
  to: string;
  onFrom: (v: string) => void;
  onTo: (v: string) => void;
  limit: number;
  onLimit: (limit: number) => void;
  onClear: () => void;
}) => (
  <>
    <TextField label="From (UTC)" type="datetime-local" value={props.from} onValue={props.onFrom} />
    <TextField label="To (UTC, exclusive)" type="datetime-local" value={props.to} onValue={props.onTo} />
    <SelectField
      label="Rows per page"
      value={String(props.limit)}
      onValue={(v) => props.onLimit(Number(v))}
      options={LIMITS}
    />
    <Button kind="primary" type="submit">
      Apply filters
    </Button>
    <Button onClick={props.onClear}>Clear</Button>
  </>
);
