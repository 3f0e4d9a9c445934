import { describe, expect, it } from 'vitest';
import { DEVELOPER_TOKEN_PREFIX } from '../../edges/http/gateway/auth.js';
import type { Decider, DomainEvent } from '../decider.js';
import { developerTokenDecider } from './developer-token.js';
import type {
  DeveloperTokenEvent,
  IdentityEvent,
  RegistrationCodeEvent,
  RegistrationInviteEvent,
} from './events.js';
import { identityDecider } from './identity.js';
import { registrationCodeDecider } from './registration-code.js';
import { registrationInviteDecider } from './registration-invite.js';
import { AUTH_SECRET_PREFIX } from './service.js';

// Auth deciders, given/when/then (STYLE.md rules 1, 10; SPEC 2.11, 4.4).

const given =
  <C, E extends DomainEvent, S>(d: Decider<C, E, S>) =>
  (history: E[]) => ({
    when: (cmd: C) => d.decide(cmd, history.reduce(d.evolve, d.initialState())),
  });

const T1 = '2026-03-02T00:00:00.000Z';
const EXPIRY = '2026-03-08T00:00:00.000Z';
const LATE = '2026-03-09T00:00:00.000Z';

describe('registration invite', () => {
  const invite = given(registrationInviteDecider);
  const created: RegistrationInviteEvent = {
    type: 'RegistrationInviteCreated',
    data: {
      invite_id: 'inv_1',
      token_hash: 'h',
      email: 'ada@example.com',
      workspace_id: null,
      role: null,
      expires_at: EXPIRY,
    },
  };
  const accept = (email: string, userId: string, now: string) =>
    ({ type: 'AcceptRegistrationInvite', email, userId, now }) as const;

  it('is accepted once, by the e-mail it was issued for, before it expires', () => {
    expect(invite([created]).when(accept('ada@example.com', 'usr_a', T1))).toEqual([
      { type: 'RegistrationInviteAccepted', data: { user_id: 'usr_a', accepted_at: T1 } },
    ]);
    expect(() => invite([created]).when(accept('eve@example.com', 'usr_e', T1))).toThrow('another e-mail');
    expect(() => invite([created]).when(accept('ada@example.com', 'usr_a', LATE))).toThrow('expired');
    expect(() => invite([]).when(accept('ada@example.com', 'usr_a', T1))).toThrow('not valid');
  });

  it('a second acceptance is refused, except the same user retrying', () => {
    const accepted: RegistrationInviteEvent = {
      type: 'RegistrationInviteAccepted',
      data: { user_id: 'usr_a', accepted_at: T1 },
    };
    expect(invite([created, accepted]).when(accept('ada@example.com', 'usr_a', T1))).toEqual([]);
    expect(() => invite([created, accepted]).when(accept('ada@example.com', 'usr_b', T1))).toThrow(
      'already used',
    );
  });
});

describe('registration code', () => {
  const code = given(registrationCodeDecider);
  const created: RegistrationCodeEvent = {
    type: 'RegistrationCodeCreated',
    data: { code_id: 'rgc_1', code_hash: 'h', uses: 2, expires_at: EXPIRY },
  };
  const redeemed = (userId: string, left: number): RegistrationCodeEvent => ({
    type: 'RegistrationCodeRedeemed',
    data: { user_id: userId, redeemed_at: T1, uses_remaining: left },
  });
  const redeem = (userId: string, now = T1) => ({ type: 'RedeemRegistrationCode', userId, now }) as const;

  it('counts down its uses and then refuses', () => {
    expect(code([created]).when(redeem('usr_a'))).toEqual([redeemed('usr_a', 1)]);
    expect(code([created, redeemed('usr_a', 1)]).when(redeem('usr_b'))).toEqual([redeemed('usr_b', 0)]);
    expect(() => code([created, redeemed('usr_a', 1), redeemed('usr_b', 0)]).when(redeem('usr_c'))).toThrow(
      'no uses left',
    );
  });

  it('a retried redemption costs nothing; an expired code admits no one', () => {
    expect(code([created, redeemed('usr_a', 1)]).when(redeem('usr_a'))).toEqual([]);
    expect(() => code([created]).when(redeem('usr_a', LATE))).toThrow('expired');
  });

  it('needs a positive whole number of uses', () => {
    for (const uses of [0, -1, 1.5])
      expect(() =>
        code([]).when({
          type: 'CreateRegistrationCode',
          codeId: 'c',
          codeHash: 'h',
          uses,
          expiresAt: EXPIRY,
        }),
      ).toThrow('uses must be');
  });
});

describe('developer token', () => {
  const token = given(developerTokenDecider);
  const created: DeveloperTokenEvent = {
    type: 'DeveloperTokenCreated',
    data: {
      token_id: 'dtk_1',
      user_id: 'usr_a',
      org_id: 'org_1',
      project_id: null,
      workspace_id: 'ws_1',
      name: 'laptop',
      prefix: 'svc_dev_abcd',
      token_hash: 'h',
    },
  };
  const revoke = (userId: string) => ({ type: 'RevokeDeveloperToken', userId, now: T1 }) as const;

  it('its owner revokes it once; unknown, revoked and foreign tokens are all not found', () => {
    expect(token([created]).when(revoke('usr_a'))).toEqual([
      { type: 'DeveloperTokenRevoked', data: { revoked_at: T1 } },
    ]);
    const revoked: DeveloperTokenEvent = { type: 'DeveloperTokenRevoked', data: { revoked_at: T1 } };
    expect(() => token([created, revoked]).when(revoke('usr_a'))).toThrow('not found or already revoked');
    expect(() => token([created]).when(revoke('usr_b'))).toThrow('not found or already revoked');
    expect(() => token([]).when(revoke('usr_a'))).toThrow('not found or already revoked');
  });

  it('carries the prefix the gateway edges refuse', () => {
    expect(AUTH_SECRET_PREFIX.developerToken).toBe(DEVELOPER_TOKEN_PREFIX);
  });
});

describe('identity', () => {
  const identity = given(identityDecider);
  const link = (userId: string) =>
    ({
      type: 'LinkIdentity',
      identityId: 'idn_1',
      provider: 'p',
      issuer: 'https://idp',
      subject: 's',
      userId,
    }) as const;
  const linked: IdentityEvent = {
    type: 'IdentityLinked',
    data: { identity_id: 'idn_1', provider: 'p', issuer: 'https://idp', subject: 's', user_id: 'usr_a' },
  };

  it('links once; relinking the same user is a no-op, another user a conflict', () => {
    expect(identity([]).when(link('usr_a'))).toEqual([linked]);
    expect(identity([linked]).when(link('usr_a'))).toEqual([]);
    expect(() => identity([linked]).when(link('usr_b'))).toThrow('already linked');
  });

  it('records a sign-in of the linked user', () => {
    expect(
      identity([linked]).when({
        type: 'RecordSignIn',
        userId: 'usr_a',
        provider: 'p',
        sessionId: 'ses_1',
        registered: true,
      }),
    ).toEqual([
      {
        type: 'UserSignedIn',
        data: { user_id: 'usr_a', provider: 'p', method: 'oidc', session_id: 'ses_1', registered: true },
      },
    ]);
  });
});
