import type { PricingResult } from '../pricing/index.js';
import type { CanonicalRequest, Usage } from '../providers/contract.js';
import type { ApiKeyIdentity } from './auth/api-key-cache.js';
import type { AttemptRecord } from './pipeline.js';
import type { TraceContext } from './trace-context.js';

/**
 * Everything the gateway knows about a request, handed over when its upstream call is about to
 * begin and again when it ends (SPEC 1.3, 2.5).
 */
export interface CompletedRequest {
  requestId: string;
  key: ApiKeyIdentity;
  request: CanonicalRequest;
  /** The parsed inbound body size, for estimates and analytics. */
  requestBytes: number;
  status: 'success' | 'error';
  httpStatus: number;
  errorCode: string | null;
  errorType: string | null;
  /** `lane/model` and the upstream id of the endpoint that served (or last failed). */
  provider: string | null;
  modelServed: string | null;
  providerModelId: string | null;
  funding: 'byok' | 'wallet' | null;
  startedAt: Date;
  finishedAt: Date;
  ttfbMs: number | null;
  attempts: AttemptRecord[];
  usage: Usage | null;
  usageEstimated: boolean;
  pricing: PricingResult | null;
  /**
   * Full tracing on (org, project, key or the svc-enable-tracing header) and where it came from; a
   * source with `full` false: it was asked for and no policy decision permitted capture (SPEC 1.10, 2.3).
   */
  tracing: { full: boolean; source: 'org' | 'project' | 'api_key' | 'header' | 'none' };
  /** The policies that decided the request and their verdict (SPEC 1.9); null when none applied. */
  policy?: { version: string; decision: string } | null;
  sessionId: string | null;
  /** The trace the request belongs to (a traceparent or a session), else null or absent. */
  traceContext?: TraceContext | null;
  /** Names and counts of the tools the reply called; never their arguments. */
  toolSummary: Record<string, number>;
  /** Present only when full tracing is on. */
  bodies: { request: Buffer; response: Buffer | null } | null;
}

/**
 * Called synchronously when the request ends, before the last bytes of its reply are sent: the sink
 * makes the record survive the death of the process before returning (the record publisher journals
 * it with one write(2)) and publishes it in the background. Must not throw.
 */
export type CompletionSink = (completed: CompletedRequest) => void;

/**
 * Called synchronously just before the request's upstream call begins, so that a process that dies
 * before the request ends still leaves it recorded, as interrupted. Must not throw.
 */
export type BegunSink = (begun: CompletedRequest) => void;
