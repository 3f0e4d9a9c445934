import { createHash } from 'node:crypto';
import type { StoredEvent } from '../../events/event-store.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { AUTH_CATEGORIES } from '../auth/projection.js';

/**
 * The audit record of one control-plane change (SPEC 6: actor, action, target, counts; never a
 * secret). Details keep only scalar, non-secret fields; collections become counts.
 */
export interface AuditRecord {
  event_id: string;
  tenant_id: string;
  source: 'control-plane' | 'auth';
  actor: string;
  action: string;
  target: { type: string; id: string };
  occurred_at: string;
  details: Record<string, string | number | boolean | null>;
}

/** Stream category -> audit target type. */
const TARGETS: Record<string, string> = {
  workspace: 'workspace',
  org: 'organization',
  project: 'project',
  user: 'user',
  apikey: 'api_key',
  connection: 'connection',
  platformkey: 'platform_key',
  tracekey: 'trace_ingest_key',
  audittoken: 'audit_token',
  identity: 'identity',
  reginvite: 'registration_invite',
  regcode: 'registration_code',
  devtoken: 'developer_token',
  wallet: 'wallet',
  policy: 'policy',
};

/** Categories whose changes the auth service makes; every other one is the control plane's. */
const AUTH_SOURCE: ReadonlySet<string> = new Set(AUTH_CATEGORIES);

/** Event type -> action; the past-tense type names the change already, dotted for the audit log. */
const ACTIONS: Record<string, string> = {
  WorkspaceCreated: 'workspace.created',
  MemberAdded: 'workspace.member_added',
  MemberRemoved: 'workspace.member_removed',
  DimensionDefined: 'reporting_dimension.defined',
  DimensionArchived: 'reporting_dimension.archived',
  OrganizationCreated: 'organization.created',
  ProviderDisallowListSet: 'organization.provider_disallow_list_set',
  OrganizationTracingSet: 'organization.tracing_set',
  ProjectCreated: 'project.created',
  ProjectTracingSet: 'project.tracing_set',
  UserRegistered: 'user.registered',
  SessionIssued: 'session.issued',
  SessionRevoked: 'session.revoked',
  ApiKeyCreated: 'api_key.created',
  ApiKeyRevoked: 'api_key.revoked',
  ApiKeyTracingSet: 'api_key.tracing_set',
  DimensionAssigned: 'api_key.dimension_assigned',
  DimensionAssignmentEnded: 'api_key.dimension_assignment_ended',
  // On an organization, project or API key stream: the audit target names which.
  SpendCapSet: 'spend_cap.set',
  SpendCapCleared: 'spend_cap.cleared',
  ConnectionCreated: 'connection.created',
  ConnectionMetadataUpdated: 'connection.metadata_updated',
  ConnectionDeleted: 'connection.deleted',
  PlatformKeySet: 'platform_key.set',
  TraceIngestKeyCreated: 'trace_ingest_key.created',
  TraceIngestKeyRotated: 'trace_ingest_key.rotated',
  TraceIngestKeyRevoked: 'trace_ingest_key.revoked',
  TraceIngestKeyTracingSet: 'trace_ingest_key.tracing_set',
  AuditTokenCreated: 'audit_token.created',
  AuditTokenRevoked: 'audit_token.revoked',
  IdentityLinked: 'auth.identity_linked',
  UserSignedIn: 'auth.signed_in',
  RegistrationInviteCreated: 'registration_invite.created',
  RegistrationInviteAccepted: 'registration_invite.accepted',
  RegistrationCodeCreated: 'registration_code.created',
  RegistrationCodeRedeemed: 'registration_code.redeemed',
  DeveloperTokenCreated: 'developer_token.created',
  DeveloperTokenRevoked: 'developer_token.revoked',
  // SPEC 6 money-movement audit events. Charges and holds are not audited here: every request's
  // charge is evidenced by ingest's data.write.request_logged.
  TopUpCredited: 'wallet.topup.succeeded',
  GrantCredited: 'wallet.grant.created',
  RefundIssued: 'wallet.refund.created',
  ReconciliationMismatchFound: 'wallet.reconciliation.mismatch',
  AutoRefillSettingsSet: 'wallet.auto_refill.set',
  PolicySet: 'policy.set',
  PolicyCleared: 'policy.cleared',
};

// Secrets, their hashes and ciphertexts, and personal data stay out of the audit trail; a value
// assigned to a reporting dimension is tenant metadata and is kept out too.
const WITHHELD = /secret|hash|cipher|token|password|email|^value$/i;

export const isAuditedEvent = (type: string): boolean => type in ACTIONS;

const details = (data: unknown): AuditRecord['details'] => {
  const out: AuditRecord['details'] = {};
  if (!data || typeof data !== 'object') return out;
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) {
    if (WITHHELD.test(key)) continue;
    if (
      value === null ||
      typeof value === 'string' ||
      typeof value === 'number' ||
      typeof value === 'boolean'
    )
      out[key] = value;
    else if (Array.isArray(value)) out[`${key}_count`] = value.length;
    else if (typeof value === 'object') out[`${key}_fields`] = Object.keys(value).length;
  }
  return out;
};

/**
 * Deployment discovery's apply carries its counts on the event it appends (ConnectionMetadataUpdated
 * for a tenant connection, PlatformKeySet for a platform key): SPEC 4.6 records that as
 * connection.discovery_applied with the counts only, never the deployment names.
 */
const discoveryCounts = (data: unknown): Record<string, unknown> | null => {
  if (!data || typeof data !== 'object') return null;
  const counts = (data as { discovery?: unknown }).discovery;
  return counts && typeof counts === 'object' && !Array.isArray(counts)
    ? (counts as Record<string, unknown>)
    : null;
};

/**
 * A policy change is evidence of what was allowed from then on (SPEC 1.9): its record keeps the
 * whole document as canonical JSON (policies hold no secrets), or its SHA-256 when it is large,
 * and the revision it became.
 */
const policyDetails = (e: StoredEvent): AuditRecord['details'] | null => {
  if (e.type !== 'PolicySet' && e.type !== 'PolicyCleared') return null;
  const { document, ...placement } = e.data as Record<string, unknown>;
  const out: AuditRecord['details'] = { ...details(placement), revision: e.streamVersion };
  if (document !== undefined) {
    const text = canonicalJson(document);
    if (text.length <= POLICY_DOCUMENT_INLINE) out.document = text;
    else out.document_sha256 = createHash('sha256').update(text).digest('hex');
  }
  return out;
};

/** Characters of a policy document kept inline in its audit record. */
const POLICY_DOCUMENT_INLINE = 16 * 1024;

export const auditRecordOf = (e: StoredEvent): AuditRecord => {
  const dash = e.streamId.indexOf('-');
  const category = e.streamId.slice(0, dash);
  const discovery = discoveryCounts(e.data);
  return {
    event_id: e.messageId,
    tenant_id: typeof e.metadata.tenant_id === 'string' ? e.metadata.tenant_id : 'platform',
    source: AUTH_SOURCE.has(category) ? 'auth' : 'control-plane',
    actor: typeof e.metadata.actor === 'string' ? e.metadata.actor : 'unknown',
    action: discovery ? 'connection.discovery_applied' : (ACTIONS[e.type] ?? e.type),
    target: { type: TARGETS[category] ?? category, id: e.streamId.slice(dash + 1) },
    occurred_at: typeof e.metadata.now === 'string' ? e.metadata.now : e.recordedAt.toISOString(),
    details: policyDetails(e) ?? details(discovery ?? e.data),
  };
};
