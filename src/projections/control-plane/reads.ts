import { AUDIT_TOKEN_PREFIX } from '../../commands/audit-token/events.js';
import { platformKeyAad } from '../../commands/connections/events.js';
import type { StoredCredential } from '../../commands/connections/ports.js';
import type { SpendCapLevel } from '../../commands/spend-cap/events.js';
import { spendCap, spendCaps } from '../../commands/spend-cap/reads.js';
import type { Pool } from '../../events/postgres/pool.js';
import { hashSecret, safeEqual } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import type { PolicyLayer, PolicyScope } from '../../policy/document.js';
import type { CredentialRef } from '../../providers/azure/discover.js';
import { policiesInForce, policyOf } from '../policy/reads.js';

/**
 * The reader of the control-plane read model, beside its writer (projection.ts). Every listing
 * names its columns: no hash or ciphertext column is ever selected into an answer (the stored
 * credential is the one exception, for the commands that must decrypt it). It answers the write
 * side's tenancy questions (src/commands/ports.ts) and the edges' and the query API's reads.
 */

export interface OrgRow {
  org_id: string;
  workspace_id: string;
  name: string;
  provider_disallow: string[];
  tracing: boolean;
  created_at: Date;
}
export interface ProjectRow {
  project_id: string;
  org_id: string;
  workspace_id: string;
  name: string;
  tracing: boolean;
  created_at: Date;
}
export interface ApiKeyRow {
  api_key_id: string;
  project_id: string;
  org_id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  tracing: boolean;
  created_at: Date;
  revoked_at: Date | null;
}
export interface ConnectionRow {
  id: string;
  workspace_id: string;
  org_id: string;
  project_id: string | null;
  provider: string;
  /** The registry lane the connection serves; null: every lane of the provider (SPEC 4.7). */
  lane: string | null;
  name: string;
  base_url: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}
export interface TraceIngestKeyRow {
  id: string;
  project_id: string;
  org_id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  /** Full payload capture for the spans sent with this key (SPEC 1.10). */
  tracing: boolean;
  created_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}
export interface AuditTokenRow {
  id: string;
  /** The audit tenant the token reads (SPEC 5, 6). */
  workspace_id: string;
  name: string;
  prefix: string;
  scopes: string[];
  created_at: Date;
  /** The actor that minted it: `admin`, `user:<id>` or `cli`. */
  created_by: string | null;
  revoked_at: Date | null;
}
/** What a live audit read token grants: read the audit trail of one workspace. */
export interface AuditTokenGrant {
  audit_token_id: string;
  workspace_id: string;
  scopes: string[];
}
export interface SessionPrincipal {
  user_id: string;
  email: string;
  memberships: Map<string, 'manager' | 'member'>;
}

const API_KEY_COLUMNS =
  'api_key_id, project_id, org_id, workspace_id, name, prefix, tracing, created_at, revoked_at';
const CONNECTION_COLUMNS =
  'connection_id AS id, workspace_id, org_id, project_id, provider, lane, name, base_url, metadata, created_at';
const TRACE_KEY_COLUMNS =
  'trace_ingest_key_id AS id, project_id, org_id, workspace_id, name, prefix, tracing, created_at, rotated_at, revoked_at';
const AUDIT_TOKEN_COLUMNS =
  'audit_token_id AS id, workspace_id, name, prefix, scopes, created_at, created_by, revoked_at';
/** The shape newSecret gives an audit token: its prefix and 32 random bytes in base64url. */
const AUDIT_TOKEN_SHAPE = new RegExp(`^${AUDIT_TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`);

const one = <T>(rows: T[]): T | null => rows[0] ?? null;

export class ControlPlaneReads {
  constructor(private readonly pool: Pool) {}

  async workspace(id: string) {
    return one(
      (
        await this.pool.query<{ workspace_id: string; name: string; created_at: Date }>(
          'SELECT * FROM rm_workspaces WHERE workspace_id = $1',
          [id],
        )
      ).rows,
    );
  }

  async workspaces(ids?: readonly string[]) {
    const { rows } = ids
      ? await this.pool.query(
          'SELECT workspace_id, name, created_at FROM rm_workspaces WHERE workspace_id = ANY($1) ORDER BY name',
          [ids],
        )
      : await this.pool.query('SELECT workspace_id, name, created_at FROM rm_workspaces ORDER BY name');
    return rows as { workspace_id: string; name: string; created_at: Date }[];
  }

  async members(workspaceId: string) {
    return (
      await this.pool.query(
        `SELECT m.user_id, u.email, m.role FROM rm_workspace_members m JOIN rm_users u USING (user_id)
         WHERE m.workspace_id = $1 ORDER BY u.email`,
        [workspaceId],
      )
    ).rows as { user_id: string; email: string; role: string }[];
  }

  async organization(id: string) {
    return one((await this.pool.query<OrgRow>('SELECT * FROM rm_orgs WHERE org_id = $1', [id])).rows);
  }

  async requireOrganization(id: string, param?: string): Promise<OrgRow> {
    const org = await this.organization(id);
    if (!org) throw new ServiceError('not_found', 'organization not found', param ? { param } : {});
    return org;
  }

  async organizations(workspaceIds?: readonly string[]) {
    const { rows } = workspaceIds
      ? await this.pool.query<OrgRow>('SELECT * FROM rm_orgs WHERE workspace_id = ANY($1) ORDER BY name', [
          workspaceIds,
        ])
      : await this.pool.query<OrgRow>('SELECT * FROM rm_orgs ORDER BY name');
    return rows;
  }

  async project(id: string) {
    return one(
      (await this.pool.query<ProjectRow>('SELECT * FROM rm_projects WHERE project_id = $1', [id])).rows,
    );
  }

  async requireProject(id: string, param?: string): Promise<ProjectRow> {
    const project = await this.project(id);
    if (!project) throw new ServiceError('not_found', 'project not found', param ? { param } : {});
    return project;
  }

  async projects(filter: { orgId?: string; workspaceIds?: readonly string[] }) {
    const { rows } = await this.pool.query<ProjectRow>(
      `SELECT * FROM rm_projects WHERE ($1::text IS NULL OR org_id = $1) AND ($2::text[] IS NULL OR workspace_id = ANY($2))
       ORDER BY name`,
      [filter.orgId ?? null, filter.workspaceIds ?? null],
    );
    return rows;
  }

  async apiKey(id: string) {
    return one(
      (
        await this.pool.query<ApiKeyRow>(`SELECT ${API_KEY_COLUMNS} FROM rm_api_keys WHERE api_key_id = $1`, [
          id,
        ])
      ).rows,
    );
  }

  async requireApiKey(id: string): Promise<ApiKeyRow> {
    const key = await this.apiKey(id);
    if (!key) throw new ServiceError('not_found', 'api key not found');
    return key;
  }

  async apiKeys(filter: { projectId?: string; workspaceIds?: readonly string[] }) {
    const { rows } = await this.pool.query<ApiKeyRow>(
      `SELECT ${API_KEY_COLUMNS} FROM rm_api_keys
       WHERE ($1::text IS NULL OR project_id = $1) AND ($2::text[] IS NULL OR workspace_id = ANY($2)) ORDER BY created_at`,
      [filter.projectId ?? null, filter.workspaceIds ?? null],
    );
    return rows;
  }

  async connection(id: string) {
    return one(
      (
        await this.pool.query<ConnectionRow>(
          `SELECT ${CONNECTION_COLUMNS} FROM rm_connections WHERE connection_id = $1 AND deleted_at IS NULL`,
          [id],
        )
      ).rows,
    );
  }

  async requireConnection(id: string): Promise<ConnectionRow> {
    const c = await this.connection(id);
    if (!c) throw new ServiceError('not_found', 'provider key not found');
    return c;
  }

  async connections(filter: { projectId?: string; orgId?: string; workspaceIds?: readonly string[] }) {
    const { rows } = await this.pool.query<ConnectionRow>(
      `SELECT ${CONNECTION_COLUMNS} FROM rm_connections WHERE deleted_at IS NULL
         AND ($1::text IS NULL OR project_id = $1) AND ($2::text IS NULL OR org_id = $2)
         AND ($3::text[] IS NULL OR workspace_id = ANY($3)) ORDER BY created_at`,
      [filter.projectId ?? null, filter.orgId ?? null, filter.workspaceIds ?? null],
    );
    return rows;
  }

  /** A live connection's or a platform key's stored credential, ciphertext included; a 404 otherwise. */
  async storedCredential(ref: CredentialRef): Promise<StoredCredential> {
    type Row = Omit<StoredCredential, 'aad'>;
    if ('connectionId' in ref) {
      const { rows } = await this.pool.query<Row>(
        `SELECT provider, lane, base_url, metadata, secret_ciphertext, workspace_id FROM rm_connections
         WHERE connection_id = $1 AND deleted_at IS NULL`,
        [ref.connectionId],
      );
      if (!rows[0]) throw new ServiceError('not_found', 'provider key not found');
      return { ...rows[0], aad: ref.connectionId };
    }
    const lane = ref.lane ?? null;
    const { rows } = await this.pool.query<Row>(
      `SELECT provider, NULLIF(lane, '') AS lane, base_url, metadata, secret_ciphertext, NULL AS workspace_id
       FROM rm_platform_keys WHERE provider = $1 AND lane = $2`,
      [ref.platform, lane ?? ''],
    );
    if (!rows[0]) {
      const what = lane === null ? ref.platform : `${ref.platform} on lane ${lane}`;
      throw new ServiceError('not_found', `no platform key is set for ${what}`);
    }
    return { ...rows[0], aad: platformKeyAad(ref.platform, lane) };
  }

  /** Platform keys; `lane` null is a provider's own key, serving its lanes without one (SPEC 4.7). */
  async platformKeys() {
    return (
      await this.pool.query(
        `SELECT provider, NULLIF(lane, '') AS lane, base_url, metadata, updated_at FROM rm_platform_keys
         ORDER BY provider, lane`,
      )
    ).rows as {
      provider: string;
      lane: string | null;
      base_url: string | null;
      metadata: Record<string, unknown>;
      updated_at: Date;
    }[];
  }

  async traceIngestKey(id: string) {
    return one(
      (
        await this.pool.query<TraceIngestKeyRow>(
          `SELECT ${TRACE_KEY_COLUMNS} FROM rm_trace_ingest_keys WHERE trace_ingest_key_id = $1`,
          [id],
        )
      ).rows,
    );
  }

  async requireTraceIngestKey(id: string): Promise<TraceIngestKeyRow> {
    const k = await this.traceIngestKey(id);
    if (!k || k.revoked_at) throw new ServiceError('not_found', 'trace ingest key not found');
    return k;
  }

  async traceIngestKeys(filter: { projectId?: string; workspaceIds?: readonly string[] }) {
    const { rows } = await this.pool.query<TraceIngestKeyRow>(
      `SELECT ${TRACE_KEY_COLUMNS} FROM rm_trace_ingest_keys
       WHERE ($1::text IS NULL OR project_id = $1) AND ($2::text[] IS NULL OR workspace_id = ANY($2)) ORDER BY created_at`,
      [filter.projectId ?? null, filter.workspaceIds ?? null],
    );
    return rows;
  }

  /**
   * The project a live trace-ingest secret belongs to, or null (revoked, rotated away or unknown),
   * with `capture`: full payload capture is on for the key, its project or its organization (SPEC 1.10).
   */
  async verifyTraceIngestSecret(secret: string) {
    return one(
      (
        await this.pool.query<{
          id: string;
          project_id: string;
          org_id: string;
          workspace_id: string;
          capture: boolean;
        }>(
          `SELECT k.trace_ingest_key_id AS id, k.project_id, k.org_id, k.workspace_id,
                  k.tracing OR COALESCE(p.tracing, false) OR COALESCE(o.tracing, false) AS capture
             FROM rm_trace_ingest_keys k
             LEFT JOIN rm_projects p ON p.project_id = k.project_id
             LEFT JOIN rm_orgs o ON o.org_id = k.org_id
            WHERE k.secret_hash = $1 AND k.revoked_at IS NULL`,
          [hashSecret(secret)],
        )
      ).rows,
    );
  }

  async auditToken(id: string) {
    return one(
      (
        await this.pool.query<AuditTokenRow>(
          `SELECT ${AUDIT_TOKEN_COLUMNS} FROM rm_audit_tokens WHERE audit_token_id = $1`,
          [id],
        )
      ).rows,
    );
  }

  /** A live audit read token, or a 404 `audit token not found` (unknown or revoked). */
  async requireAuditToken(id: string): Promise<AuditTokenRow> {
    const t = await this.auditToken(id);
    if (!t || t.revoked_at) throw new ServiceError('not_found', 'audit token not found');
    return t;
  }

  /** Audit read tokens, revoked ones included, metadata only: never a secret or its hash. */
  async auditTokens(filter: { workspaceIds?: readonly string[] }) {
    const { rows } = await this.pool.query<AuditTokenRow>(
      `SELECT ${AUDIT_TOKEN_COLUMNS} FROM rm_audit_tokens
       WHERE ($1::text[] IS NULL OR workspace_id = ANY($1)) ORDER BY created_at, audit_token_id`,
      [filter.workspaceIds ?? null],
    );
    return rows;
  }

  /**
   * What a bearer presented to the audit read facade grants (SPEC 5: scope audit:read), or null: not
   * shaped like an audit token (an API key, a developer token, anything else), unknown, or revoked.
   * The secret is looked up by its SHA-256 digest, as every verify* here does, and the stored digest
   * compared in constant time.
   */
  async verifyAuditToken(secret: string): Promise<AuditTokenGrant | null> {
    if (typeof secret !== 'string' || !AUDIT_TOKEN_SHAPE.test(secret)) return null;
    const digest = hashSecret(secret);
    const row = one(
      (
        await this.pool.query<AuditTokenGrant & { secret_hash: string }>(
          `SELECT audit_token_id, workspace_id, scopes, secret_hash FROM rm_audit_tokens
           WHERE secret_hash = $1 AND revoked_at IS NULL`,
          [digest],
        )
      ).rows,
    );
    if (!row || !safeEqual(row.secret_hash, digest)) return null;
    return { audit_token_id: row.audit_token_id, workspace_id: row.workspace_id, scopes: row.scopes };
  }

  spendCap(level: SpendCapLevel, targetId: string) {
    return spendCap(this.pool, level, targetId);
  }

  spendCaps(filter: { orgId?: string; workspaceIds?: readonly string[] } = {}) {
    return spendCaps(this.pool, filter);
  }

  policy(layer: PolicyLayer, scope: PolicyScope, targetId: string) {
    return policyOf(this.pool, layer, scope, targetId);
  }

  policies(filter: { orgId?: string; workspaceIds?: readonly string[] } = {}) {
    return policiesInForce(this.pool, filter);
  }

  async dimension(id: string) {
    return one(
      (
        await this.pool.query<{
          definition_id: string;
          workspace_id: string;
          key: string;
          description: string;
          created_at: Date;
          archived_at: Date | null;
        }>('SELECT * FROM rm_dimension_definitions WHERE definition_id = $1', [id])
      ).rows,
    );
  }

  async dimensions(workspaceId: string, includeArchived: boolean) {
    return (
      await this.pool.query(
        `SELECT definition_id, workspace_id, key, description, created_at, archived_at FROM rm_dimension_definitions
         WHERE workspace_id = $1 AND ($2 OR archived_at IS NULL) ORDER BY key`,
        [workspaceId, includeArchived],
      )
    ).rows;
  }

  /** Assignments of a key; with `at`, only those applying at that instant ([from, to)). */
  async dimensionAssignments(apiKeyId: string, at?: string) {
    return (
      await this.pool.query(
        `SELECT a.definition_id, d.key, a.value, a.effective_from, a.effective_to
         FROM rm_dimension_assignments a JOIN rm_dimension_definitions d USING (definition_id)
         WHERE a.api_key_id = $1
           AND ($2::timestamptz IS NULL OR (a.effective_from <= $2 AND (a.effective_to IS NULL OR $2 < a.effective_to)))
         ORDER BY d.key, a.effective_from`,
        [apiKeyId, at ?? null],
      )
    ).rows as {
      definition_id: string;
      key: string;
      value: string;
      effective_from: Date;
      effective_to: Date | null;
    }[];
  }

  async userByEmail(email: string) {
    return one(
      (
        await this.pool.query<{ user_id: string; email: string }>(
          'SELECT user_id, email FROM rm_users WHERE email = $1',
          [email],
        )
      ).rows,
    );
  }

  /** A live (unexpired, unrevoked) session's user and memberships, or null. */
  async sessionPrincipal(token: string, now: Date): Promise<SessionPrincipal | null> {
    const { rows } = await this.pool.query<{
      user_id: string;
      email: string;
      workspace_id: string | null;
      role: 'manager' | 'member' | null;
    }>(
      `SELECT s.user_id, u.email, m.workspace_id, m.role
       FROM rm_sessions s JOIN rm_users u USING (user_id) LEFT JOIN rm_workspace_members m ON m.user_id = s.user_id
       WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2`,
      [hashSecret(token), now],
    );
    if (rows.length === 0) return null;
    const memberships = new Map<string, 'manager' | 'member'>();
    for (const r of rows) if (r.workspace_id && r.role) memberships.set(r.workspace_id, r.role);
    return { user_id: rows[0]!.user_id, email: rows[0]!.email, memberships };
  }
}
