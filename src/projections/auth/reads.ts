import type { AuthLookups, DeveloperTokenRow, SessionRow } from '../../commands/auth/ports.js';
import type { Pool } from '../../events/postgres/pool.js';
import { hashSecret } from '../../lib/crypto.js';

/**
 * The reader of the auth read model, beside its writer (projection.ts); it answers the auth
 * commands' questions (AuthLookups). Every answer names its columns: no hash and, from the
 * status queries, no e-mail address ever leaves here.
 */

/** Who a verified developer token acts for (SPEC 5: query HTTP accepts it as a bearer). */
export interface DeveloperTokenIdentity {
  user_id: string;
  org_id: string;
  project_id: string | null;
}

const DEVELOPER_TOKEN_COLUMNS = 'token_id AS id, prefix, org_id, project_id, name, created_at, revoked_at';

const one = <T>(rows: T[]): T | null => rows[0] ?? null;

/**
 * Console sessions are the user aggregate's (rm_sessions, written by the control-plane projection),
 * read here for the auth service. The row keeps no issue time: it is the decision time of the
 * session's SessionIssued event on its user's stream (`user-<user_id>`), found by that stream's index.
 */
const SESSIONS = `SELECT s.session_id, s.user_id, s.expires_at, s.revoked_at,
         COALESCE((e.metadata->>'now')::timestamptz, e.recorded_at) AS issued_at
       FROM rm_sessions s
       LEFT JOIN svc_events e ON e.stream_id = 'user-' || s.user_id AND e.type = 'SessionIssued'
         AND e.data->>'session_id' = s.session_id`;

export class AuthReads implements AuthLookups {
  constructor(private readonly pool: Pool) {}

  async identityOwner(identityId: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ user_id: string }>(
      'SELECT user_id FROM rm_auth_identities WHERE identity_id = $1',
      [identityId],
    );
    return rows[0]?.user_id ?? null;
  }

  async user(userId: string) {
    return one(
      (
        await this.pool.query<{ user_id: string; email: string }>(
          'SELECT user_id, email FROM rm_users WHERE user_id = $1',
          [userId],
        )
      ).rows,
    );
  }

  async inviteByHash(tokenHash: string) {
    return one(
      (
        await this.pool.query<{
          invite_id: string;
          workspace_id: string | null;
          role: 'manager' | 'member' | null;
        }>('SELECT invite_id, workspace_id, role FROM rm_registration_invites WHERE token_hash = $1', [
          tokenHash,
        ])
      ).rows,
    );
  }

  async codeByHash(codeHash: string) {
    return one(
      (
        await this.pool.query<{ code_id: string }>(
          'SELECT code_id FROM rm_registration_codes WHERE code_hash = $1',
          [codeHash],
        )
      ).rows,
    );
  }

  /** SPEC 4.4: validity and expiry only. An unknown invite is neither valid nor expired. */
  async inviteStatus(token: string, now: Date): Promise<{ valid: boolean; expired: boolean }> {
    const { rows } = await this.pool.query<{ expired: boolean; accepted: boolean }>(
      `SELECT expires_at <= $2 AS expired, accepted_at IS NOT NULL AS accepted
       FROM rm_registration_invites WHERE token_hash = $1`,
      [hashSecret(token), now],
    );
    const row = rows[0];
    if (!row) return { valid: false, expired: false };
    return { valid: !row.expired && !row.accepted, expired: row.expired };
  }

  /** SPEC 4.4: validity, expiry and remaining uses only. */
  async codeStatus(
    code: string,
    now: Date,
  ): Promise<{ valid: boolean; expired: boolean; uses_remaining: number }> {
    const { rows } = await this.pool.query<{ expired: boolean; uses_remaining: number }>(
      'SELECT expires_at <= $2 AS expired, uses_remaining FROM rm_registration_codes WHERE code_hash = $1',
      [hashSecret(code), now],
    );
    const row = rows[0];
    if (!row) return { valid: false, expired: false, uses_remaining: 0 };
    return {
      valid: !row.expired && row.uses_remaining > 0,
      expired: row.expired,
      uses_remaining: row.uses_remaining,
    };
  }

  async developerToken(tokenId: string) {
    return one(
      (
        await this.pool.query<DeveloperTokenRow & { user_id: string; workspace_id: string }>(
          `SELECT ${DEVELOPER_TOKEN_COLUMNS}, user_id, workspace_id FROM rm_developer_tokens WHERE token_id = $1`,
          [tokenId],
        )
      ).rows,
    );
  }

  /** The live tokens of one user in one org, metadata only. */
  async developerTokens(userId: string, orgId: string): Promise<DeveloperTokenRow[]> {
    const { rows } = await this.pool.query<DeveloperTokenRow>(
      `SELECT ${DEVELOPER_TOKEN_COLUMNS} FROM rm_developer_tokens
       WHERE user_id = $1 AND org_id = $2 AND revoked_at IS NULL ORDER BY created_at, token_id`,
      [userId, orgId],
    );
    return rows;
  }

  async session(sessionId: string): Promise<SessionRow | null> {
    return one((await this.pool.query<SessionRow>(`${SESSIONS} WHERE s.session_id = $1`, [sessionId])).rows);
  }

  /** The session a bearer token names, live or not: whether it is live is sessionPrincipal's rule. */
  async sessionByToken(token: string): Promise<SessionRow | null> {
    return one(
      (await this.pool.query<SessionRow>(`${SESSIONS} WHERE s.token_hash = $1`, [hashSecret(token)])).rows,
    );
  }

  async userSessions(userId: string, options: { includeRevoked: boolean }): Promise<SessionRow[]> {
    const { rows } = await this.pool.query<SessionRow>(
      `${SESSIONS} WHERE s.user_id = $1 AND ($2 OR s.revoked_at IS NULL)
       ORDER BY issued_at NULLS FIRST, s.session_id`,
      [userId, options.includeRevoked],
    );
    return rows;
  }

  /**
   * The scope a developer token grants, or null: unknown, revoked, or its owner no longer a member
   * of the workspace that holds the org (a token must not outlive its owner's access).
   */
  async verifyDeveloperToken(token: string): Promise<DeveloperTokenIdentity | null> {
    const { rows } = await this.pool.query<DeveloperTokenIdentity>(
      `SELECT t.user_id, t.org_id, t.project_id FROM rm_developer_tokens t
       JOIN rm_workspace_members m ON m.workspace_id = t.workspace_id AND m.user_id = t.user_id
       WHERE t.token_hash = $1 AND t.revoked_at IS NULL`,
      [hashSecret(token)],
    );
    return rows[0] ?? null;
  }
}

/** The query role's check of a personal developer token bearer (SPEC 5). */
export const developerTokenVerifier =
  (pool: Pool) =>
  (token: string): Promise<DeveloperTokenIdentity | null> =>
    new AuthReads(pool).verifyDeveloperToken(token);
