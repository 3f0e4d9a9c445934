import type { FastifyRequest } from 'fastify';
import { isPlatformAdmin } from '../../../config/config.js';
import { safeEqual } from '../../../lib/crypto.js';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads } from '../../../projections/control-plane/reads.js';
import { credentialOf } from '../session-credential.js';

/**
 * Who is calling a control-plane route: the platform administrator (the admin token, or the
 * console session of a user named in SVC_PLATFORM_ADMINS) or a signed-in user.
 */
export type Principal =
  | { kind: 'admin'; userId?: string }
  | { kind: 'user'; userId: string; email: string; memberships: Map<string, 'manager' | 'member'> };

/** The audit actor: a signed-in administrator is named (SPEC 5: the admin is the audit actor). */
export const actorOf = (p: Principal) => ({
  id: p.kind === 'user' || p.userId ? `user:${p.userId}` : 'admin',
});

/** The platform administrator's credentials: the admin token, and the users whose sessions act as it. */
export interface AdminCredentials {
  token: string;
  /** Lower-case e-mail addresses (SVC_PLATFORM_ADMINS). */
  emails: ReadonlySet<string>;
}

const NO_EMAILS: ReadonlySet<string> = new Set();
export const adminCredentials = (admin: string | AdminCredentials): AdminCredentials =>
  typeof admin === 'string' ? { token: admin, emails: NO_EMAILS } : admin;

export const authenticate = async (
  request: FastifyRequest,
  reads: ControlPlaneReads,
  admin: string | AdminCredentials,
  now: Date,
): Promise<Principal> => {
  const { token: adminToken, emails } = adminCredentials(admin);
  // The bearer, or the console's session cookie (CSRF-checked for changes).
  const token = credentialOf(request);
  if (!token)
    throw new ServiceError('unauthenticated', 'missing bearer token: send Authorization: Bearer <token>');
  if (safeEqual(token, adminToken)) return { kind: 'admin' };
  const session = await reads.sessionPrincipal(token, now);
  if (!session) throw new ServiceError('unauthenticated', 'invalid or expired session token');
  if (isPlatformAdmin(emails, session.email)) return { kind: 'admin', userId: session.user_id };
  return { kind: 'user', userId: session.user_id, email: session.email, memberships: session.memberships };
};

export const requireAdmin = (p: Principal): void => {
  if (p.kind !== 'admin') throw new ServiceError('forbidden', 'only the platform administrator may do this');
};

/** Members may read; managers may change keys, connections and dimensions of their workspace. */
export const requireWorkspace = (p: Principal, workspaceId: string, role: 'member' | 'manager'): void => {
  if (p.kind === 'admin') return;
  const has = p.memberships.get(workspaceId);
  if (!has) throw new ServiceError('forbidden', 'this workspace is outside your scope');
  if (role === 'manager' && has !== 'manager')
    throw new ServiceError('forbidden', 'a workspace manager role is required');
};

/** The workspace ids a principal may list; undefined means all (admin). */
export const visibleWorkspaces = (p: Principal): string[] | undefined =>
  p.kind === 'admin' ? undefined : [...p.memberships.keys()];
