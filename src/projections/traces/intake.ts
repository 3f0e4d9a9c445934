import { type Bus, BusUnavailableError } from '../../events/bus.js';
import { traceMessages } from '../../events/envelopes/trace-records.js';
import type { ObjectStore } from '../../objects/port.js';
import { type NormalizeInput, normalizeExport } from '../../traces/normalize.js';
import { settleAll } from '../ingest/retry.js';

/**
 * The trace intake (SPEC 4.3, 6): one decoded OTLP export of one authenticated project becomes
 * normalized records on `svc.traces.<org_id>.<trace_id>.<event_id>`. Payload bytes (full capture
 * only) are stored in the object store first, so a record never names an object that is not
 * there. Resolves once every message is durably on the bus: the caller answers the exporter only
 * then, so an accepted span is never lost. An export sent again publishes the same message ids,
 * which the bus stores once.
 */

/** The bus or the object store cannot take the export now; the exporter should retry it later. */
export class IntakeUnavailableError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'IntakeUnavailableError';
  }
}

export interface IntakeDeps {
  bus: Bus;
  objects: ObjectStore;
}

export interface IntakeResult {
  acceptedSpans: number;
  rejectedSpans: number;
  rejections: string[];
  messages: number;
}

/** Object writes in flight at once for one export. */
const PAYLOAD_CONCURRENCY = 16;

/** `input.capture`: full payload capture is on for the key, its project or its organization (SPEC 1.10). */
export const acceptExport = async (deps: IntakeDeps, input: NormalizeInput): Promise<IntakeResult> => {
  const normalized = normalizeExport(input);
  if (normalized.payloads.length > 0) {
    const stored = await settleAll(normalized.payloads, PAYLOAD_CONCURRENCY, (p) =>
      deps.objects.put(p.orgId, p.objectKey, p.bytes),
    );
    const failed = stored.find((r) => r.status === 'rejected');
    // A store that cannot take the bytes now: the exporter retries the export (503).
    if (failed)
      throw new IntakeUnavailableError('the object store did not take a trace artifact', {
        cause: failed.reason,
      });
  }
  const messages = [...normalized.traces].flatMap(([traceId, records]) =>
    traceMessages(input.orgId, input.projectId, traceId, records),
  );
  if (messages.length > 0) {
    try {
      await deps.bus.publishMany(messages);
    } catch (err) {
      if (err instanceof BusUnavailableError)
        throw new IntakeUnavailableError('the bus did not take the trace records', { cause: err });
      throw err;
    }
  }
  return {
    acceptedSpans: normalized.acceptedSpans,
    rejectedSpans: normalized.rejectedSpans,
    rejections: normalized.rejections,
    messages: messages.length,
  };
};
