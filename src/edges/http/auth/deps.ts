import type { FastifyRequest } from 'fastify';
import type { DeveloperTokens } from '../../../commands/auth/developer-tokens.js';
import type { Sessions } from '../../../commands/auth/sessions.js';
import type { SignIn } from '../../../commands/auth/sign-in.js';
import type { SignInLinks } from '../../../commands/auth/sign-in-links.js';
import type { AuthReads } from '../../../projections/auth/reads.js';
import type { ControlPlaneReads } from '../../../projections/control-plane/reads.js';

/** What the auth routes (SPEC 4.4) are given by the auth role. */
export interface AuthHttpDeps {
  signIn: SignIn;
  developerTokens: DeveloperTokens;
  reads: AuthReads;
  controlPlaneReads: ControlPlaneReads;
  /** Console sessions: GET /api/session and sign-out. */
  sessions: Sessions;
  /** Operator-made single-use sign-in links (`svc console link`), and the lifetime of their sessions. */
  links: SignInLinks;
  sessionTtlMs: number;
  /** SVC_PLATFORM_ADMINS as lower-case addresses. */
  platformAdmins: ReadonlySet<string>;
  /** Names of the configured identity providers. */
  providers: () => readonly string[];
  /** Whether the console's cookies are marked Secure for this request (one rule, set and clear alike). */
  secureCookies: (request: FastifyRequest) => boolean;
  clock?: () => Date;
}
