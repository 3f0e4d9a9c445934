import { canonicalJson } from '../../src/lib/canonical-json.js';
import type { IncomingAuditEvent } from '../../src/projections/audit/log.js';
import { REQUEST_LOGGED_ACTION } from '../../src/projections/ingest/audit.js';

/**
 * Audit events shaped like ingest's request_logged record (src/projections/ingest/audit.ts): the
 * same top-level fields, fewer details and no attempt trail, and a `details.note` that pads the
 * canonical JSON up to `targetBytes` when it is shorter (a real record with two attempts is about 900 bytes). Built from
 * one canonical template cut at its variable values, since canonicalJson per event would cost the
 * bench more CPU than some of what it measures; the first event is checked against canonicalJson.
 */

const MARKS = { request: 'MARKREQUEST', tenant: 'MARKTENANT', at: 'MARKAT', note: 'MARKNOTE' } as const;
type Mark = keyof typeof MARKS;
const BASE_TIME = Date.parse('2026-11-01T00:00:00.000Z');

const recordOf = (values: Record<Mark, string>) => ({
  event_id: `request_logged:${values.request}`,
  tenant_id: values.tenant,
  source: 'ingest',
  actor: 'api_key:key_bench',
  action: REQUEST_LOGGED_ACTION,
  target: { type: 'request', id: values.request },
  occurred_at: values.at,
  details: { http_status: 200, model_served: 'gpt-4o-mini', note: values.note },
});

export type AuditEventFactory = (tenantId: string, i: number) => IncomingAuditEvent;

/** Event `i` of a tenant (a plain token): the same bytes every time it is asked for. */
export const auditEventFactory = (targetBytes: number): AuditEventFactory => {
  const byMark = new Map<string, Mark>(Object.entries(MARKS).map(([k, v]) => [v, k as Mark]));
  const parts = canonicalJson(recordOf(MARKS)).split(new RegExp(`(${Object.values(MARKS).join('|')})`));
  const build = (values: Record<Mark, string>) => {
    let text = '';
    for (const p of parts) {
      const mark = byMark.get(p);
      text += mark ? values[mark] : p;
    }
    return text;
  };
  const make: AuditEventFactory = (tenantId, i) => {
    const request = `req_${tenantId}_${i}`;
    const values = { request, tenant: tenantId, at: new Date(BASE_TIME + i).toISOString(), note: '' };
    const bare = build(values);
    values.note = 'x'.repeat(Math.max(0, targetBytes - bare.length));
    return { tenantId, eventId: `request_logged:${request}`, bytes: Buffer.from(build(values), 'utf8') };
  };
  // The bytes must be canonical JSON of a record naming its own id and tenant, as a producer's are.
  const sample = make('wsp_check', 0);
  const text = Buffer.from(sample.bytes).toString('utf8');
  const parsed = JSON.parse(text) as { event_id: string; tenant_id: string };
  if (
    canonicalJson(parsed) !== text ||
    parsed.event_id !== sample.eventId ||
    parsed.tenant_id !== 'wsp_check'
  )
    throw new Error('the event template does not reproduce canonicalJson');
  return make;
};
