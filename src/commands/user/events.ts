/** Users and their console sessions. A session is an opaque bearer token stored only as a hash. */
export type UserEvent =
  | { type: 'UserRegistered'; data: { user_id: string; email: string } }
  | { type: 'SessionIssued'; data: { session_id: string; token_hash: string; expires_at: string } }
  | { type: 'SessionRevoked'; data: { session_id: string; revoked_at: string } };

export type UserCommand =
  | { type: 'RegisterUser'; userId: string; email: string }
  | { type: 'IssueSession'; sessionId: string; tokenHash: string; expiresAt: string }
  | { type: 'RevokeSession'; sessionId: string; now: string };
