/**
 * Usage (SPEC 4.5): overview figures (GET /api/metrics/overview), spend and tokens over time
 * (GET /api/usage: one series by day or hour, totals by provider and model), the same over days
 * broken down by model, provider, project or API key (the export panels as JSON: usage_daily for
 * model, provider and project; cost_detail and usage_breakdown for keys, the one place keys are
 * grouped), the workspace report of a closed month (GET /api/reports/workspace) and the finance
 * exports (GET /api/exports/panel, downloaded as an attachment).
 */
import { useState } from 'preact/hooks';
import { api, download } from '../api';
import { setParams, useLocation } from '../router';
import { useScope } from '../scope';
import {
  Button,
  type Column,
  ErrorBox,
  formatUsd,
  Loading,
  Notice,
  Page,
  Section,
  SelectField,
  Table,
  TextField,
  useAction,
  useLoad,
} from '../ui';
import { BarChart, type ChartSeries, compact, compactUsd } from './chart';
import {
  compareUsd,
  isMissingRoute,
  Money,
  ms,
  queryUrl,
  sumUsd,
  usdForGeometry,
  useQueryScope,
} from './requests-shared';
import './query-pages.css';

const DAY = 86_400_000;
const ymd = (d: Date) => d.toISOString().slice(0, 10);
const todayUtc = () => new Date(`${ymd(new Date())}T00:00:00Z`);
const defaultFrom = () => ymd(new Date(todayUtc().getTime() - 29 * DAY));
const defaultTo = () => ymd(new Date(todayUtc().getTime() + DAY));

interface Figures {
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: string;
}
interface UsageAnswer {
  granularity: 'day' | 'hour';
  totals: Figures;
  series: (Figures & { bucket: string })[];
  by_model: (Figures & { provider: string | null; model: string | null })[];
}
interface Overview extends Figures {
  error_rate: number;
  sessions: number;
  active_api_keys: number;
  streamed: number;
  billing_failures: number;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}
interface ExportJson {
  columns: string[];
  rows: Record<string, string | null>[];
}

export const UsagePage = () => {
  const scope = useQueryScope();
  const { params } = useLocation();
  const from = params.get('from') || defaultFrom();
  const to = params.get('to') || defaultTo();
  const granularity = params.get('granularity') === 'hour' ? 'hour' : 'day';
  const groupBy = (params.get('group') ?? 'model') as GroupBy;
  const [form, setForm] = useState({ from, to });
  const set = (next: Record<string, string | undefined>) =>
    setParams({ from, to, granularity, group: groupBy, ...next });

  if (!scope.ready)
    return (
      <Page title="Usage">
        <Notice>Choose an organization to see its usage.</Notice>
      </Page>
    );
  return (
    <Page title="Usage">
      <form
        class="card row"
        aria-label="Usage window"
        onSubmit={(e) => {
          e.preventDefault();
          set({ from: form.from, to: form.to });
        }}
      >
        <TextField
          label="From (UTC day)"
          type="date"
          value={form.from}
          onValue={(v) => setForm({ ...form, from: v })}
        />
        <TextField
          label="To (UTC day, exclusive)"
          type="date"
          value={form.to}
          onValue={(v) => setForm({ ...form, to: v })}
        />
        <SelectField
          label="Buckets"
          value={granularity}
          onValue={(v) => set({ granularity: v })}
          options={[
            { value: 'day', label: 'By day' },
            { value: 'hour', label: 'By hour' },
          ]}
        />
        <Button type="submit" kind="primary">
          Show
        </Button>
      </form>
      <OverviewSection from={from} to={to} />
      <OverTime from={from} to={to} granularity={granularity} />
      <Breakdown from={from} to={to} groupBy={groupBy} onGroupBy={(g) => set({ group: g })} />
      <WorkspaceReport />
      <Exports />
    </Page>
  );
};

const OverviewSection = (props: { from: string; to: string }) => {
  const scope = useQueryScope();
  const o = useLoad(
    () =>
      api.get<Overview>(
        queryUrl('/metrics/overview', {
          org_id: scope.org_id,
          project_id: scope.project_id,
          from: props.from,
          to: props.to,
        }),
      ),
    [scope.org_id, scope.project_id, props.from, props.to],
  );
  const d = o.data;
  return (
    <Section title="Overview">
      <ErrorBox error={o.error} />
      {o.loading && !d ? <Loading /> : null}
      {d ? (
        <dl class="qp-metrics">
          {(
            [
              ['Spend', formatUsd(d.cost_usd)],
              ['Requests', d.requests.toLocaleString('en-US')],
              ['Errors', `${d.errors} (${(d.error_rate * 100).toFixed(1)}%)`],
              ['Tokens in', d.prompt_tokens.toLocaleString('en-US')],
              ['Tokens out', d.completion_tokens.toLocaleString('en-US')],
              ['Sessions', d.sessions.toLocaleString('en-US')],
              ['Active API keys', String(d.active_api_keys)],
              ['Streamed', d.streamed.toLocaleString('en-US')],
              ['Billing failures', String(d.billing_failures)],
              ['Latency p50', ms(d.latency_p50_ms)],
              ['Latency p95', ms(d.latency_p95_ms)],
            ] as const
          ).map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      ) : null}
    </Section>
  );
};

/** Every bucket of the window (empty ones too), or just the answered ones when there are too many. */
const bucketsOf = (from: string, to: string, granularity: 'day' | 'hour', answered: readonly string[]) => {
  const a = Date.parse(`${from}T00:00:00Z`);
  const b = Date.parse(`${to}T00:00:00Z`);
  const step = granularity === 'day' ? DAY : 3_600_000;
  if (Number.isNaN(a) || Number.isNaN(b) || (b - a) / step > 800) return [...answered];
  const out: string[] = [];
  for (let t = a; t < b; t += step) {
    const iso = new Date(t).toISOString();
    out.push(granularity === 'day' ? iso.slice(0, 10) : `${iso.slice(0, 13)}:00:00Z`);
  }
  return out;
};

const OverTime = (props: { from: string; to: string; granularity: 'day' | 'hour' }) => {
  const scope = useQueryScope();
  const u = useLoad(
    () =>
      api.get<UsageAnswer>(
        queryUrl('/usage', {
          org_id: scope.org_id,
          project_id: scope.project_id,
          from: props.from,
          to: props.to,
          granularity: props.granularity,
        }),
      ),
    [scope.org_id, scope.project_id, props.from, props.to, props.granularity],
  );
  const d = u.data;
  const byBucket = new Map((d?.series ?? []).map((s) => [s.bucket, s]));
  const labels = d
    ? bucketsOf(
        props.from,
        props.to,
        props.granularity,
        d.series.map((s) => s.bucket),
      )
    : [];
  const unit = props.granularity === 'day' ? 'day' : 'hour';
  const busiest = d?.series.reduce<(typeof d.series)[number] | null>(
    (best, s) => (!best || compareUsd(s.cost_usd, best.cost_usd) > 0 ? s : best),
    null,
  );
  return (
    <Section title="Spend and tokens over time">
      <ErrorBox error={u.error} />
      {u.loading && !d ? <Loading /> : null}
      {d ? (
        d.series.length === 0 ? (
          <p class="muted">No request in this window.</p>
        ) : (
          <>
            <BarChart
              title={`Spend by ${unit}`}
              labels={labels}
              series={[
                { name: 'Spend (USD)', values: labels.map((l) => usdForGeometry(byBucket.get(l)?.cost_usd)) },
              ]}
              formatTick={compactUsd}
              summary={`Spend by ${unit} from ${props.from} to ${props.to}: ${formatUsd(d.totals.cost_usd)} in all over ${d.series.length} ${unit}s with traffic${busiest ? `; the most was ${formatUsd(busiest.cost_usd)} on ${busiest.bucket}` : ''}. The table below lists every ${unit}.`}
            />
            <BarChart
              title={`Tokens by ${unit} (in and out)`}
              labels={labels}
              series={[
                { name: 'Tokens in', values: labels.map((l) => byBucket.get(l)?.prompt_tokens ?? 0) },
                { name: 'Tokens out', values: labels.map((l) => byBucket.get(l)?.completion_tokens ?? 0) },
              ]}
              formatTick={compact}
              summary={`Tokens by ${unit}: ${d.totals.prompt_tokens} in and ${d.totals.completion_tokens} out in all. The table below lists every ${unit}.`}
            />
            <details class="qp-alt">
              <summary>Spend and tokens by {unit} as a table</summary>
              <Table<UsageAnswer['series'][number]>
                caption={`Usage by ${unit} (UTC)`}
                rows={d.series}
                rowKey={(s) => s.bucket}
                columns={[
                  { label: unit === 'day' ? 'Day' : 'Hour', cell: (s) => s.bucket },
                  { label: 'Requests', cell: (s) => s.requests, numeric: true },
                  { label: 'Errors', cell: (s) => s.errors, numeric: true },
                  { label: 'Tokens in', cell: (s) => s.prompt_tokens, numeric: true },
                  { label: 'Tokens out', cell: (s) => s.completion_tokens, numeric: true },
                  { label: 'Spend', cell: (s) => <Money value={s.cost_usd} />, numeric: true },
                ]}
              />
            </details>
            <Table<UsageAnswer['by_model'][number]>
              caption={`By provider and model, ${props.from} to ${props.to}; total ${formatUsd(d.totals.cost_usd)}`}
              rows={d.by_model}
              rowKey={(r) => `${r.provider}\u0000${r.model}`}
              columns={[
                { label: 'Provider', cell: (r) => r.provider ?? '—' },
                { label: 'Model', cell: (r) => r.model ?? '—' },
                { label: 'Requests', cell: (r) => r.requests, numeric: true },
                { label: 'Errors', cell: (r) => r.errors, numeric: true },
                { label: 'Tokens in', cell: (r) => r.prompt_tokens, numeric: true },
                { label: 'Tokens out', cell: (r) => r.completion_tokens, numeric: true },
                { label: 'Spend', cell: (r) => <Money value={r.cost_usd} />, numeric: true },
              ]}
            />
          </>
        )
      ) : null}
    </Section>
  );
};

type GroupBy = 'model' | 'provider' | 'project' | 'key';
const GROUPS: readonly { value: GroupBy; label: string }[] = [
  { value: 'model', label: 'Model' },
  { value: 'provider', label: 'Provider' },
  { value: 'project', label: 'Project' },
  { value: 'key', label: 'API key' },
];

interface Cell {
  day: string;
  group: string;
  tokens: number;
  cost: string;
}

/** Daily rows of the export panels as (day, group, tokens, cost) cells. */
const loadCells = async (
  groupBy: GroupBy,
  q: { org_id: string; project_id?: string; from: string; to: string },
): Promise<Cell[]> => {
  const panel = (name: string, withProject: boolean) =>
    api.get<ExportJson>(
      queryUrl('/exports/panel', {
        org_id: q.org_id,
        project_id: withProject ? q.project_id : undefined,
        panel: name,
        format: 'json',
        from: q.from,
        to: q.to,
      }),
    );
  // Activity panels cover a whole organization (SPEC 4.5): a project scope is applied here.
  const inProject = (r: Record<string, string | null>) => !q.project_id || r.project_id === q.project_id;
  if (groupBy !== 'key') {
    const daily = await panel('usage_daily', false);
    return daily.rows.filter(inProject).map((r) => ({
      day: r.usage_date_utc ?? '',
      group:
        groupBy === 'model'
          ? r.model || '(unknown model)'
          : groupBy === 'provider'
            ? r.provider || '(no provider)'
            : r.project_name || r.project_id || '(no project)',
      tokens: Number(r.total_tokens ?? 0),
      cost: r.cost_usd ?? '0',
    }));
  }
  const keyName = (r: Record<string, string | null>) =>
    r.api_key_name
      ? `${r.api_key_name}${r.api_key_prefix ? ` (${r.api_key_prefix})` : ''}`
      : r.api_key_prefix || r.api_key_id || '(no key)';
  const [cost, usage] = await Promise.all([panel('cost_detail', true), panel('usage_breakdown', false)]);
  return [
    ...cost.rows.map((r) => ({
      day: r.usage_date_utc ?? '',
      group: keyName(r),
      tokens: 0,
      cost: r.cost_usd ?? '0',
    })),
    ...usage.rows
      .filter((r) => inProject(r) && (r.meter ?? '').endsWith('_token'))
      .map((r) => ({
        day: r.usage_date_utc ?? '',
        group: keyName(r),
        tokens: Number(r.quantity ?? 0),
        cost: '0',
      })),
  ];
};

const TOP = 6;

const Breakdown = (props: {
  from: string;
  to: string;
  groupBy: GroupBy;
  onGroupBy: (g: GroupBy) => void;
}) => {
  const scope = useQueryScope();
  const cells = useLoad(
    () =>
      loadCells(props.groupBy, {
        org_id: scope.org_id,
        project_id: scope.project_id,
        from: props.from,
        to: props.to,
      }),
    [scope.org_id, scope.project_id, props.from, props.to, props.groupBy],
  );
  const label = GROUPS.find((g) => g.value === props.groupBy)?.label ?? props.groupBy;
  const data = cells.data ?? [];
  const groups = new Map<string, { costs: string[]; tokens: number }>();
  for (const c of data) {
    const g = groups.get(c.group) ?? { costs: [], tokens: 0 };
    g.costs.push(c.cost);
    g.tokens += c.tokens;
    groups.set(c.group, g);
  }
  const ranked = [...groups.entries()]
    .map(([name, g]) => ({ name, cost: sumUsd(g.costs), tokens: g.tokens }))
    .sort((a, b) => compareUsd(b.cost, a.cost) || b.tokens - a.tokens || a.name.localeCompare(b.name));
  const top = ranked.slice(0, TOP).map((g) => g.name);
  const bucketOf = (g: string) => (top.includes(g) ? g : 'Other');
  const names = ranked.length > TOP ? [...top, 'Other'] : top;
  const days = bucketsOf(props.from, props.to, 'day', [...new Set(data.map((c) => c.day))].sort());
  const series = (pick: (c: Cell) => number): ChartSeries[] =>
    names.map((n) => ({
      name: n,
      values: days.map((d) =>
        data.filter((c) => c.day === d && bucketOf(c.group) === n).reduce((s, c) => s + pick(c), 0),
      ),
    }));
  const total = sumUsd(ranked.map((g) => g.cost));
  const columns: Column<(typeof ranked)[number]>[] = [
    { label, cell: (g) => g.name },
    {
      label: props.groupBy === 'key' ? 'Metered tokens' : 'Tokens',
      cell: (g) => g.tokens.toLocaleString('en-US'),
      numeric: true,
    },
    { label: 'Spend', cell: (g) => <Money value={g.cost} />, numeric: true },
  ];
  return (
    <Section title={`By ${label.toLowerCase()} over days`}>
      <div class="row">
        <SelectField
          label="Group by"
          value={props.groupBy}
          onValue={(v) => props.onGroupBy(v as GroupBy)}
          options={GROUPS}
        />
      </div>
      {isMissingRoute(cells.error) ? (
        <Notice>The export panels this breakdown reads are not available on this service.</Notice>
      ) : (
        <ErrorBox error={cells.error} />
      )}
      {cells.loading ? <Loading /> : null}
      {cells.data && !cells.loading ? (
        ranked.length === 0 ? (
          <p class="muted">No usage in this window.</p>
        ) : (
          <>
            <BarChart
              title={`Daily spend by ${label.toLowerCase()}`}
              labels={days}
              series={series((c) => usdForGeometry(c.cost))}
              formatTick={compactUsd}
              summary={`Daily spend by ${label.toLowerCase()}, ${props.from} to ${props.to}: ${ranked
                .slice(0, TOP)
                .map((g) => `${g.name} ${formatUsd(g.cost)}`)
                .join(
                  ', ',
                )}${ranked.length > TOP ? `, and ${ranked.length - TOP} more` : ''}. The table below has every figure.`}
            />
            <BarChart
              title={`Daily tokens by ${label.toLowerCase()}`}
              labels={days}
              series={series((c) => c.tokens)}
              formatTick={compact}
              summary={`Daily tokens by ${label.toLowerCase()}: ${ranked
                .slice(0, TOP)
                .map((g) => `${g.name} ${g.tokens}`)
                .join(', ')}. The table below has every figure.`}
            />
            <Table
              caption={`Totals by ${label.toLowerCase()}, ${props.from} to ${props.to}; spend ${formatUsd(total)}`}
              rows={ranked}
              rowKey={(g) => g.name}
              columns={columns}
            />
            {props.groupBy === 'key' ? (
              <p class="muted">
                Key spend comes from the cost_detail panel; key tokens are the metered token quantities of the
                usage_breakdown panel (input, output and cache tokens).
              </p>
            ) : null}
          </>
        )
      ) : null}
    </Section>
  );
};

interface ReportAnswer {
  workspace_id: string;
  month: string;
  dimension: string | null;
  dimension_value: string | null;
  total_cost_usd: string;
  data: {
    org_id: string;
    project_id: string;
    api_key_id: string;
    provider: string | null;
    model: string | null;
    dimension_value?: string | null;
    requests: number;
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    cost_usd: string;
  }[];
}

const lastClosedMonth = () => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
};

const WorkspaceReport = () => {
  const s = useScope();
  const [month, setMonth] = useState(lastClosedMonth());
  const [dimension, setDimension] = useState('');
  const [dimensionValue, setDimensionValue] = useState('');
  const [report, setReport] = useState<ReportAnswer | null>(null);
  const action = useAction();
  const run = async () => {
    const r = await action.run(() =>
      api.get<ReportAnswer>(
        queryUrl('/reports/workspace', {
          workspace_id: s.workspaceId,
          org_id: s.orgId,
          month,
          dimension: dimension.trim(),
          dimension_value: dimension.trim() ? dimensionValue : undefined,
        }),
      ),
    );
    if (r) setReport(r);
  };
  const orgName = (id: string) => s.orgs.find((o) => o.org_id === id)?.name ?? id;
  const projectName = (id: string) => s.projects.find((p) => p.project_id === id)?.name ?? id;
  type Row = ReportAnswer['data'][number];
  const columns: Column<Row>[] = [
    { label: 'Organization', cell: (r) => orgName(r.org_id) },
    { label: 'Project', cell: (r) => projectName(r.project_id) },
    { label: 'API key', cell: (r) => <span class="qp-id">{r.api_key_id}</span> },
    { label: 'Provider', cell: (r) => r.provider ?? '—' },
    { label: 'Model', cell: (r) => r.model ?? '—' },
    ...(report?.dimension
      ? [{ label: report.dimension, cell: (r: Row) => r.dimension_value ?? '(none)' }]
      : []),
    { label: 'Requests', cell: (r) => r.requests, numeric: true },
    { label: 'Tokens in', cell: (r) => r.prompt_tokens, numeric: true },
    { label: 'Tokens out', cell: (r) => r.completion_tokens, numeric: true },
    { label: 'Spend', cell: (r) => <Money value={r.cost_usd} />, numeric: true },
  ];
  return (
    <Section title="Workspace report">
      <form
        class="row"
        aria-label="Workspace report"
        onSubmit={(e) => {
          e.preventDefault();
          void run();
        }}
      >
        <TextField
          label="Month (closed, UTC)"
          type="month"
          value={month}
          onValue={setMonth}
          hint="Reports cover ended months only"
        />
        <TextField label="Reporting dimension (optional)" value={dimension} onValue={setDimension} />
        <TextField
          label="Dimension value (optional)"
          value={dimensionValue}
          onValue={setDimensionValue}
          hint="Needs a dimension"
        />
        <Button type="submit" kind="primary" busy={action.busy}>
          Show report
        </Button>
      </form>
      <ErrorBox error={action.error} />
      {report ? (
        <Table<Row>
          caption={`Workspace spend for ${report.month}: ${formatUsd(report.total_cost_usd)} (exact $${report.total_cost_usd})`}
          rows={report.data}
          rowKey={(r) =>
            `${r.org_id}|${r.project_id}|${r.api_key_id}|${r.provider}|${r.model}|${r.dimension_value ?? ''}`
          }
          columns={columns}
          empty="No spend in this month."
        />
      ) : (
        <p class="muted">Pick a closed month: the report covers the whole workspace you are looking at.</p>
      )}
    </Section>
  );
};

const Exports = () => {
  const s = useScope();
  const [from, setFrom] = useState(
    ymd(new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1))),
  );
  const [to, setTo] = useState(defaultTo());
  const [panel, setPanel] = useState('cost_detail');
  const [format, setFormat] = useState('csv');
  const [dimension, setDimension] = useState('');
  const [scopeKind, setScopeKind] = useState('org');
  const [done, setDone] = useState('');
  const action = useAction();
  const activity = panel !== 'cost_detail';
  const params = {
    ...(scopeKind === 'workspace' && !activity
      ? { workspace_id: s.workspaceId }
      : { org_id: s.orgId, project_id: activity ? undefined : s.projectId || undefined }),
    panel,
    format,
    from,
    to,
    dimension: dimension.trim(),
  };
  const go = async () => {
    setDone('');
    const ok = await action.run(async () => {
      await download(queryUrl('/exports/panel', params), `${panel}_${from}_${to}.${format}`);
      return true;
    });
    if (ok) setDone(`Downloaded ${panel} (${format}) for ${from} to ${to}.`);
  };
  return (
    <Section title="Finance exports">
      <form
        class="row"
        aria-label="Finance export"
        onSubmit={(e) => {
          e.preventDefault();
          void go();
        }}
      >
        <TextField label="From (UTC day)" type="date" value={from} onValue={setFrom} />
        <TextField label="To (UTC day, exclusive)" type="date" value={to} onValue={setTo} />
        <SelectField
          label="Panel"
          value={panel}
          onValue={setPanel}
          options={[
            { value: 'cost_detail', label: 'cost_detail (finance)' },
            { value: 'usage_daily', label: 'usage_daily' },
            { value: 'usage_breakdown', label: 'usage_breakdown' },
          ]}
        />
        <SelectField
          label="Format"
          value={format}
          onValue={setFormat}
          options={[
            { value: 'csv', label: 'CSV' },
            { value: 'json', label: 'JSON' },
          ]}
        />
        <SelectField
          label="Scope"
          value={activity ? 'org' : scopeKind}
          onValue={setScopeKind}
          disabled={activity}
          options={[
            { value: 'org', label: s.projectId ? 'This project' : 'This organization' },
            { value: 'workspace', label: 'Whole workspace' },
          ]}
        />
        <TextField
          label="Dimensions (optional)"
          value={dimension}
          onValue={setDimension}
          hint="Comma-separated reporting-dimension keys, at most 8"
        />
        <Button type="submit" kind="primary" busy={action.busy} data-testid="export-download">
          Download
        </Button>
      </form>
      <p class="muted">
        The window may span at most 366 days. cost_detail has one money column, cost_usd, whose sum is the
        priced spend of the window.
        {activity ? ' Activity panels (usage_daily, usage_breakdown) cover the whole organization.' : ''}
      </p>
      <ErrorBox error={action.error} />
      {done ? <Notice>{done}</Notice> : null}
    </Section>
  );
};
