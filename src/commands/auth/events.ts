/**
 * The events and commands of the auth service's four aggregates (SPEC 4.4): identities, registration
 * invites, registration codes and personal developer tokens (SPEC 2.11). Their deciders sit beside
 * this file, one per aggregate; the auth projection reads these types only.
 */

/**
 * An external identity (one OpenID provider issuer and subject) and the sign-ins made with it. The
 * stream id derives from issuer and subject, so a second link of the same identity lands here.
 */
export type IdentityEvent =
  | {
      type: 'IdentityLinked';
      data: { identity_id: string; provider: string; issuer: string; subject: string; user_id: string };
    }
  | {
      type: 'UserSignedIn';
      data: { user_id: string; provider: string; method: 'oidc'; session_id: string; registered: boolean };
    };

export type IdentityCommand =
  | {
      type: 'LinkIdentity';
      identityId: string;
      provider: string;
      issuer: string;
      subject: string;
      userId: string;
    }
  | { type: 'RecordSignIn'; userId: string; provider: string; sessionId: string; registered: boolean };

/**
 * A single-use invitation to register, bound to one e-mail address and optionally to a workspace
 * role the new user receives. The invite token is never in an event: only its SHA-256.
 */
export type RegistrationInviteEvent =
  | {
      type: 'RegistrationInviteCreated';
      data: {
        invite_id: string;
        token_hash: string;
        email: string;
        workspace_id: string | null;
        role: 'manager' | 'member' | null;
        expires_at: string;
      };
    }
  | { type: 'RegistrationInviteAccepted'; data: { user_id: string; accepted_at: string } };

export type RegistrationInviteCommand =
  | {
      type: 'CreateRegistrationInvite';
      inviteId: string;
      tokenHash: string;
      email: string;
      workspaceId: string | null;
      role: 'manager' | 'member' | null;
      expiresAt: string;
    }
  | { type: 'AcceptRegistrationInvite'; email: string; userId: string; now: string };

/** A shared registration code with a limited number of uses. Only its SHA-256 is in an event. */
export type RegistrationCodeEvent =
  | {
      type: 'RegistrationCodeCreated';
      data: { code_id: string; code_hash: string; uses: number; expires_at: string };
    }
  | {
      type: 'RegistrationCodeRedeemed';
      data: { user_id: string; redeemed_at: string; uses_remaining: number };
    };

export type RegistrationCodeCommand =
  | { type: 'CreateRegistrationCode'; codeId: string; codeHash: string; uses: number; expiresAt: string }
  | { type: 'RedeemRegistrationCode'; userId: string; now: string };

/**
 * A personal developer token (SPEC 2.11): owned by one user, bound to one org and optionally one
 * project. The secret is never in an event: only its SHA-256 and the visible prefix.
 */
export type DeveloperTokenEvent =
  | {
      type: 'DeveloperTokenCreated';
      data: {
        token_id: string;
        user_id: string;
        org_id: string;
        project_id: string | null;
        workspace_id: string;
        name: string;
        prefix: string;
        token_hash: string;
      };
    }
  | { type: 'DeveloperTokenRevoked'; data: { revoked_at: string } };

export type DeveloperTokenCommand =
  | {
      type: 'CreateDeveloperToken';
      tokenId: string;
      userId: string;
      orgId: string;
      projectId: string | null;
      workspaceId: string;
      name: string;
      prefix: string;
      tokenHash: string;
    }
  | { type: 'RevokeDeveloperToken'; userId: string; now: string };
