import type { Pool } from '../../events/postgres/pool.js';
import { hashSecret } from '../../lib/crypto.js';

/** Where a sign-in started: the JSON API, or the console's browser redirect flow. */
export type LoginFlow = 'api' | 'console';

export interface LoginState {
  provider: string;
  flow: LoginFlow;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
  inviteHash: string | null;
  registrationCodeHash: string | null;
  expiresAt: Date;
}

interface Row {
  provider: string;
  flow: LoginFlow;
  nonce: string;
  code_verifier: string;
  return_to: string;
  invite_hash: string | null;
  registration_code_hash: string | null;
  expires_at: Date;
}

/**
 * OIDC login states, keyed by the SHA-256 of the `state` value, kept in Postgres so that any
 * instance of the auth role can finish a sign-in another one started. Each is taken once.
 */
export class LoginStates {
  constructor(private readonly pool: Pool) {}

  async save(state: string, login: LoginState, now: Date): Promise<void> {
    // Abandoned sign-ins leave rows behind; each new one sweeps the expired ones.
    await this.pool.query('DELETE FROM auth_login_states WHERE expires_at <= $1', [now]);
    await this.pool.query(
      `INSERT INTO auth_login_states (state_hash, provider, flow, nonce, code_verifier, return_to, invite_hash,
                                      registration_code_hash, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        hashSecret(state),
        login.provider,
        login.flow,
        login.nonce,
        login.codeVerifier,
        login.returnTo,
        login.inviteHash,
        login.registrationCodeHash,
        now,
        login.expiresAt,
      ],
    );
  }

  /** Removes and answers the state; null when unknown, already taken, or expired. */
  async take(state: string, now: Date): Promise<LoginState | null> {
    const { rows } = await this.pool.query<Row>(
      `DELETE FROM auth_login_states WHERE state_hash = $1
       RETURNING provider, flow, nonce, code_verifier, return_to, invite_hash, registration_code_hash, expires_at`,
      [hashSecret(state)],
    );
    const row = rows[0];
    if (!row || row.expires_at <= now) return null;
    return {
      provider: row.provider,
      flow: row.flow,
      nonce: row.nonce,
      codeVerifier: row.code_verifier,
      returnTo: row.return_to,
      inviteHash: row.invite_hash,
      registrationCodeHash: row.registration_code_hash,
      expiresAt: row.expires_at,
    };
  }
}
