import type {
  DeveloperTokenEvent,
  IdentityEvent,
  RegistrationCodeEvent,
  RegistrationInviteEvent,
} from '../../commands/auth/events.js';
import type { StoredEvent } from '../../events/event-store.js';
import type { PoolClient } from '../../events/postgres/pool.js';
import { clearReadModel, type Projection } from '../projection.js';

type AuthEvent = IdentityEvent | RegistrationInviteEvent | RegistrationCodeEvent | DeveloperTokenEvent;

/** Stream categories of the auth service's aggregates (SPEC 4.4); the audit relay reads them too. */
export const AUTH_CATEGORIES = ['identity', 'reginvite', 'regcode', 'devtoken'] as const;

const TABLES = [
  'rm_auth_identities',
  'rm_registration_invites',
  'rm_registration_codes',
  'rm_developer_tokens',
];

const idOf = (streamId: string) => streamId.slice(streamId.indexOf('-') + 1);

const applyOne = async (c: PoolClient, stored: StoredEvent): Promise<void> => {
  const e = { type: stored.type, data: stored.data } as AuthEvent;
  const id = idOf(stored.streamId);
  const at = stored.metadata.now ?? stored.recordedAt.toISOString();
  switch (e.type) {
    case 'IdentityLinked':
      await c.query(
        `INSERT INTO rm_auth_identities (identity_id, provider, issuer, subject, user_id, linked_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [e.data.identity_id, e.data.provider, e.data.issuer, e.data.subject, e.data.user_id, at],
      );
      return;
    case 'UserSignedIn':
      await c.query('UPDATE rm_auth_identities SET last_signed_in_at = $2 WHERE identity_id = $1', [id, at]);
      return;
    case 'RegistrationInviteCreated':
      await c.query(
        `INSERT INTO rm_registration_invites (invite_id, token_hash, email, workspace_id, role, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          e.data.invite_id,
          e.data.token_hash,
          e.data.email,
          e.data.workspace_id,
          e.data.role,
          at,
          e.data.expires_at,
        ],
      );
      return;
    case 'RegistrationInviteAccepted':
      await c.query(
        'UPDATE rm_registration_invites SET accepted_at = $2, accepted_by = $3 WHERE invite_id = $1',
        [id, e.data.accepted_at, e.data.user_id],
      );
      return;
    case 'RegistrationCodeCreated':
      await c.query(
        `INSERT INTO rm_registration_codes (code_id, code_hash, uses_total, uses_remaining, created_at, expires_at)
         VALUES ($1, $2, $3, $3, $4, $5)`,
        [e.data.code_id, e.data.code_hash, e.data.uses, at, e.data.expires_at],
      );
      return;
    case 'RegistrationCodeRedeemed':
      await c.query('UPDATE rm_registration_codes SET uses_remaining = $2 WHERE code_id = $1', [
        id,
        e.data.uses_remaining,
      ]);
      return;
    case 'DeveloperTokenCreated':
      await c.query(
        `INSERT INTO rm_developer_tokens (token_id, user_id, org_id, project_id, workspace_id, name, prefix, token_hash, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          e.data.token_id,
          e.data.user_id,
          e.data.org_id,
          e.data.project_id,
          e.data.workspace_id,
          e.data.name,
          e.data.prefix,
          e.data.token_hash,
          at,
        ],
      );
      return;
    case 'DeveloperTokenRevoked':
      await c.query('UPDATE rm_developer_tokens SET revoked_at = $2 WHERE token_id = $1', [
        id,
        e.data.revoked_at,
      ]);
      return;
    default: {
      const unknown: never = e;
      throw new Error(`auth projection: unhandled event ${(unknown as { type: string }).type}`);
    }
  }
};

export const authProjection: Projection = {
  name: 'auth',
  version: 1,
  categories: AUTH_CATEGORIES,
  reset: async (client) => {
    await clearReadModel(client, TABLES);
  },
  apply: async (client, events) => {
    for (const e of events) await applyOne(client, e);
  },
};
