/**
 * Requests explorer (SPEC 4.5): GET /api/requests with its filters and facets, paginated in the
 * URL; a request's detail (GET /api/requests/:id) with its attempt trail, cost lines and, when
 * captured, its bodies (GET /api/body/by-request/:id); thumbs feedback (POST .../feedback).
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { Link, navigate, setParams, useLocation } from '../router';
import {
  Button,
  ErrorBox,
  formatTime,
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
import {
  type Facets,
  Fields,
  intParam,
  Money,
  modelOf,
  ms,
  type PageOf,
  Pager,
  prettyBody,
  proxiedPath,
  queryUrl,
  type RequestRow,
  StatusCell,
  sameUsd,
  sumUsd,
  tokens,
  useQueryScope,
  utcInstant,
  WindowAndPaging,
  yes,
} from './requests-shared';
import './query-pages.css';

const FILTERS = ['q', 'provider', 'model', 'status_class', 'is_stream', 'session_id', 'from', 'to'] as const;
type Filter = (typeof FILTERS)[number];
type FilterState = Record<Filter, string>;

const readFilters = (params: URLSearchParams): FilterState =>
  Object.fromEntries(FILTERS.map((k) => [k, params.get(k) ?? ''])) as FilterState;

export const RequestsPage = () => {
  const { path } = useLocation();
  const m = /^\/requests\/(.+)$/.exec(path);
  return m ? <RequestDetail id={decodeURIComponent(m[1]!)} /> : <RequestList />;
};

const RequestList = () => {
  const scope = useQueryScope();
  const { params } = useLocation();
  const applied = readFilters(params);
  const limit = intParam(params.get('limit'), 50) || 50;
  const offset = intParam(params.get('offset'), 0);
  const [form, setForm] = useState<FilterState>(applied);
  const key = params.toString();
  useEffect(() => setForm(readFilters(new URLSearchParams(location.search))), [key]);

  const facets = useLoad(
    () =>
      scope.ready
        ? api.get<Facets>(
            queryUrl('/requests/facets', { org_id: scope.org_id, project_id: scope.project_id }),
          )
        : Promise.resolve<Facets>({ providers: [], models: [] }),
    [scope.org_id, scope.project_id],
  );
  const list = useLoad(
    () =>
      scope.ready
        ? api.get<PageOf<RequestRow>>(
            queryUrl('/requests', {
              org_id: scope.org_id,
              project_id: scope.project_id,
              ...applied,
              from: utcInstant(applied.from),
              to: utcInstant(applied.to),
              limit,
              offset,
            }),
          )
        : Promise.resolve(null),
    [scope.org_id, scope.project_id, key],
  );

  const set = (k: Filter) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  const apply = (next: FilterState, nextOffset = 0, nextLimit = limit) =>
    setParams({
      ...next,
      limit: nextLimit === 50 ? undefined : nextLimit,
      offset: nextOffset || undefined,
    });
  const opts = (xs: readonly string[] | undefined, current: string) =>
    [...new Set([...(xs ?? []), ...(current ? [current] : [])])].map((x) => ({ value: x, label: x }));

  if (!scope.ready)
    return (
      <Page title="Requests">
        <Notice>Choose an organization to see its requests.</Notice>
      </Page>
    );
  return (
    <Page title="Requests">
      <form
        class="card qp-filters"
        aria-label="Request filters"
        onSubmit={(e) => {
          e.preventDefault();
          apply(form);
        }}
      >
        <div class="row">
          <TextField
            label="Search"
            value={form.q}
            onValue={set('q')}
            type="search"
            hint="Request id, model, session, end user or error code"
          />
          <SelectField
            label="Provider"
            value={form.provider}
            onValue={set('provider')}
            empty="Any provider"
            options={opts(facets.data?.providers, form.provider)}
          />
          <SelectField
            label="Model"
            value={form.model}
            onValue={set('model')}
            empty="Any model"
            options={opts(facets.data?.models, form.model)}
          />
          <SelectField
            label="Status"
            value={form.status_class}
            onValue={set('status_class')}
            empty="Any status"
            options={[
              { value: '2xx', label: '2xx success' },
              { value: '4xx', label: '4xx client error' },
              { value: '5xx', label: '5xx server error' },
            ]}
          />
          <SelectField
            label="Streaming"
            value={form.is_stream}
            onValue={set('is_stream')}
            empty="Streamed or not"
            options={[
              { value: 'true', label: 'Streamed' },
              { value: 'false', label: 'Not streamed' },
            ]}
          />
        </div>
        <div class="row">
          <TextField label="Session id" value={form.session_id} onValue={set('session_id')} />
          <WindowAndPaging
            from={form.from}
            to={form.to}
            onFrom={set('from')}
            onTo={set('to')}
            limit={limit}
            onLimit={(n) => apply(applied, 0, n)}
            onClear={() => {
              const empty = readFilters(new URLSearchParams());
              setForm(empty);
              apply(empty);
            }}
          />
        </div>
        <ErrorBox error={facets.error} />
      </form>
      <ErrorBox error={list.error} />
      {list.loading && !list.data ? <Loading /> : null}
      {list.data ? (
        <>
          <RequestTable
            rows={list.data.data}
            caption={`Requests (newest first), ${list.data.total} in all`}
          />
          <Pager
            what="requests"
            total={list.data.total}
            limit={list.data.limit}
            offset={list.data.offset}
            hasMore={list.data.has_more}
            onOffset={(o) => apply(applied, o)}
          />
        </>
      ) : null}
    </Page>
  );
};

/** The request rows; a click anywhere on a row (or Enter on its id link) opens the detail. */
export const RequestTable = (props: { rows: readonly RequestRow[]; caption: string; empty?: string }) => (
  <div class="table-wrap">
    <table class="qp-clickable">
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">Time (UTC)</th>
          <th scope="col">Request</th>
          <th scope="col">Model</th>
          <th scope="col">Provider</th>
          <th scope="col">Status</th>
          <th scope="col" class="num">
            Tokens (in + out)
          </th>
          <th scope="col" class="num">
            Cost
          </th>
          <th scope="col" class="num">
            Latency
          </th>
        </tr>
      </thead>
      <tbody>
        {props.rows.length === 0 ? (
          <tr>
            <td colSpan={8} class="muted">
              {props.empty ?? 'No request matches these filters.'}
            </td>
          </tr>
        ) : (
          props.rows.map((r) => (
            <tr
              key={r.request_id}
              data-testid="request-row"
              data-request-id={r.request_id}
              onClick={(e) => {
                if ((e.target as HTMLElement).closest('a, button')) return;
                navigate(`/requests/${encodeURIComponent(r.request_id)}`);
              }}
            >
              <td>{formatTime(r.started_at)}</td>
              <td>
                <Link to={`/requests/${encodeURIComponent(r.request_id)}`} class="qp-id">
                  {r.request_id}
                </Link>
                {yes(r.stream) ? <span class="badge qp-tag">stream</span> : null}
              </td>
              <td>{modelOf(r)}</td>
              <td>{r.provider ?? '—'}</td>
              <td>
                <StatusCell status={r.status} http={r.http_status} />
              </td>
              <td class="num">{tokens(r)}</td>
              <td class="num">
                <Money value={r.total_cost_usd} />
              </td>
              <td class="num">{ms(r.latency_ms)}</td>
            </tr>
          ))
        )}
      </tbody>
    </table>
  </div>
);

interface Attempt {
  source: string;
  kind: string | null;
  status_code: number | null;
  message: string | null;
  provider?: string;
  endpoint_id?: string;
  latency_ms?: number;
  outcome?: string;
}

interface CostLine {
  meter?: string;
  modality?: string;
  tier?: string;
  quantity?: number | string;
  unit_price?: string;
  amount: string;
  estimated?: boolean;
}

interface RequestDetailRow extends RequestRow {
  attempts: Attempt[];
  tool_summary: { declared?: string[]; calls?: { name: string; count: number }[] };
  body_urls: { request: string | null; response: string | null };
  /** Not (yet) answered by the detail route; shown when it is. */
  cost_lines?: CostLine[];
}

const RequestDetail = (props: { id: string }) => {
  const scope = useQueryScope();
  const detail = useLoad(
    () =>
      scope.ready
        ? api.get<RequestDetailRow>(
            queryUrl(`/requests/${encodeURIComponent(props.id)}`, {
              org_id: scope.org_id,
              project_id: scope.project_id,
            }),
          )
        : Promise.resolve(null),
    [scope.org_id, scope.project_id, props.id],
  );
  const r = detail.data;
  return (
    <Page
      title={`Request ${props.id}`}
      actions={
        <>
          <Link to="/requests" class="btn">
            Back to requests
          </Link>
          <Link to={`/traces?request_id=${encodeURIComponent(props.id)}`} class="btn">
            Open its trace
          </Link>
        </>
      }
    >
      {!scope.ready ? <Notice>Choose an organization.</Notice> : null}
      <ErrorBox error={detail.error} />
      {detail.loading && !r ? <Loading /> : null}
      {r ? (
        <>
          <Section title="Summary">
            <Fields
              rows={[
                ['Started (UTC)', formatTime(r.started_at)],
                ['Finished (UTC)', formatTime(r.finished_at)],
                ['Status', <StatusCell key="s" status={r.status} http={r.http_status} />],
                ['Error', r.error_type ? `${r.error_type}${r.error_code ? ` / ${r.error_code}` : ''}` : null],
                ['Route', r.route],
                ['Model requested', r.model_requested],
                ['Model served', r.model_served],
                ['Provider', r.provider],
                ['Streamed', yes(r.stream) ? 'yes' : 'no'],
                ['Tokens (in + out = total)', tokens(r)],
                ['Cache read / write tokens', `${r.cache_read_tokens ?? 0} / ${r.cache_write_tokens ?? 0}`],
                ['Reasoning tokens', r.reasoning_tokens ?? null],
                ['Cost', <Money key="c" value={r.total_cost_usd} />],
                ['Billing', `${r.billing_status}${r.billing_reason ? ` (${r.billing_reason})` : ''}`],
                ['Funding', r.funding],
                ['Latency', ms(r.latency_ms)],
                ['Time to first byte', ms(r.ttfb_ms)],
                [
                  'Session',
                  r.session_id ? (
                    <Link key="se" to={`/sessions/${encodeURIComponent(r.session_id)}`}>
                      {r.session_id}
                    </Link>
                  ) : null,
                ],
                ['End user', r.end_user_id],
                ['Project', r.project_id],
                ['API key', r.api_key_id],
                ['Full tracing', yes(r.full_tracing) ? 'on' : 'off'],
                [
                  'Tool calls',
                  r.tool_summary?.calls?.length
                    ? r.tool_summary.calls.map((c) => `${c.name} ×${c.count}`).join(', ')
                    : String(r.tool_call_count ?? 0),
                ],
              ]}
            />
          </Section>
          <Section title="Attempts">
            <Table<Attempt & { n: number }>
              caption={`Attempt trail (${r.attempts.length})`}
              rows={r.attempts.map((a, i) => ({ ...a, n: i + 1 }))}
              rowKey={(a) => String(a.n)}
              empty="No attempt was made (the request was refused before dispatch)."
              columns={[
                { label: '#', cell: (a) => a.n, numeric: true },
                { label: 'Provider', cell: (a) => a.provider ?? '—' },
                { label: 'Source', cell: (a) => a.source },
                { label: 'Endpoint', cell: (a) => a.endpoint_id ?? '—' },
                { label: 'Outcome', cell: (a) => a.outcome ?? '—' },
                { label: 'Upstream status', cell: (a) => a.status_code ?? '—', numeric: true },
                { label: 'Failure kind', cell: (a) => a.kind ?? '—' },
                { label: 'Message', cell: (a) => a.message ?? '—' },
                { label: 'Latency', cell: (a) => ms(a.latency_ms), numeric: true },
              ]}
            />
          </Section>
          <CostLines row={r} />
          <Bodies row={r} />
          <Feedback id={r.request_id} />
        </>
      ) : null}
    </Page>
  );
};

interface ExportJson {
  columns: string[];
  rows: Record<string, string | null>[];
}

/**
 * The request's cost lines. The detail route does not answer them (yet): when it does not, the
 * lines are read by band from the cost_detail export narrowed to this API key and the request's
 * start millisecond, and checked against the row's exact total before they are shown as its own.
 */
const CostLines = (props: { row: RequestDetailRow }) => {
  const r = props.row;
  const scope = useQueryScope();
  const own = r.cost_lines;
  const started = Date.parse(r.started_at);
  const bands = useLoad(
    () =>
      own || Number.isNaN(started)
        ? Promise.resolve(null)
        : api.get<ExportJson>(
            queryUrl('/exports/panel', {
              org_id: scope.org_id,
              project_id: r.project_id || scope.project_id,
              api_key_id: r.api_key_id,
              panel: 'cost_detail',
              format: 'json',
              from: new Date(started).toISOString(),
              to: new Date(started + 1).toISOString(),
            }),
          ),
    [r.request_id],
  );
  if (own)
    return (
      <Section title="Cost lines">
        <Table<CostLine & { n: number }>
          caption={`Cost lines, total ${sumUsd(own.map((l) => l.amount))} USD`}
          rows={own.map((l, i) => ({ ...l, n: i }))}
          rowKey={(l) => String(l.n)}
          empty="No cost lines: nothing billable."
          columns={[
            { label: 'Meter', cell: (l) => l.meter ?? '—' },
            { label: 'Modality', cell: (l) => l.modality || 'text' },
            { label: 'Tier', cell: (l) => l.tier || '—' },
            { label: 'Quantity', cell: (l) => l.quantity ?? '—', numeric: true },
            { label: 'Unit price', cell: (l) => (l.unit_price ? `$${l.unit_price}` : '—'), numeric: true },
            { label: 'Amount', cell: (l) => <Money value={l.amount} />, numeric: true },
            { label: 'Estimated', cell: (l) => (l.estimated ? 'yes' : 'no') },
          ]}
        />
      </Section>
    );
  const rows = bands.data?.rows ?? [];
  const total = sumUsd(rows.map((x) => x.cost_usd));
  const matches = rows.length > 0 && sameUsd(total, r.total_cost_usd);
  return (
    <Section title="Cost lines">
      {bands.loading ? <Loading /> : null}
      <ErrorBox error={bands.error} />
      {bands.data ? (
        <>
          <Table<Record<string, string | null>>
            caption={`Cost by band, total ${formatUsdExact(total)}`}
            rows={rows}
            rowKey={(x) => `${x.cost_band}\u0000${x.usage_date_utc}`}
            empty="No cost lines: nothing was billed for this request."
            columns={[
              { label: 'Cost band (meter.modality)', cell: (x) => x.cost_band ?? '—' },
              { label: 'Amount', cell: (x) => <Money value={x.cost_usd} />, numeric: true },
            ]}
          />
          <p class="muted">
            {rows.length === 0
              ? null
              : matches
                ? `The bands add up exactly to the request's cost (${formatUsdExact(r.total_cost_usd)}).`
                : `These bands (from the cost_detail export of this API key for the request's start millisecond) do not add up to the request's cost of ${formatUsdExact(r.total_cost_usd)}: another request of the same key started in the same millisecond.`}
          </p>
        </>
      ) : null}
    </Section>
  );
};

const formatUsdExact = (v: string) => `$${v}`;

const Bodies = (props: { row: RequestDetailRow }) => {
  const urls = props.row.body_urls ?? { request: null, response: null };
  if (!urls.request && !urls.response)
    return (
      <Section title="Bodies">
        <p class="muted">
          No body was captured for this request (bodies are recorded only with full tracing enabled).
        </p>
      </Section>
    );
  return (
    <Section title="Bodies">
      <div class="qp-bodies">
        {urls.request ? <Body side="request" url={urls.request} /> : null}
        {urls.response ? <Body side="response" url={urls.response} /> : null}
      </div>
    </Section>
  );
};

const Body = (props: { side: 'request' | 'response'; url: string }) => {
  const [text, setText] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const action = useAction();
  const toggle = async () => {
    if (open) {
      setOpen(false);
      return;
    }
    if (text === null) {
      const body = await action.run(() => api.get<unknown>(proxiedPath(props.url)));
      if (body === undefined) return;
      setText(prettyBody(typeof body === 'string' ? body : JSON.stringify(body)));
    }
    setOpen(true);
  };
  const id = `body-${props.side}`;
  return (
    <div class="qp-body">
      <Button busy={action.busy} aria-expanded={open} aria-controls={id} onClick={toggle}>
        {open ? `Hide ${props.side} body` : `Show ${props.side} body`}
      </Button>
      <ErrorBox error={action.error} />
      {open && text !== null ? (
        <>
          <h3 class="sr-only">{props.side === 'request' ? 'Request body' : 'Response body'}</h3>
          <pre id={id} data-testid="request-body" data-side={props.side}>
            {text}
          </pre>
        </>
      ) : null}
    </div>
  );
};

const Feedback = (props: { id: string }) => {
  const scope = useQueryScope();
  const [comment, setComment] = useState('');
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  const send = async (rating: 'up' | 'down') => {
    const ok = await action.run(() =>
      api.post(
        queryUrl(`/requests/${encodeURIComponent(props.id)}/feedback`, {
          org_id: scope.org_id,
          project_id: scope.project_id,
        }),
        { rating, comment: comment.trim() || null },
      ),
    );
    if (ok !== undefined)
      setSaved(rating === 'up' ? 'Thanks: recorded a thumbs up.' : 'Recorded a thumbs down.');
  };
  return (
    <Section title="Feedback">
      <div class="row">
        <TextField label="Comment (optional)" value={comment} onValue={(v) => setComment(v.slice(0, 4000))} />
        <Button busy={action.busy} onClick={() => send('up')}>
          Thumbs up
        </Button>
        <Button busy={action.busy} onClick={() => send('down')}>
          Thumbs down
        </Button>
      </div>
      {saved ? <Notice>{saved}</Notice> : null}
      <ErrorBox error={action.error} />
    </Section>
  );
};
