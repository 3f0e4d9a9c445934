import { randomBytes } from 'node:crypto';
import { ServiceError } from '../lib/errors.js';
import { isPlainObject } from '../lib/fields.js';
import type { CanonicalRequest } from '../providers/contract.js';
import type { JsonOutcome, JsonReply, RelayedEvent } from '../providers/provider.js';
import type { FileSearchHit, FileSearchQuery } from './file-search-port.js';
import type { AttemptCall } from './pipeline.js';
import type { RequestScope } from './scope.js';

/**
 * Hosted file_search on /v1/responses (SPEC 4.1): retrieval runs in the service against the named
 * vector stores, and the rewritten request goes to the reference provider as a plain responses call:
 * the file_search tool is taken out and the results are given to the model as a developer message
 * before the caller's last user message. The reply then carries a `file_search_call` output item
 * first, as the OpenAI API shapes it (with `results` when `include` asks for
 * `file_search_call.results`); a stream carries that item's events after `response.created`, and the
 * upstream's later events are renumbered around it.
 */

const RESULTS_INCLUDE = 'file_search_call.results';
/** The API's range for a file_search tool's max_num_results. */
const MAX_RESULTS = 50;
const DEFAULT_RESULTS = 20;

const invalid = (message: string, param = 'tools') =>
  new ServiceError('invalid_request_error', message, { param });

/** The request's file_search tool, checked; null when it has none. */
export const fileSearchTool = (canonical: CanonicalRequest): FileSearchQuery | null => {
  if (canonical.operation !== 'responses' || !Array.isArray(canonical.raw.tools)) return null;
  const tools = canonical.raw.tools.filter((t) => isPlainObject(t) && t.type === 'file_search') as Record<
    string,
    unknown
  >[];
  if (tools.length === 0) return null;
  if (tools.length > 1) throw invalid('at most one file_search tool in a request');
  const tool = tools[0]!;
  const ids = tool.vector_store_ids;
  if (!Array.isArray(ids) || ids.length === 0 || ids.some((id) => typeof id !== 'string' || id === ''))
    throw invalid('file_search.vector_store_ids must be a non-empty array of vector store ids');
  if (ids.length > 10) throw invalid('file_search searches at most 10 vector stores');
  const max = tool.max_num_results ?? DEFAULT_RESULTS;
  if (!(typeof max === 'number' && Number.isInteger(max) && max >= 1 && max <= MAX_RESULTS))
    throw invalid(`file_search.max_num_results must be an integer from 1 to ${MAX_RESULTS}`);
  return {
    vectorStoreIds: [...new Set(ids as string[])],
    query: userQuery(canonical.raw.input),
    maxNumResults: max,
    filters: tool.filters ?? null,
    rankingOptions: tool.ranking_options ?? null,
  };
};

/** What the caller asks about: its last user message's text. */
const userQuery = (input: unknown): string => {
  if (typeof input === 'string' && input.trim() !== '') return input;
  if (Array.isArray(input))
    for (let i = input.length - 1; i >= 0; i--) {
      const item = input[i];
      if (!isPlainObject(item) || item.role !== 'user') continue;
      const text =
        typeof item.content === 'string'
          ? item.content
          : Array.isArray(item.content)
            ? item.content
                .filter((p) => isPlainObject(p) && p.type === 'input_text' && typeof p.text === 'string')
                .map((p) => (p as { text: string }).text)
                .join('\n')
            : '';
      if (text.trim() !== '') return text;
    }
  throw invalid('file_search needs a user message with text to search for', 'input');
};

/** The retrieved passages as the model reads them. */
const contextOf = (query: string, hits: readonly FileSearchHit[]): string =>
  hits.length === 0
    ? `A file search for ${JSON.stringify(query)} found nothing in the vector stores.`
    : [
        `Results of a file search for ${JSON.stringify(query)}, most relevant first. Use them to answer and name the files you rely on.`,
        ...hits.map(
          (h, i) => `[${i + 1}] ${h.filename} (${h.file_id}, score ${h.score.toFixed(4)})\n${h.text}`,
        ),
      ].join('\n\n');

/** The body sent upstream: no file_search tool, the results before the last user message. */
export const rewrittenBody = (
  raw: Record<string, unknown>,
  query: string,
  hits: readonly FileSearchHit[],
): Record<string, unknown> => {
  const body: Record<string, unknown> = { ...raw };
  const tools = (raw.tools as unknown[]).filter((t) => !(isPlainObject(t) && t.type === 'file_search'));
  if (tools.length > 0) body.tools = tools;
  else {
    delete body.tools;
    delete body.tool_choice;
  }
  if (isPlainObject(body.tool_choice) && body.tool_choice.type === 'file_search') delete body.tool_choice;
  if (Array.isArray(raw.include)) {
    const include = raw.include.filter((i) => i !== RESULTS_INCLUDE);
    if (include.length > 0) body.include = include;
    else delete body.include;
  }
  const context = { role: 'developer', content: contextOf(query, hits) };
  if (typeof raw.input === 'string') body.input = [context, { role: 'user', content: raw.input }];
  else {
    const input = [...(raw.input as unknown[])];
    let last = input.length;
    while (
      last > 0 &&
      !(isPlainObject(input[last - 1]) && (input[last - 1] as { role?: unknown }).role === 'user')
    )
      last--;
    input.splice(Math.max(0, last - 1), 0, context);
    body.input = input;
  }
  return body;
};

/** The output item the reply starts with. */
export const fileSearchCallItem = (
  query: string,
  hits: readonly FileSearchHit[],
  withResults: boolean,
): Record<string, unknown> => ({
  id: `fs_${randomBytes(16).toString('hex')}`,
  type: 'file_search_call',
  status: 'completed',
  queries: [query],
  results: withResults
    ? hits.map((h) => ({
        file_id: h.file_id,
        filename: h.filename,
        score: h.score,
        attributes: h.attributes,
        text: h.text,
      }))
    : null,
});

/** Events of the file_search_call item, output index 0, numbered from `first`. */
const itemEvents = (item: Record<string, unknown>, first: number): RelayedEvent[] => {
  const at = (type: string, n: number, more: Record<string, unknown>): RelayedEvent => ({
    event: type,
    data: JSON.stringify({ type, sequence_number: first + n, output_index: 0, ...more }),
  });
  return [
    at('response.output_item.added', 0, { item: { ...item, status: 'in_progress', results: null } }),
    at('response.file_search_call.in_progress', 1, { item_id: item.id }),
    at('response.file_search_call.searching', 2, { item_id: item.id }),
    at('response.file_search_call.completed', 3, { item_id: item.id }),
    at('response.output_item.done', 4, { item }),
  ];
};
const INJECTED = 5;

/** A response object with the item first in its output. */
const withItem = (response: unknown, item: Record<string, unknown>): unknown =>
  isPlainObject(response) && Array.isArray(response.output)
    ? { ...response, output: [item, ...response.output] }
    : response;

/** The upstream's stream with the item's events after `response.created`, later events renumbered. */
async function* shiftedEvents(
  events: AsyncIterable<RelayedEvent>,
  item: Record<string, unknown>,
): AsyncGenerator<RelayedEvent> {
  let injected = false;
  for await (const e of events) {
    let json: unknown;
    try {
      json = JSON.parse(e.data);
    } catch {
      yield e;
      continue;
    }
    if (!isPlainObject(json)) {
      yield e;
      continue;
    }
    if (!injected && json.type === 'response.created') {
      yield e;
      injected = true;
      yield* itemEvents(item, (typeof json.sequence_number === 'number' ? json.sequence_number : 0) + 1);
      continue;
    }
    const shifted: Record<string, unknown> = { ...json };
    if (injected && typeof json.sequence_number === 'number')
      shifted.sequence_number = json.sequence_number + INJECTED;
    if (typeof json.output_index === 'number') shifted.output_index = json.output_index + 1;
    if (isPlainObject(json.response)) shifted.response = withItem(json.response, item);
    yield { ...e, data: JSON.stringify(shifted) };
  }
}

/** The attempt call with the item added to whatever it answers, buffered or streamed. */
export const withFileSearchCall = (
  call: AttemptCall<JsonReply, RelayedEvent>,
  item: Record<string, unknown>,
): AttemptCall<JsonReply, RelayedEvent> => {
  return async (adapter, target): Promise<JsonOutcome> => {
    const outcome = await call(adapter, target);
    if (!outcome.ok) return outcome;
    if ('stream' in outcome) return { ok: true, stream: shiftedEvents(outcome.stream, item) };
    const reply = outcome.reply;
    return { ok: true, reply: { ...reply, body: withItem(reply.body, item) as Record<string, unknown> } };
  };
};

/** Whether the caller asked for the results in the item (`include: ["file_search_call.results"]`). */
export const wantsResults = (raw: Record<string, unknown>): boolean =>
  Array.isArray(raw.include) && raw.include.includes(RESULTS_INCLUDE);

/**
 * Runs the retrieval of a responses request's file_search tool, if it has one, and rewrites the body
 * to send; resolves with the output item the reply is to start with (null without the tool).
 */
export const hostFileSearch = async (
  scope: RequestScope,
): Promise<{ ok: true; item: Record<string, unknown> | null } | { ok: false; error: ServiceError }> => {
  const { canonical, key } = scope.input;
  try {
    const query = fileSearchTool(canonical);
    if (!query) return { ok: true, item: null };
    const port = scope.deps.fileSearch;
    if (!port)
      return {
        ok: false,
        error: new ServiceError(
          'service_unavailable',
          'hosted file_search needs vector stores, which this gateway process cannot reach (they need the analytics store: set SVC_CLICKHOUSE_URL or run the query role in this process)',
        ),
      };
    const hits = await port.search(key, query);
    const withResults = wantsResults(canonical.raw);
    canonical.raw = rewrittenBody(canonical.raw, query.query, hits);
    return { ok: true, item: fileSearchCallItem(query.query, hits, withResults) };
  } catch (err) {
    if (err instanceof ServiceError) return { ok: false, error: err };
    throw err;
  }
};
