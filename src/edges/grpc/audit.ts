import type * as grpc from '@grpc/grpc-js';
import { ServiceError } from '../../lib/errors.js';
import { isOrgId } from '../../objects/port.js';
import { eventIdProblem } from '../../projections/audit/consumer.js';
import type { AuditEventView, AuditReads } from '../../projections/audit/reads.js';
import type { AuditEvent__Output } from './generated/svc/audit/v1/AuditEvent.js';
import type { AuditServiceHandlers } from './generated/svc/audit/v1/AuditService.js';
import type { ConsistencyProof__Output } from './generated/svc/audit/v1/ConsistencyProof.js';
import type { InclusionProof__Output } from './generated/svc/audit/v1/InclusionProof.js';
import type { ListEventsResponse__Output } from './generated/svc/audit/v1/ListEventsResponse.js';
import type { SignedHeadRef__Output } from './generated/svc/audit/v1/SignedHeadRef.js';
import { loadService } from './server.js';
import { unary } from './unary.js';

const tenantOf = (r: { tenant_id: unknown }): string => {
  const tenant = typeof r.tenant_id === 'string' ? r.tenant_id : '';
  if (!isOrgId(tenant))
    throw new ServiceError('bad_request', 'tenant_id is required (a workspace id or platform)');
  return tenant;
};

/** As the audit consumer takes them (consumer.ts, eventIdProblem). */
const eventIdOf = (r: { event_id: unknown }): string => {
  const id = typeof r.event_id === 'string' ? r.event_id : '';
  if (!id) throw new ServiceError('bad_request', 'event_id is required');
  if (eventIdProblem(id) !== null)
    throw new ServiceError(
      'bad_request',
      'event_id is not an audit event id (at most 512 characters, well-formed, no NUL)',
    );
  return id;
};

/** uint64 fields arrive as decimal strings (longs: String); absent optional ones as undefined. */
const count = (v: unknown): number | undefined => {
  if (v === undefined || v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new ServiceError('bad_request', `${String(v)} is not a count`);
  return n;
};

const eventMessage = (e: AuditEventView): AuditEvent__Output => ({
  index: String(e.index),
  event_id: e.event_id,
  received_at: e.received_at,
  leaf: e.leaf,
  batch_no: String(e.batch_no ?? 0),
  bytes: Buffer.from(e.bytes, 'base64'),
});

/** AuditService (SPEC 4.8); the service token is the admin token, as for the other internal services. */
export const addAuditService = (server: grpc.Server, reads: AuditReads, serviceToken: string): void => {
  server.addService(loadService('svc/audit/v1/audit.proto', 'svc.audit.v1.AuditService'), {
    ListEvents: unary(serviceToken, async (r): Promise<ListEventsResponse__Output> => {
      const page = await reads.events(tenantOf(r), {
        after: count(r.after),
        limit: count(r.limit) || undefined,
      });
      return {
        events: page.data.map(eventMessage),
        ...(page.next_after === null ? {} : { next_after: String(page.next_after) }),
      };
    }),
    GetEvent: unary(serviceToken, async (r) => eventMessage(await reads.event(tenantOf(r), eventIdOf(r)))),
    GetInclusionProof: unary(serviceToken, async (r): Promise<InclusionProof__Output> => {
      const p = await reads.inclusionProof(tenantOf(r), eventIdOf(r), count(r.tree_size) || undefined);
      return { ...p, index: String(p.index), batch_no: String(p.batch_no), tree_size: String(p.tree_size) };
    }),
    GetConsistencyProof: unary(serviceToken, async (r): Promise<ConsistencyProof__Output> => {
      const p = await reads.consistencyProof(
        tenantOf(r),
        count(r.from_tree_size) ?? 0,
        count(r.to_tree_size) ?? 0,
      );
      const ref = (h: typeof p.from): SignedHeadRef__Output => ({
        ...h,
        batch_no: String(h.batch_no),
        tree_size: String(h.tree_size),
      });
      return { from: ref(p.from), to: ref(p.to), proof: p.proof };
    }),
  } satisfies AuditServiceHandlers);
};
