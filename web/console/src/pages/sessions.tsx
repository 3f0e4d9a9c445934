/**
 * Sessions (SPEC 4.5): the list (GET /api/sessions, facets from /api/sessions/facets), a session's
 * timeline (GET /api/sessions/:id/timeline) and its live stream of request.completed events
 * (GET /api/sessions/:id/live, text/event-stream) prepended as they arrive.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
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
  TextField,
  useLoad,
} from '../ui';
import { RequestTable } from './requests';
import {
  type Facets,
  intParam,
  Money,
  modelOf,
  type PageOf,
  Pager,
  queryUrl,
  type RequestRow,
  StatusCell,
  tokens,
  useQueryScope,
  utcInstant,
  WindowAndPaging,
} from './requests-shared';
import './query-pages.css';

interface SessionRow {
  session_id: string;
  request_count: number;
  total_cost_usd: string;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  last_model: string | null;
  last_provider: string | null;
  first_at: string;
  last_at: string;
}

export const SessionsPage = () => {
  const { path } = useLocation();
  const m = /^\/sessions\/(.+)$/.exec(path);
  return m ? <SessionDetail id={decodeURIComponent(m[1]!)} /> : <SessionList />;
};

const FILTERS = ['q', 'provider', 'model', 'from', 'to'] as const;
type FilterState = Record<(typeof FILTERS)[number], string>;
const readFilters = (p: URLSearchParams): FilterState =>
  Object.fromEntries(FILTERS.map((k) => [k, p.get(k) ?? ''])) as FilterState;

const SessionList = () => {
  const scope = useQueryScope();
  const { params } = useLocation();
  const key = params.toString();
  const applied = readFilters(params);
  const limit = intParam(params.get('limit'), 50) || 50;
  const offset = intParam(params.get('offset'), 0);
  const [form, setForm] = useState<FilterState>(applied);
  useEffect(() => setForm(readFilters(new URLSearchParams(location.search))), [key]);
  const base = { org_id: scope.org_id, project_id: scope.project_id };

  const facets = useLoad(
    () =>
      scope.ready
        ? api.get<Facets>(queryUrl('/sessions/facets', base))
        : Promise.resolve<Facets>({ providers: [], models: [] }),
    [scope.org_id, scope.project_id],
  );
  const list = useLoad(
    () =>
      scope.ready
        ? api.get<PageOf<SessionRow>>(
            queryUrl('/sessions', {
              ...base,
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
  const apply = (next: FilterState, nextOffset = 0, nextLimit = limit) =>
    setParams({ ...next, limit: nextLimit === 50 ? undefined : nextLimit, offset: nextOffset || undefined });
  const set = (k: keyof FilterState) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  const opts = (xs: readonly string[] | undefined, cur: string) =>
    [...new Set([...(xs ?? []), ...(cur ? [cur] : [])])].map((x) => ({ value: x, label: x }));

  if (!scope.ready)
    return (
      <Page title="Sessions">
        <Notice>Choose an organization to see its sessions.</Notice>
      </Page>
    );
  return (
    <Page title="Sessions">
      <form
        class="card qp-filters"
        aria-label="Session filters"
        onSubmit={(e) => {
          e.preventDefault();
          apply(form);
        }}
      >
        <div class="row">
          <TextField label="Session id contains" type="search" value={form.q} onValue={set('q')} />
          <SelectField
            label="Last provider"
            value={form.provider}
            onValue={set('provider')}
            empty="Any provider"
            options={opts(facets.data?.providers, form.provider)}
          />
          <SelectField
            label="Last model"
            value={form.model}
            onValue={set('model')}
            empty="Any model"
            options={opts(facets.data?.models, form.model)}
          />
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
          <div class="table-wrap">
            <table class="qp-clickable">
              <caption>Sessions (latest activity first), {list.data.total} in all</caption>
              <thead>
                <tr>
                  <th scope="col">Session</th>
                  <th scope="col">First request (UTC)</th>
                  <th scope="col">Last request (UTC)</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col">Last model</th>
                  <th scope="col">Last provider</th>
                  <th scope="col" class="num">
                    Tokens (in + out)
                  </th>
                  <th scope="col" class="num">
                    Cost
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.length === 0 ? (
                  <tr>
                    <td colSpan={8} class="muted">
                      No session matches. Requests join a session when the caller sends a session id.
                    </td>
                  </tr>
                ) : (
                  list.data.data.map((s) => (
                    <tr
                      key={s.session_id}
                      data-testid="session-row"
                      data-session-id={s.session_id}
                      onClick={(e) => {
                        if ((e.target as HTMLElement).closest('a, button')) return;
                        navigate(`/sessions/${encodeURIComponent(s.session_id)}`);
                      }}
                    >
                      <td>
                        <Link to={`/sessions/${encodeURIComponent(s.session_id)}`} class="qp-id">
                          {s.session_id}
                        </Link>
                      </td>
                      <td>{formatTime(s.first_at)}</td>
                      <td>{formatTime(s.last_at)}</td>
                      <td class="num">{s.request_count}</td>
                      <td>{s.last_model ?? '—'}</td>
                      <td>{s.last_provider ?? '—'}</td>
                      <td class="num">{tokens(s)}</td>
                      <td class="num">
                        <Money value={s.total_cost_usd} />
                      </td>
                    </tr>
                  ))
                )}
              </tbody>
            </table>
          </div>
          <Pager
            what="sessions"
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

const SessionDetail = (props: { id: string }) => {
  const scope = useQueryScope();
  const { params } = useLocation();
  const limit = intParam(params.get('limit'), 100) || 100;
  const offset = intParam(params.get('offset'), 0);
  const timeline = useLoad(
    () =>
      scope.ready
        ? api.get<PageOf<RequestRow>>(
            queryUrl(`/sessions/${encodeURIComponent(props.id)}/timeline`, {
              org_id: scope.org_id,
              project_id: scope.project_id,
              limit,
              offset,
            }),
          )
        : Promise.resolve(null),
    [scope.org_id, scope.project_id, props.id, limit, offset],
  );
  return (
    <Page
      title={`Session ${props.id}`}
      actions={
        <>
          <Link to="/sessions" class="btn">
            Back to sessions
          </Link>
          <Link to={`/traces?session_id=${encodeURIComponent(props.id)}`} class="btn">
            Traces of this session
          </Link>
        </>
      }
    >
      {!scope.ready ? <Notice>Choose an organization.</Notice> : null}
      {scope.ready ? (
        <LiveFeed
          sessionId={props.id}
          orgId={scope.org_id}
          projectId={scope.project_id}
          known={timeline.data?.data ?? []}
        />
      ) : null}
      <Section title="Timeline">
        <ErrorBox error={timeline.error} />
        {timeline.loading && !timeline.data ? <Loading /> : null}
        {timeline.data ? (
          <>
            <RequestTable
              rows={timeline.data.data}
              caption={`Requests of this session, oldest first (${timeline.data.total} in all)`}
              empty="This session has no request in your scope."
            />
            <Pager
              what="requests"
              total={timeline.data.total}
              limit={timeline.data.limit}
              offset={timeline.data.offset}
              hasMore={timeline.data.has_more}
              onOffset={(o) =>
                setParams({ limit: limit === 100 ? undefined : limit, offset: o || undefined })
              }
            />
          </>
        ) : null}
      </Section>
    </Page>
  );
};

type LiveState = 'off' | 'connecting' | 'open' | 'reconnecting' | 'closed';

const LIVE_TEXT: Record<LiveState, string> = {
  off: 'Live updates are off.',
  connecting: 'Connecting to the live stream…',
  open: 'Live: new requests of this session appear here as they complete.',
  reconnecting: 'The live stream was interrupted; reconnecting…',
  closed:
    'The live stream was refused or closed (too many open streams, or the session ended). Turn it off and on to retry.',
};

/** The Live toggle: an EventSource on the session's stream, closed when off or on unmount. */
const LiveFeed = (props: {
  sessionId: string;
  orgId: string;
  projectId?: string;
  known: readonly RequestRow[];
}) => {
  const [on, setOn] = useState(false);
  const [state, setState] = useState<LiveState>('off');
  const [rows, setRows] = useState<RequestRow[]>([]);
  const [announce, setAnnounce] = useState('');
  const known = useRef(new Set<string>());
  known.current = new Set(props.known.map((r) => r.request_id));

  useEffect(() => {
    setRows([]);
  }, [props.sessionId, props.orgId, props.projectId]);

  useEffect(() => {
    if (!on) {
      setState('off');
      return;
    }
    setState('connecting');
    const es = new EventSource(
      queryUrl(`/sessions/${encodeURIComponent(props.sessionId)}/live`, {
        org_id: props.orgId,
        project_id: props.projectId,
      }),
      { withCredentials: true },
    );
    es.onopen = () => setState('open');
    es.onerror = () => setState(es.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
    es.addEventListener('request.completed', (ev) => {
      let row: RequestRow;
      try {
        row = JSON.parse((ev as MessageEvent<string>).data) as RequestRow;
      } catch {
        return;
      }
      if (!row || typeof row.request_id !== 'string') return;
      setRows((cur) =>
        cur.some((r) => r.request_id === row.request_id) ? cur : [row, ...cur].slice(0, 500),
      );
      setAnnounce(
        `New request ${modelOf(row)}, ${row.status} ${row.http_status}, ${row.total_tokens} tokens.`,
      );
    });
    return () => es.close();
  }, [on, props.sessionId, props.orgId, props.projectId]);

  return (
    <Section title="Live">
      <div class="row">
        {/* A fixed id, not useId: the toggle must stay tied to its label whatever else is on the page. */}
        <div class="field check">
          <input
            id="session-live-toggle"
            type="checkbox"
            data-testid="live-toggle"
            checked={on}
            onChange={(e) => setOn((e.currentTarget as HTMLInputElement).checked)}
          />
          <label for="session-live-toggle">Live updates</label>
        </div>
        {rows.length > 0 ? <Button onClick={() => setRows([])}>Clear live list</Button> : null}
      </div>
      <p class={state === 'closed' ? 'error' : 'muted'} role="status">
        {LIVE_TEXT[state]}
      </p>
      <p class="sr-only" aria-live="polite" aria-atomic="true">
        {announce}
      </p>
      {on || rows.length > 0 ? (
        <ol class="qp-live" aria-label="Requests that arrived live, newest first" data-testid="live-list">
          {rows.length === 0 ? (
            <li class="muted">Nothing has arrived yet. Make a request with this session id.</li>
          ) : (
            rows.map((r) => (
              <li key={r.request_id} data-testid="live-row" data-request-id={r.request_id}>
                <span>{formatTime(r.started_at)}</span>
                <Link to={`/requests/${encodeURIComponent(r.request_id)}`} class="qp-id">
                  {r.request_id}
                </Link>
                <span>{modelOf(r)}</span>
                <StatusCell status={r.status} http={r.http_status} />
                <span>{tokens(r)} tokens</span>
                <Money value={r.total_cost_usd} />
                {known.current.has(r.request_id) ? <span class="muted">(also in the timeline)</span> : null}
              </li>
            ))
          )}
        </ol>
      ) : null}
    </Section>
  );
};
