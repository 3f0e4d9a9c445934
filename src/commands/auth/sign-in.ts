import * as client from 'openid-client';
import type { RegistrationPolicy } from '../../config/config.js';
import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import type { UserCommands } from '../user/service.js';
import type { LoginFlow, LoginStates } from './login-states.js';
import type { OidcClients } from './oidc.js';
import type { Registration } from './registration.js';

export interface SignInOptions {
  defaultPolicy: RegistrationPolicy;
  sessionTtlMs: number;
  loginTtlMs: number;
  clock?: () => Date;
}

export interface StartInput {
  /** Already checked by the caller to be a safe relative path. */
  returnTo: string;
  invite?: string | undefined;
  registrationCode?: string | undefined;
}

/** The auth session a completed sign-in answers: the same sessions the control plane accepts. */
export interface AuthSession {
  token: string;
  expires_at: string;
  user: { user_id: string; email: string };
  registered: boolean;
  return_to: string;
}

/**
 * OIDC sign-in shared by the JSON API and the console routes: `start` creates a single-use login
 * state (state, nonce, PKCE verifier) and the authorization URL; `complete` takes that state back,
 * redeems the code, resolves the user per the registration policy and issues a session.
 */
export class SignIn {
  private readonly clock: () => Date;

  constructor(
    private readonly oidc: OidcClients,
    private readonly states: LoginStates,
    private readonly registration: Registration,
    private readonly users: Pick<UserCommands, 'issueSession'>,
    private readonly options: SignInOptions,
  ) {
    this.clock = options.clock ?? (() => new Date());
  }

  /** Seconds a login state lives, for the console's state cookie. */
  get loginTtlSeconds(): number {
    return Math.ceil(this.options.loginTtlMs / 1_000);
  }

  async start(provider: string, flow: LoginFlow, input: StartInput) {
    this.oidc.provider(provider);
    const checks = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      codeVerifier: client.randomPKCECodeVerifier(),
    };
    const url = await this.oidc.authorizationUrl(provider, checks);
    const now = this.clock();
    const expiresAt = new Date(now.getTime() + this.options.loginTtlMs);
    await this.states.save(
      checks.state,
      {
        provider,
        flow,
        nonce: checks.nonce,
        codeVerifier: checks.codeVerifier,
        returnTo: input.returnTo,
        inviteHash: input.invite ? hashSecret(input.invite) : null,
        registrationCodeHash: input.registrationCode ? hashSecret(input.registrationCode) : null,
        expiresAt,
      },
      now,
    );
    return { authorization_url: url.toString(), state: checks.state, expires_at: expiresAt.toISOString() };
  }

  /** `params`: the authorization response as the provider sent it to the redirect URI. */
  async complete(provider: string, flow: LoginFlow, params: URLSearchParams): Promise<AuthSession> {
    const config = this.oidc.provider(provider);
    const state = params.get('state');
    if (!state) throw new ServiceError('bad_request', 'state is required', { param: 'state' });
    const login = await this.states.take(state, this.clock());
    if (!login)
      throw new ServiceError('bad_request', 'unknown, used or expired sign-in state', { param: 'state' });
    if (login.provider !== provider || login.flow !== flow)
      throw new ServiceError('bad_request', 'this sign-in state was started for another flow', {
        param: 'state',
      });
    const identity = await this.oidc.exchange(provider, params, {
      state,
      nonce: login.nonce,
      codeVerifier: login.codeVerifier,
    });
    const user = await this.registration.resolveUser(
      identity,
      config.registration_policy ?? this.options.defaultPolicy,
      { inviteHash: login.inviteHash, registrationCodeHash: login.registrationCodeHash },
    );
    const session = await this.users.issueSession(
      { id: `user:${user.user_id}` },
      user.email,
      this.options.sessionTtlMs,
    );
    await this.registration.recordSignIn(user, provider, session.session_id);
    return {
      token: session.token,
      expires_at: session.expires_at,
      user: { user_id: user.user_id, email: user.email },
      registered: user.registered,
      return_to: login.returnTo,
    };
  }
}
