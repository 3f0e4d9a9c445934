import type { RegistrationPolicy } from '../../config/config.js';
import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { idFromNames, newId, newSecret } from '../../lib/ids.js';
import type { UserDirectory, WorkspaceDirectory } from '../ports.js';
import { normalizeEmail } from '../user/decider.js';
import type { UserCommands } from '../user/service.js';
import type { WorkspaceRole } from '../workspace/events.js';
import { identityDecider, identityStream } from './identity.js';
import type { VerifiedIdentity } from './oidc.js';
import type { AuthLookups } from './ports.js';
import { registrationCodeDecider, registrationCodeStream } from './registration-code.js';
import { registrationInviteDecider, registrationInviteStream } from './registration-invite.js';
import { AUTH_SECRET_PREFIX, type AuthCommands } from './service.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_TTL_MS = 366 * 86_400_000;

/** What a sign-in brought along to be admitted as a new user (hashes: the secrets stay out). */
export interface Admission {
  inviteHash: string | null;
  registrationCodeHash: string | null;
}

export interface ResolvedUser {
  user_id: string;
  email: string;
  identityId: string;
  /** True when this sign-in created the user. */
  registered: boolean;
}

const checkTtl = (ttlMs: number) => {
  if (!Number.isInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_TTL_MS)
    throw new ServiceError('bad_request', 'ttl must be positive and at most 366 days', { param: 'ttl' });
};

/**
 * Who may become a user (SPEC 4.4): registration invites and codes, and the resolution of
 * a verified identity to a user: a linked identity, else an existing user with the verified
 * e-mail, else a new user admitted by the registration policy.
 */
export class Registration {
  constructor(
    private readonly commands: AuthCommands,
    private readonly reads: AuthLookups,
    /** The control plane: its users, and the workspace and user questions asked of its read model. */
    private readonly controlPlane: {
      users: Pick<UserCommands, 'addUser'>;
      workspaces: WorkspaceDirectory;
      directory: UserDirectory;
    },
  ) {}

  async createInvite(
    actor: string,
    input: { email: string; ttlMs: number; workspaceId?: string; role?: WorkspaceRole },
  ) {
    const email = normalizeEmail(input.email);
    if (!EMAIL.test(email))
      throw new ServiceError('bad_request', 'email is not an e-mail address', { param: 'email' });
    checkTtl(input.ttlMs);
    if (input.workspaceId && !(await this.controlPlane.workspaces.exists(input.workspaceId)))
      throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
    const inviteId = newId('inv');
    const token = newSecret(AUTH_SECRET_PREFIX.invite);
    const expiresAt = new Date(this.commands.now().getTime() + input.ttlMs).toISOString();
    const workspaceId = input.workspaceId ?? null;
    const role = workspaceId ? (input.role ?? 'member') : null;
    await this.commands.execute(
      registrationInviteDecider,
      registrationInviteStream(inviteId),
      {
        type: 'CreateRegistrationInvite',
        inviteId,
        tokenHash: hashSecret(token),
        email,
        workspaceId,
        role,
        expiresAt,
      },
      { actor, tenantId: workspaceId },
    );
    return {
      invite_id: inviteId,
      invite: token,
      email,
      workspace_id: workspaceId,
      role,
      expires_at: expiresAt,
    };
  }

  async createCode(actor: string, input: { uses: number; ttlMs: number }) {
    checkTtl(input.ttlMs);
    const codeId = newId('rgc');
    const code = newSecret(AUTH_SECRET_PREFIX.registrationCode);
    const expiresAt = new Date(this.commands.now().getTime() + input.ttlMs).toISOString();
    await this.commands.execute(
      registrationCodeDecider,
      registrationCodeStream(codeId),
      { type: 'CreateRegistrationCode', codeId, codeHash: hashSecret(code), uses: input.uses, expiresAt },
      { actor },
    );
    return { code_id: codeId, code, uses: input.uses, expires_at: expiresAt };
  }

  async resolveUser(
    identity: VerifiedIdentity,
    policy: RegistrationPolicy,
    admission: Admission,
  ): Promise<ResolvedUser> {
    const identityId = idFromNames('idn', identity.issuer, identity.subject);
    const linked = await this.reads.identityOwner(identityId);
    if (linked) {
      const user = await this.reads.user(linked);
      if (!user) throw new Error(`identity ${identityId} is linked to unknown user ${linked}`);
      return { ...user, identityId, registered: false };
    }
    if (!identity.email)
      throw new ServiceError('forbidden', 'the identity provider did not share an e-mail address');
    // Linking by e-mail to an account someone else may own is safe only for a verified address.
    if (!identity.emailVerified)
      throw new ServiceError('forbidden', 'the identity provider has not verified this e-mail address');
    const email = normalizeEmail(identity.email);
    const existing = await this.controlPlane.directory.userByEmail(email);
    let user = existing;
    if (!user) {
      // The control plane derives user ids from the e-mail; admission must name the id first so a
      // retried sign-in finds its own invite acceptance or code use and is not charged twice.
      const userId = idFromNames('usr', email);
      const membership = await this.admit(email, userId, policy, admission);
      user = await this.controlPlane.users.addUser({ id: `user:${userId}` }, email, membership);
      if (user.user_id !== userId) throw new Error('user id derivation differs from the control plane');
    }
    await this.commands.execute(
      identityDecider,
      identityStream(identityId),
      {
        type: 'LinkIdentity',
        identityId,
        provider: identity.provider,
        issuer: identity.issuer,
        subject: identity.subject,
        userId: user.user_id,
      },
      { actor: `user:${user.user_id}` },
    );
    return { user_id: user.user_id, email: user.email, identityId, registered: existing === null };
  }

  /**
   * An invite admits under every policy (it is the operator's explicit admission) and brings its
   * workspace role; otherwise `open` admits anyone, `code` needs a code with uses left, and
   * `invite` admits no one else.
   */
  private async admit(email: string, userId: string, policy: RegistrationPolicy, admission: Admission) {
    const actor = `user:${userId}`;
    if (admission.inviteHash) {
      const invite = await this.reads.inviteByHash(admission.inviteHash);
      if (!invite) throw new ServiceError('forbidden', 'the registration invite is not valid');
      await this.commands.execute(
        registrationInviteDecider,
        registrationInviteStream(invite.invite_id),
        { type: 'AcceptRegistrationInvite', email, userId, now: this.commands.now().toISOString() },
        { actor, tenantId: invite.workspace_id },
      );
      return invite.workspace_id && invite.role
        ? { workspaceId: invite.workspace_id, role: invite.role }
        : undefined;
    }
    if (policy === 'open') return undefined;
    if (policy === 'invite')
      throw new ServiceError(
        'forbidden',
        'registration is by invitation only: sign in with your invite link',
      );
    if (!admission.registrationCodeHash)
      throw new ServiceError('forbidden', 'registration needs a registration code');
    const code = await this.reads.codeByHash(admission.registrationCodeHash);
    if (!code) throw new ServiceError('forbidden', 'the registration code is not valid');
    await this.commands.execute(
      registrationCodeDecider,
      registrationCodeStream(code.code_id),
      { type: 'RedeemRegistrationCode', userId, now: this.commands.now().toISOString() },
      // Concurrent sign-ins race for the last uses: each retry re-decides on the fresh count.
      { actor, retries: 10 },
    );
    return undefined;
  }

  async recordSignIn(user: ResolvedUser, provider: string, sessionId: string): Promise<void> {
    await this.commands.execute(
      identityDecider,
      identityStream(user.identityId),
      { type: 'RecordSignIn', userId: user.user_id, provider, sessionId, registered: user.registered },
      { actor: `user:${user.user_id}` },
    );
  }
}
