import type { Pool } from '../../events/postgres/pool.js';
import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { newSecret } from '../../lib/ids.js';
import type { Actor } from '../service.js';
import type { UserCommands } from '../user/service.js';

export const SIGN_IN_LINK_PREFIX = 'svc_link_';
/** A link is for one browser, soon: at most a day, 15 minutes unless told otherwise. */
export const MAX_LINK_TTL_MS = 24 * 3600 * 1_000;

/**
 * Single-use console sign-in links: the operator's way in where no identity provider is configured
 * yet (a new deployment, `npm start` on a laptop). `create` checks the user exists and keeps only
 * the token's hash; `redeem` takes the link once and issues an ordinary console session, recorded
 * as the SessionIssued event of that user, with the operator as its actor.
 */
export class SignInLinks {
  constructor(
    private readonly pool: Pool,
    private readonly users: Pick<UserCommands, 'issueSession'>,
    private readonly directory: { userByEmail(email: string): Promise<unknown | null> },
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async create(actor: Actor, input: { email: string; returnTo: string; ttlMs: number }) {
    const email = input.email.trim().toLowerCase();
    if (!(await this.directory.userByEmail(email)))
      throw new ServiceError(
        'not_found',
        `no user with e-mail ${email}: add one with svc users add --email ${email} --workspace <workspace_id> --role manager`,
        { param: 'email' },
      );
    if (!(input.ttlMs > 0 && input.ttlMs <= MAX_LINK_TTL_MS))
      throw new ServiceError('bad_request', 'a sign-in link lives at most 24h', { param: 'ttl' });
    const now = this.clock();
    const token = newSecret(SIGN_IN_LINK_PREFIX);
    const expiresAt = new Date(now.getTime() + input.ttlMs);
    await this.pool.query('DELETE FROM auth_sign_in_links WHERE expires_at <= $1', [now]);
    await this.pool.query(
      `INSERT INTO auth_sign_in_links (link_hash, email, return_to, created_by, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [hashSecret(token), email, input.returnTo, actor.id, now, expiresAt],
    );
    return { token, email, expires_at: expiresAt.toISOString() };
  }

  /** Takes the link (once) and issues a session; null when unknown, used or expired. */
  async redeem(token: string, sessionTtlMs: number) {
    const { rows } = await this.pool.query<{
      email: string;
      return_to: string;
      created_by: string;
      expires_at: Date;
    }>(
      'DELETE FROM auth_sign_in_links WHERE link_hash = $1 RETURNING email, return_to, created_by, expires_at',
      [hashSecret(token)],
    );
    const link = rows[0];
    if (!link || link.expires_at <= this.clock()) return null;
    try {
      const session = await this.users.issueSession({ id: link.created_by }, link.email, sessionTtlMs);
      return { ...session, return_to: link.return_to };
    } catch (err) {
      // Not used after all: the link is put back for another try (a user removed meanwhile stays refused).
      await this.pool
        .query(
          `INSERT INTO auth_sign_in_links (link_hash, email, return_to, created_by, created_at, expires_at)
           VALUES ($1, $2, $3, $4, now(), $5) ON CONFLICT DO NOTHING`,
          [hashSecret(token), link.email, link.return_to, link.created_by, link.expires_at],
        )
        .catch(() => undefined);
      throw err;
    }
  }
}
