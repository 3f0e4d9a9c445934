/**
 * What the auth service's commands ask the auth read model (src/projections/auth): which user an
 * identity is linked to, which invite or code a secret's hash names, and a user's developer tokens.
 */
export interface AuthLookups {
  identityOwner(identityId: string): Promise<string | null>;
  user(userId: string): Promise<{ user_id: string; email: string } | null>;
  inviteByHash(
    tokenHash: string,
  ): Promise<{ invite_id: string; workspace_id: string | null; role: 'manager' | 'member' | null } | null>;
  codeByHash(codeHash: string): Promise<{ code_id: string } | null>;
  developerToken(
    tokenId: string,
  ): Promise<{ user_id: string; workspace_id: string; revoked_at: Date | null } | null>;
  developerTokens(userId: string, orgId: string): Promise<DeveloperTokenRow[]>;
  session(sessionId: string): Promise<SessionRow | null>;
  sessionByToken(token: string): Promise<SessionRow | null>;
  /** Oldest first; revoked ones only with `includeRevoked`. */
  userSessions(userId: string, options: { includeRevoked: boolean }): Promise<SessionRow[]>;
}

/** A console session's listing row: times only, never the token or its hash (SPEC 4.8). */
export interface SessionRow {
  session_id: string;
  user_id: string;
  /** Null only for a row whose SessionIssued event is not found. */
  issued_at: Date | null;
  expires_at: Date;
  revoked_at: Date | null;
}

/**
 * The one rule of a live console session (unrevoked, unexpired) and the memberships it carries, as
 * every session-bearer route asks it (the control-plane read model's sessionPrincipal).
 */
export interface SessionPrincipals {
  sessionPrincipal(
    token: string,
    now: Date,
  ): Promise<{ user_id: string; memberships: ReadonlyMap<string, string> } | null>;
}

/** A developer token's listing row: metadata only, never the hash (SPEC 2.11). */
export interface DeveloperTokenRow {
  id: string;
  prefix: string;
  org_id: string;
  project_id: string | null;
  name: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** The signed-in user a command acts for: who, and the workspaces they belong to. */
export interface SignedInUser {
  user_id: string;
  memberships: ReadonlyMap<string, string>;
}
