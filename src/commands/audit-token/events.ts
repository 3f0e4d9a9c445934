/** The one scope an audit token grants: reading its workspace's audit trail (SPEC 5, audit read facade). */
export const AUDIT_READ_SCOPE = 'audit:read';
export type AuditTokenScope = typeof AUDIT_READ_SCOPE;

/** Visible prefix of an audit read token; the secret is this and 32 random bytes in base64url. */
export const AUDIT_TOKEN_PREFIX = 'svc_audit_';

export type AuditTokenEvent =
  | {
      type: 'AuditTokenCreated';
      data: {
        audit_token_id: string;
        /** The audit tenant the token reads: one workspace, never more. */
        workspace_id: string;
        name: string;
        prefix: string;
        secret_hash: string;
        scopes: AuditTokenScope[];
      };
    }
  | { type: 'AuditTokenRevoked'; data: { revoked_at: string } };

export type AuditTokenCommand =
  | {
      type: 'CreateAuditToken';
      id: string;
      workspaceId: string;
      name: string;
      prefix: string;
      secretHash: string;
    }
  | { type: 'RevokeAuditToken'; now: string };
