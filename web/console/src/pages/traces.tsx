/**
 * Traces (SPEC 2.1-2.3, 4.5): a trace's tree of spans (GET /api/traces/:trace_id/tree, or
 * /api/requests/:id/trace for the trace holding a request's LLM span), opened by id, from a
 * session's traces (GET /api/sessions/:id/traces) or from a request; span detail on selection
 * (GET /api/traces/:trace_id/spans/:span_id) with events and artifact refs, and an artifact's
 * metadata (GET /api/traces/:trace_id/artifacts/:id) with its content link when there is one.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import { Link, setParams, useLocation } from '../router';
import {
  Button,
  ErrorBox,
  formatTime,
  Loading,
  Notice,
  Page,
  Section,
  Table,
  TextField,
  useAction,
  useLoad,
} from '../ui';
import {
  Fields,
  isMissingRoute,
  Money,
  type PageOf,
  proxiedPath,
  queryUrl,
  RequestLink,
  useQueryScope,
} from './requests-shared';
import './query-pages.css';

type Raw = Record<string, unknown>;

interface Span {
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  span_name: string;
  span_kind?: string;
  openinference_span_kind: string;
  service_name?: string;
  source?: string;
  started_at: string;
  ended_at: string;
  duration_ms: number;
  status: string;
  status_message?: string | null;
  payload_state: string;
  request_id: string;
  model_name?: string | null;
  provider?: string | null;
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  cost_total?: string | number | null;
  tool_name?: string | null;
  agent_name?: string | null;
  session_id?: string | null;
  attributes: Raw;
  events: Raw[];
  artifacts: Raw[];
  request: Raw | null;
}

interface TraceTree {
  trace_id: string;
  spans: Span[];
  span_count: number;
  started_at: string;
  ended_at: string;
  root_span_ids: string[];
  full_trace_available: boolean;
  truncated: boolean;
}

interface TraceSummary {
  trace_id: string;
  span_count: number;
  started_at: string;
  ended_at: string;
  root_span_name: string;
  request_ids: string[];
  full_trace_available: boolean;
}

const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

export const TracesPage = () => {
  const scope = useQueryScope();
  const { params } = useLocation();
  const traceId = params.get('trace_id') ?? '';
  const sessionId = params.get('session_id') ?? '';
  const requestId = params.get('request_id') ?? '';
  const spanId = params.get('span') ?? '';
  const [traceInput, setTraceInput] = useState(traceId);
  const [sessionInput, setSessionInput] = useState(sessionId);
  const [requestInput, setRequestInput] = useState(requestId);
  useEffect(() => setTraceInput(traceId), [traceId]);
  useEffect(() => setSessionInput(sessionId), [sessionId]);
  useEffect(() => setRequestInput(requestId), [requestId]);

  const base = { org_id: scope.org_id, project_id: scope.project_id };
  const keep = { session_id: sessionId || undefined };
  const open = (p: { trace_id?: string; request_id?: string; span?: string }) => setParams({ ...keep, ...p });

  const tree = useLoad<TraceTree | null>(
    () =>
      !scope.ready
        ? Promise.resolve(null)
        : traceId
          ? api.get<TraceTree>(queryUrl(`/traces/${encodeURIComponent(traceId)}/tree`, base))
          : requestId
            ? api.get<TraceTree>(queryUrl(`/requests/${encodeURIComponent(requestId)}/trace`, base))
            : Promise.resolve(null),
    [scope.org_id, scope.project_id, traceId, requestId],
  );

  if (!scope.ready)
    return (
      <Page title="Traces">
        <Notice>Choose an organization to see its traces.</Notice>
      </Page>
    );
  return (
    <Page title="Traces">
      <div class="card">
        <div class="row">
          <form
            class="row"
            aria-label="Open a trace by id"
            onSubmit={(e) => {
              e.preventDefault();
              if (traceInput.trim()) open({ trace_id: traceInput.trim() });
            }}
          >
            <TextField label="Trace id" value={traceInput} onValue={setTraceInput} />
            <Button type="submit" kind="primary">
              Open trace
            </Button>
          </form>
          <form
            class="row"
            aria-label="Open the trace of a request"
            onSubmit={(e) => {
              e.preventDefault();
              if (requestInput.trim()) setParams({ ...keep, request_id: requestInput.trim() });
            }}
          >
            <TextField label="Request id" value={requestInput} onValue={setRequestInput} />
            <Button type="submit">Open its trace</Button>
          </form>
          <form
            class="row"
            aria-label="List the traces of a session"
            onSubmit={(e) => {
              e.preventDefault();
              setParams({ session_id: sessionInput.trim() || undefined });
            }}
          >
            <TextField label="Session id" value={sessionInput} onValue={setSessionInput} />
            <Button type="submit">List its traces</Button>
          </form>
        </div>
      </div>
      {sessionId ? (
        <SessionTraces
          sessionId={sessionId}
          current={tree.data?.trace_id ?? traceId}
          onOpen={(id) => open({ trace_id: id })}
        />
      ) : null}
      {isMissingRoute(tree.error) ? (
        <Notice>Traces are not available on this service yet (its trace routes are not deployed).</Notice>
      ) : requestId && !traceId && tree.error instanceof ApiError && tree.error.status === 404 ? (
        <Notice>
          No trace holds request {requestId}: it was not part of a traced run (or is outside your scope).
        </Notice>
      ) : (
        <ErrorBox error={tree.error} />
      )}
      {tree.loading && (traceId || requestId) ? <Loading /> : null}
      {tree.data ? (
        <TraceView
          tree={tree.data}
          spanId={spanId}
          onSelect={(span) => open({ trace_id: tree.data!.trace_id, span })}
        />
      ) : !traceId && !requestId && !sessionId ? (
        <Notice>
          Open a trace by its id, by a request id (the trace holding that request's LLM span), or list a
          session's traces.
        </Notice>
      ) : null}
    </Page>
  );
};

const SessionTraces = (props: { sessionId: string; current: string; onOpen: (traceId: string) => void }) => {
  const scope = useQueryScope();
  const [offset, setOffset] = useState(0);
  useEffect(() => setOffset(0), [props.sessionId]);
  const list = useLoad(
    () =>
      api.get<PageOf<TraceSummary>>(
        queryUrl(`/sessions/${encodeURIComponent(props.sessionId)}/traces`, {
          org_id: scope.org_id,
          project_id: scope.project_id,
          limit: 50,
          offset,
        }),
      ),
    [scope.org_id, scope.project_id, props.sessionId, offset],
  );
  return (
    <Section title={`Traces of session ${props.sessionId}`}>
      {isMissingRoute(list.error) ? (
        <Notice>Traces are not available on this service yet.</Notice>
      ) : (
        <ErrorBox error={list.error} />
      )}
      {list.loading && !list.data ? <Loading /> : null}
      {list.data ? (
        <>
          <Table<TraceSummary>
            caption={`Traces, oldest first (${list.data.total} in all)`}
            rows={list.data.data}
            rowKey={(t) => t.trace_id}
            empty="No trace has a span in this session."
            columns={[
              {
                label: 'Trace',
                cell: (t) => (
                  <Button
                    kind={t.trace_id === props.current ? 'primary' : 'plain'}
                    aria-pressed={t.trace_id === props.current}
                    onClick={() => props.onOpen(t.trace_id)}
                  >
                    Open {t.root_span_name || t.trace_id}
                  </Button>
                ),
              },
              { label: 'Trace id', cell: (t) => <span class="qp-id">{t.trace_id}</span> },
              { label: 'Started (UTC)', cell: (t) => formatTime(t.started_at) },
              { label: 'Spans', cell: (t) => t.span_count, numeric: true },
              {
                label: 'Requests',
                cell: (t) =>
                  t.request_ids.length === 0
                    ? '—'
                    : t.request_ids.map((id) => (
                        <div key={id}>
                          <RequestLink id={id} />
                        </div>
                      )),
              },
              { label: 'Full payloads', cell: (t) => (t.full_trace_available ? 'yes' : 'no') },
            ]}
          />
          {list.data.has_more || offset > 0 ? (
            <div class="row">
              <Button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - 50))}>
                Previous traces
              </Button>
              <Button disabled={!list.data.has_more} onClick={() => setOffset(offset + 50)}>
                Next traces
              </Button>
            </div>
          ) : null}
        </>
      ) : null}
    </Section>
  );
};

const kindOf = (s: Span) => s.openinference_span_kind || s.span_kind || 'span';
const duration = (s: Span) =>
  s.status === 'pending' ? 'pending' : `${s.duration_ms.toLocaleString('en-US')} ms`;

const TraceView = (props: { tree: TraceTree; spanId: string; onSelect: (spanId: string) => void }) => {
  const t = props.tree;
  const children = new Map<string, Span[]>();
  for (const s of t.spans) {
    const k = s.parent_span_id;
    children.set(k, [...(children.get(k) ?? []), s]);
  }
  const byId = new Map(t.spans.map((s) => [s.span_id, s]));
  const roots = t.root_span_ids.map((id) => byId.get(id)).filter((s): s is Span => s !== undefined);
  const selected = props.spanId ? byId.get(props.spanId) : undefined;

  const branch = (spans: Span[], depth: number, seen: Set<string>) => (
    <ul class="tree" aria-label={depth === 0 ? 'Spans of this trace' : undefined}>
      {spans.map((s) => {
        const kids = seen.has(s.span_id) ? [] : (children.get(s.span_id) ?? []);
        const next = new Set(seen).add(s.span_id);
        return (
          <li key={s.span_id}>
            <button
              type="button"
              class="tree-item"
              aria-pressed={s.span_id === props.spanId}
              onClick={() => props.onSelect(s.span_id)}
              data-testid="span-item"
            >
              <span class="tree-kind">{kindOf(s)}</span>
              <span>{s.span_name}</span>
              <span
                class={`badge ${s.status === 'error' ? 'badge-err' : s.status === 'ok' ? 'badge-ok' : ''}`}
              >
                {s.status}
              </span>
              <span class="tree-dur">{duration(s)}</span>
            </button>
            {kids.length > 0 ? branch(kids, depth + 1, next) : null}
          </li>
        );
      })}
    </ul>
  );

  return (
    <>
      <Section title={`Trace ${t.trace_id}`}>
        <Fields
          rows={[
            ['Spans', `${t.span_count}${t.truncated ? ' (truncated: the trace is larger)' : ''}`],
            ['Started (UTC)', formatTime(t.started_at)],
            ['Ended (UTC)', formatTime(t.ended_at)],
            ['Full payloads', t.full_trace_available ? 'available' : 'summaries only'],
          ]}
        />
      </Section>
      <div class="qp-layout">
        <Section title="Span tree">
          {roots.length === 0 ? <p class="muted">This trace has no span.</p> : branch(roots, 0, new Set())}
        </Section>
        {selected ? (
          <SpanDetail traceId={t.trace_id} span={selected} />
        ) : (
          <Section title="Span detail">
            <p class="muted">Select a span in the tree to see its events and artifacts.</p>
          </Section>
        )}
      </div>
    </>
  );
};

const SpanDetail = (props: { traceId: string; span: Span }) => {
  const scope = useQueryScope();
  const detail = useLoad(
    () =>
      api.get<Span>(
        queryUrl(
          `/traces/${encodeURIComponent(props.traceId)}/spans/${encodeURIComponent(props.span.span_id)}`,
          { org_id: scope.org_id, project_id: scope.project_id },
        ),
      ),
    [scope.org_id, scope.project_id, props.traceId, props.span.span_id],
  );
  const s = detail.data ?? props.span;
  const req = s.request;
  return (
    <Section title={`Span ${s.span_name}`}>
      <ErrorBox error={detail.error} />
      {detail.loading ? <Loading /> : null}
      <Fields
        rows={[
          [
            'Span id',
            <span key="i" class="qp-id">
              {s.span_id}
            </span>,
          ],
          ['Kind', `${kindOf(s)}${s.span_kind ? ` (${s.span_kind})` : ''}`],
          ['Status', `${s.status}${s.status_message ? `: ${s.status_message}` : ''}`],
          ['Service', s.service_name],
          ['Source', s.source],
          ['Started (UTC)', formatTime(s.started_at)],
          ['Ended (UTC)', s.status === 'pending' ? 'pending' : formatTime(s.ended_at)],
          ['Duration', duration(s)],
          ['Payload', s.payload_state],
          ['Model', s.model_name],
          ['Provider', s.provider],
          [
            'Tokens (in / out)',
            s.prompt_tokens === null || s.prompt_tokens === undefined
              ? null
              : `${s.prompt_tokens} / ${s.completion_tokens ?? 0}`,
          ],
          [
            'Cost',
            s.cost_total === null || s.cost_total === undefined ? null : (
              <Money key="c" value={s.cost_total} />
            ),
          ],
          ['Tool', s.tool_name],
          ['Agent', s.agent_name],
          ['Request', s.request_id ? <RequestLink key="r" id={s.request_id} /> : null],
          [
            'Session',
            s.session_id ? (
              <Link key="s" to={`/sessions/${encodeURIComponent(s.session_id)}`}>
                {s.session_id}
              </Link>
            ) : null,
          ],
        ]}
      />
      {req ? (
        <p class="muted">
          Request: {str(req.model_served || req.model_requested)}, {str(req.status)} {str(req.http_status)},{' '}
          {str(req.total_tokens)} tokens, <Money value={str(req.total_cost_usd)} />.
        </p>
      ) : null}
      <h3>Events</h3>
      <Table<Raw>
        caption={`Events (${s.events.length})`}
        rows={s.events}
        rowKey={(e) => str(e.event_id)}
        empty="No event."
        columns={[
          { label: 'At (UTC)', cell: (e) => formatTime(str(e.occurred_at)) },
          { label: 'Event', cell: (e) => str(e.event_name) },
          { label: 'Level', cell: (e) => str(e.level) || '—' },
          { label: 'Message', cell: (e) => str(e.message) || '—' },
        ]}
      />
      <h3>Artifacts</h3>
      <Table<Raw>
        caption={`Artifacts (${s.artifacts.length})`}
        rows={s.artifacts}
        rowKey={(a) => str(a.artifact_id)}
        empty="No artifact: payloads are stored only with full capture enabled."
        columns={[
          { label: 'Kind', cell: (a) => str(a.kind) },
          { label: 'Type', cell: (a) => str(a.mime_type) || '—' },
          { label: 'Bytes', cell: (a) => str(a.byte_count) || '—', numeric: true },
          { label: 'Payload', cell: (a) => str(a.payload_state) },
          {
            label: 'Metadata',
            cell: (a) => (
              <ArtifactMeta traceId={props.traceId} artifactId={str(a.artifact_id)} kind={str(a.kind)} />
            ),
          },
        ]}
      />
      <details class="qp-alt">
        <summary>Attributes</summary>
        <pre>{JSON.stringify(s.attributes ?? {}, null, 2)}</pre>
      </details>
    </Section>
  );
};

interface ArtifactInfo extends Raw {
  url: string | null;
  url_expires_at: string | null;
}

const ArtifactMeta = (props: { traceId: string; artifactId: string; kind: string }) => {
  const scope = useQueryScope();
  const [info, setInfo] = useState<ArtifactInfo | null>(null);
  const action = useAction();
  const load = async () => {
    const r = await action.run(() =>
      api.get<ArtifactInfo>(
        queryUrl(
          `/traces/${encodeURIComponent(props.traceId)}/artifacts/${encodeURIComponent(props.artifactId)}`,
          { org_id: scope.org_id, project_id: scope.project_id },
        ),
      ),
    );
    if (r) setInfo(r);
  };
  if (!info)
    return (
      <>
        <Button busy={action.busy} onClick={load} aria-label={`Show metadata of the ${props.kind} artifact`}>
          Show
        </Button>
        <ErrorBox error={action.error} />
      </>
    );
  const { url, url_expires_at, ...rest } = info;
  return (
    <div>
      {url ? (
        <p>
          <a href={proxiedPath(url)} target="_blank" rel="noopener noreferrer">
            Open content
          </a>
          {url_expires_at ? (
            <span class="muted"> (link valid until {formatTime(url_expires_at)})</span>
          ) : null}
        </p>
      ) : (
        <p class="muted">No content stored.</p>
      )}
      <pre>{JSON.stringify(rest, null, 2)}</pre>
    </div>
  );
};
