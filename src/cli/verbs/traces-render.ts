import type { TraceSummary } from '../../query/trace-summaries.js';
import type { SpanNode, TraceTree } from '../../query/traces.js';
import { table } from '../output.js';

/**
 * Terminal renderings of `svc traces` (pure: the tree or page as GET /api/traces/:id/tree and
 * GET /api/sessions/:id/traces answer them, in; text out).
 */

export const formatDuration = (ms: number): string => {
  const tenths = Math.round(ms * 10) / 10;
  return tenths < 1000 ? `${tenths} ms` : `${(ms / 1000).toFixed(ms < 9_999.5 ? 3 : 1)} s`;
};

const present = (v: unknown): v is string | number => v !== null && v !== undefined && v !== '';

/** Model, tokens and cost of an LLM span: the request row's when joined, else the span's own. */
const llmDetails = (span: SpanNode): string[] => {
  const r = span.request ?? {};
  const model = [r.model_served, span.model_name].find(present);
  const provider = [r.provider, span.provider].find(present);
  const prompt = [r.prompt_tokens, span.prompt_tokens].find(present);
  const completion = [r.completion_tokens, span.completion_tokens].find(present);
  const cost = [r.total_cost_usd, span.cost_total].find(present);
  const out: string[] = [];
  if (model !== undefined) out.push(provider !== undefined ? `${model} (${provider})` : String(model));
  if (prompt !== undefined || completion !== undefined)
    out.push(`tokens ${prompt ?? '?'} in / ${completion ?? '?'} out`);
  if (cost !== undefined) out.push(`${cost} USD`);
  if (span.request?.http_status !== undefined) out.push(`HTTP ${span.request.http_status}`);
  return out;
};

export const spanLine = (span: SpanNode): string => {
  const kind = span.openinference_span_kind || String(span.span_kind ?? '') || 'span';
  const parts = [
    span.span_name || '(unnamed)',
    kind,
    span.status,
    span.status === 'pending' ? 'running' : formatDuration(span.duration_ms),
  ];
  if (span.openinference_span_kind === 'LLM' || span.request) parts.push(...llmDetails(span));
  if (span.openinference_span_kind === 'TOOL' && present(span.tool_name) && span.tool_name !== span.span_name)
    parts.push(`tool ${span.tool_name}`);
  if (span.status === 'error' && present(span.status_message)) parts.push(`"${span.status_message}"`);
  return parts.join('  ');
};

/**
 * The spans as an indented tree: roots in the order the tree gives them, children in span order
 * (start time). A span whose parent never arrived is a root; a parent cycle cannot loop.
 */
export const renderTree = (tree: TraceTree): string => {
  const children = new Map<string, SpanNode[]>();
  const byId = new Map(tree.spans.map((s) => [s.span_id, s]));
  for (const s of tree.spans) {
    if (s.parent_span_id === '' || !byId.has(s.parent_span_id)) continue;
    children.set(s.parent_span_id, [...(children.get(s.parent_span_id) ?? []), s]);
  }
  const lines: string[] = [];
  const seen = new Set<string>();
  const walk = (span: SpanNode, prefix: string, connector: string) => {
    seen.add(span.span_id);
    lines.push(`${prefix}${connector}${spanLine(span)}`);
    const next = children.get(span.span_id)?.filter((c) => !seen.has(c.span_id)) ?? [];
    const childPrefix = prefix + (connector === '' ? '' : connector === '└─ ' ? '   ' : '│  ');
    for (const [i, c] of next.entries()) walk(c, childPrefix, i === next.length - 1 ? '└─ ' : '├─ ');
  };
  const roots = tree.root_span_ids.map((id) => byId.get(id)).filter((s): s is SpanNode => s !== undefined);
  for (const root of roots) walk(root, '', '');
  // Spans only reachable through a parent cycle: shown rather than dropped.
  for (const s of tree.spans) if (!seen.has(s.span_id)) walk(s, '', '');
  const started = Date.parse(tree.started_at);
  const ended = Date.parse(tree.ended_at);
  const span =
    Number.isFinite(started) && Number.isFinite(ended) ? `  ${formatDuration(ended - started)}` : '';
  const header = `trace ${tree.trace_id}  ${tree.span_count} span${tree.span_count === 1 ? '' : 's'}${span}  ${tree.started_at}`;
  const notes = [
    ...(tree.full_trace_available ? ['full payloads captured'] : []),
    ...(tree.truncated ? [`only the first ${tree.span_count} spans shown`] : []),
  ];
  return [header + (notes.length ? `  (${notes.join('; ')})` : ''), ...lines].join('\n');
};

export interface TracePage {
  data: TraceSummary[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

export const renderSessionTraces = (sessionId: string, page: TracePage): string => {
  if (page.total === 0) return `no traces in session ${sessionId}`;
  const rows = page.data.map((t) => ({
    ...t,
    request_ids: t.request_ids.join(',') || '-',
    full: t.full_trace_available ? 'yes' : 'no',
  }));
  const shown = `${page.offset + 1}-${page.offset + page.data.length} of ${page.total}`;
  return [
    table(rows, ['trace_id', 'started_at', 'span_count', 'root_span_name', 'request_ids', 'full']),
    `traces ${shown}${page.has_more ? ` (next: --offset ${page.offset + page.data.length})` : ''}`,
  ].join('\n');
};
