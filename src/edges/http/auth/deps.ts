import type { DeveloperTokens } from '../../../commands/auth/developer-tokens.js';
import type { AuthReads } from '../../../commands/auth/reads.js';
import type { SignIn } from '../../../commands/auth/sign-in.js';
import type { ControlPlaneReads } from '../../../commands/control-plane/reads.js';

/** What the auth service's HTTP routes need (SPEC 4.4), shared by its sign-in, registration and token routes. */
export interface AuthHttpDeps {
  signIn: SignIn;
  developerTokens: DeveloperTokens;
  reads: AuthReads;
  controlPlaneReads: ControlPlaneReads;
  /** Whether the console's cookies are marked Secure (the provider's redirect URI is HTTPS). */
  secureCookies: (provider: string) => boolean;
  clock?: () => Date;
}
