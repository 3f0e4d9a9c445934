import { z } from 'zod';
import type { RequestCompletedDraft } from './record.js';
import { NO_USAGE, TRACE_SOURCES } from './request-completed.js';

/**
 * What the gateway's journal (journal.ts) keeps of a request whose upstream call began: enough to
 * record it as interrupted when its process dies before the request ends (SPEC 1.3: every request
 * is recorded; SPEC 2.5). Field names are the envelope's.
 */
export const requestBegunSchema = z.object({
  request_id: z.string().min(1).max(256),
  org_id: z.string().min(1).max(256),
  project_id: z.string().min(1).max(256),
  workspace_id: z.string().min(1).max(256),
  api_key_id: z.string().min(1).max(256),
  route: z.string(),
  model_requested: z.string(),
  stream: z.boolean(),
  started_at: z.iso.datetime({ precision: 3, offset: true }),
  session_id: z.string().nullable(),
  end_user_id: z.string().nullable(),
  alt_beta: z.string().nullable().optional(),
  trace: z.object({ full_tracing: z.boolean(), source: z.enum(TRACE_SOURCES) }),
  declared_tools: z.array(z.string()),
});

export type RequestBegun = z.infer<typeof requestBegunSchema>;

/** The status and error of an interrupted request (request-completed.ts). */
const INTERRUPTED = { status: 'interrupted', httpStatus: 500, code: 'interrupted' } as const;

/**
 * The request.completed draft of a request whose process died after its upstream call began. What
 * the upstream did is unknown (no usage, no attempt trail), so it is served-and-not-charged like
 * any request whose billing failed (SPEC 7.6 rule 2): billing failed with reason `interrupted`,
 * and settlement releases its escrow hold at 0 USD. `endedBy` is the last sign of life of the
 * process (its journal's last write), never before the request began.
 */
export const interruptedDraft = (b: RequestBegun, endedBy: Date): RequestCompletedDraft => {
  const started = new Date(b.started_at);
  const finished = new Date(Math.max(started.getTime(), endedBy.getTime()));
  return {
    request_id: b.request_id,
    org_id: b.org_id,
    project_id: b.project_id,
    workspace_id: b.workspace_id,
    api_key_id: b.api_key_id,
    route: b.route,
    model_requested: b.model_requested,
    model_served: null,
    provider: null,
    endpoint_id: null,
    provider_model_id: null,
    stream: b.stream,
    status: INTERRUPTED.status,
    http_status: INTERRUPTED.httpStatus,
    error: { type: 'api_error', code: INTERRUPTED.code },
    started_at: started.toISOString(),
    finished_at: finished.toISOString(),
    latency_ms: finished.getTime() - started.getTime(),
    ttfb_ms: null,
    attempts: [],
    usage: { ...NO_USAGE },
    usage_lines: [],
    cost_lines: [],
    total_cost_usd: '0',
    billing: {
      status: 'failed',
      reason: 'interrupted',
      detail:
        'the gateway process stopped before the request ended; its usage is unknown and it is not charged',
      rate_card_id: null,
    },
    funding: null,
    session_id: b.session_id,
    end_user_id: b.end_user_id,
    ...(b.alt_beta ? { alt_beta: b.alt_beta } : {}),
    trace: b.trace,
    tool_summary: { declared: b.declared_tools, calls: [] },
  };
};
