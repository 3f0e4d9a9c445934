import { type Bus, BusUnavailableError, type OutgoingMessage } from '../../events/bus.js';
import type { RequestCompleted } from '../../events/envelopes/request-completed.js';
import { InvalidSubjectError, subjects } from '../../events/subjects.js';
import { canonicalJson } from '../../lib/canonical-json.js';

export const REQUEST_LOGGED_ACTION = 'data.write.request_logged';

/**
 * The audit record of one logged request (SPEC 6), shaped like the control plane's relay records.
 * Every field comes from the envelope, never from the flush (no pack key, no clock), so each
 * redelivery produces the same canonical bytes under the same message id: the bus drops the copy
 * within its duplicate window and the audit sealer by event id beyond it. No payloads: bodies
 * appear as their byte counts and blake3 only.
 */
export interface RequestLoggedRecord {
  event_id: string;
  tenant_id: string;
  source: 'ingest';
  actor: string;
  action: typeof REQUEST_LOGGED_ACTION;
  target: { type: 'request'; id: string };
  occurred_at: string;
  details: Record<string, string | number | boolean | null>;
  /**
   * The attempt trail (SPEC 2.4, 7.5): which upstream was tried, what it answered and what the
   * gateway did next. No upstream message text: it may echo the caller's input.
   */
  attempts: {
    provider: string;
    endpoint_id: string;
    status_code: number | null;
    kind: string | null;
    outcome: string;
  }[];
}

export const requestLoggedRecord = (e: RequestCompleted): RequestLoggedRecord => ({
  event_id: `request_logged:${e.request_id}`,
  tenant_id: e.workspace_id,
  source: 'ingest',
  actor: `api_key:${e.api_key_id}`,
  action: REQUEST_LOGGED_ACTION,
  target: { type: 'request', id: e.request_id },
  occurred_at: e.finished_at,
  details: {
    org_id: e.org_id,
    project_id: e.project_id,
    api_key_id: e.api_key_id,
    route: e.route,
    status: e.status,
    http_status: e.http_status,
    model_served: e.model_served,
    provider: e.provider,
    endpoint_id: e.endpoint_id,
    // SPEC 7.5: the failure the caller saw, by its stable code (AccessDeniedException, a policy
    // denial's code, ...); null on success.
    error_type: e.error?.type ?? null,
    error_code: e.error?.code ?? null,
    attempt_count: e.attempts.length,
    billing_status: e.billing.status,
    total_cost_usd: e.total_cost_usd,
    usage_line_count: e.usage_lines.length,
    cost_line_count: e.cost_lines.length,
    request_body_bytes: e.bodies?.request?.byte_count ?? null,
    request_body_blake3: e.bodies?.request?.blake3 ?? null,
    response_body_bytes: e.bodies?.response?.byte_count ?? null,
    response_body_blake3: e.bodies?.response?.blake3 ?? null,
  },
  attempts: e.attempts.map((a) => ({
    provider: a.provider,
    endpoint_id: a.endpoint_id,
    status_code: a.status_code,
    kind: a.kind,
    outcome: a.outcome,
  })),
});

export const requestLoggedMessageId = (requestId: string): string =>
  `audit:${REQUEST_LOGGED_ACTION}:${requestId}`;

export const requestLoggedMessage = (e: RequestCompleted): OutgoingMessage => ({
  subject: subjects.audit(e.workspace_id),
  data: canonicalJson(requestLoggedRecord(e)),
  messageId: requestLoggedMessageId(e.request_id),
});

export const POLICY_DENIED_ACTION = 'policy.denied';

/**
 * The audit record of a request a policy refused (SPEC 1.9): beside its request_logged record, so
 * an auditor finds denials by action. The gateway decided; ingest relays it from the request's
 * record, deterministically (the same bytes under the same id on every redelivery).
 */
export const policyDeniedRecord = (e: RequestCompleted) => ({
  event_id: `policy_denied:${e.request_id}`,
  tenant_id: e.workspace_id,
  source: 'gateway' as const,
  actor: `api_key:${e.api_key_id}`,
  action: POLICY_DENIED_ACTION,
  target: { type: 'request' as const, id: e.request_id },
  occurred_at: e.finished_at,
  details: {
    org_id: e.org_id,
    project_id: e.project_id,
    api_key_id: e.api_key_id,
    route: e.route,
    // The caller's selector, cut: it is theirs to make as long as a body allows.
    model_requested:
      e.model_requested.length > 256 ? `${e.model_requested.slice(0, 256)}…` : e.model_requested,
    http_status: e.http_status,
    decision: e.policy?.decision ?? null,
    policy_version: e.policy?.version ?? null,
  },
});

const isPolicyDenial = (e: RequestCompleted): boolean => e.error?.code === 'policy_denied';

/** One envelope's audit messages, or why it cannot have them (its tenant id is no subject token). */
export const auditMessages = (
  envelopes: readonly RequestCompleted[],
): { messages: { requestId: string; message: OutgoingMessage }[]; invalid: Map<string, string> } => {
  const messages: { requestId: string; message: OutgoingMessage }[] = [];
  const invalid = new Map<string, string>();
  for (const e of envelopes) {
    try {
      messages.push({ requestId: e.request_id, message: requestLoggedMessage(e) });
      if (isPolicyDenial(e))
        messages.push({
          requestId: e.request_id,
          message: {
            subject: subjects.audit(e.workspace_id),
            data: canonicalJson(policyDeniedRecord(e)),
            messageId: `audit:${POLICY_DENIED_ACTION}:${e.request_id}`,
          },
        });
    } catch (err) {
      if (!(err instanceof InvalidSubjectError)) throw err;
      invalid.set(e.request_id, err.message);
    }
  }
  return { messages, invalid };
};

/**
 * The audit events of one flush in one batch publish; resolves once the bus stored them, with the
 * requests whose event the bus refused. A batch refused for any reason but unavailability is sent
 * again message by message (as the request publisher does), so one message the bus will not take
 * fails only its own request. Unavailability rejects: nothing would get through one by one either.
 * A rejection may leave some stored: emitting again stores none twice (same ids).
 */
export const emitRequestsLogged = async (
  bus: Bus,
  messages: readonly { requestId: string; message: OutgoingMessage }[],
  onRefused: (err: unknown) => void = () => {},
): Promise<Map<string, string>> => {
  const refused = new Map<string, string>();
  try {
    await bus.publishMany(messages.map((m) => m.message));
    return refused;
  } catch (err) {
    if (err instanceof BusUnavailableError) throw err;
    onRefused(err);
  }
  for (const { requestId, message } of messages) {
    const { subject, data, ...options } = message;
    try {
      await bus.publish(subject, data, options);
    } catch (err) {
      if (err instanceof BusUnavailableError) throw err;
      refused.set(requestId, err instanceof Error ? err.message : String(err));
    }
  }
  return refused;
};
