import type { Command } from 'commander';
import type { TraceTree } from '../../query/traces.js';
import { type ApiTarget, apiTarget, callApi } from '../http-client.js';
import { emit } from '../output.js';
import { renderSessionTraces, renderTree, type TracePage } from './traces-render.js';

/**
 * `svc traces tree|session`: read traces through the query HTTP API (SPEC 4.5), as any client
 * would, so the answer is the one the console shows and tenant scope is enforced by the server.
 *
 * Where and as whom: --url, else SVC_QUERY_URL, else this deployment's own port on 127.0.0.1
 * (SVC_HTTP_PORT); --token, else SVC_DEVELOPER_TOKEN (a personal developer token, SPEC 2.11), else
 * this deployment's administrator token (SVC_ADMIN_TOKEN or the data dir's secrets.json, as the
 * other verbs use it). Nothing is created: without a token the command says how to give one.
 */

interface ClientFlags {
  org: string;
  project?: string;
  url?: string;
  token?: string;
  json?: boolean;
}

export const queryTarget = (
  flags: Pick<ClientFlags, 'url' | 'token'>,
  env: NodeJS.ProcessEnv = process.env,
): ApiTarget =>
  apiTarget(flags, {
    url: env.SVC_QUERY_URL,
    token: env.SVC_DEVELOPER_TOKEN,
    missingToken: 'no credential: pass --token <developer token> or set SVC_DEVELOPER_TOKEN',
  });

/** GET a query route; a refusal becomes a one-line CliError carrying the server's message. */
export const queryGet = <T>(
  flags: ClientFlags,
  path: string,
  params: Record<string, string | undefined> = {},
): Promise<T> => {
  const q = new URLSearchParams({ org_id: flags.org });
  if (flags.project) q.set('project_id', flags.project);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  return callApi<T>(queryTarget(flags), 'query API', 'GET', `${path}?${q}`);
};

const withClient = (cmd: Command) =>
  cmd
    .requiredOption('--org <org_id>', 'the organization to read (org_id)')
    .option('--project <project_id>', 'narrow to one project')
    .option('--url <url>', 'query API base URL (default SVC_QUERY_URL, else this deployment on 127.0.0.1)')
    .option('--token <token>', 'personal developer token (default SVC_DEVELOPER_TOKEN, else the admin token)')
    .option('--json', 'print JSON');

export const registerTraceCommands = (program: Command): void => {
  const traces = program
    .command('traces')
    .description('read traces (spans, events, artifact refs, joined request rows) through the query API');
  withClient(
    traces
      .command('tree')
      .argument('<trace_id>', 'the trace id (32 hex digits)')
      .description(
        'print one trace as an indented span tree: name, kind, status, duration; model, tokens and cost of LLM spans',
      ),
  ).action(async (traceId: string, opts: ClientFlags) => {
    const tree = await queryGet<TraceTree>(opts, `/api/traces/${encodeURIComponent(traceId)}/tree`);
    emit(opts.json, tree, renderTree);
  });
  withClient(
    traces
      .command('session')
      .argument('<session_id>', 'the session id')
      .option('--limit <n>', 'traces per page (at most 500)', '50')
      .option('--offset <n>', 'traces to skip', '0')
      .description(
        "list a session's traces, oldest first: span count, root span, request ids, full-payload availability",
      ),
  ).action(async (sessionId: string, opts: ClientFlags & { limit: string; offset: string }) => {
    const page = await queryGet<TracePage>(opts, `/api/sessions/${encodeURIComponent(sessionId)}/traces`, {
      limit: opts.limit,
      offset: opts.offset,
    });
    emit(opts.json, page, (p) => renderSessionTraces(sessionId, p));
  });
};
