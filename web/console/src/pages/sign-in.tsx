/**
 * Sign-in (SPEC 4.4, 5): one button per configured identity provider, each a plain link to
 * /api/session/oidc/:provider/start, which binds the login state to this browser and redirects.
 * Failures of the callback come back here as ?error=<reason>, each with its own explanation.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, urlOf } from '../api';
import { useLocation } from '../router';
import { Button, ErrorBox, Notice } from '../ui';

/** What each sign-in failure means to the person in front of the browser, and what to do. */
const REASONS: Record<string, { title: string; text: string }> = {
  state_mismatch: {
    title: 'This sign-in was not started in this browser',
    text: 'The sign-in link was opened in another browser or its cookie was lost. Start again from this page.',
  },
  expired: {
    title: 'The sign-in took too long',
    text: 'The sign-in expired or was already used. Start again from this page.',
  },
  registration_refused: {
    title: 'No account could be created for you',
    text: 'This service admits new users by invitation or registration code only, or your identity provider did not confirm your e-mail address. Ask a workspace manager for an invite link.',
  },
  provider_refused: {
    title: 'The identity provider refused the sign-in',
    text: 'You may have cancelled it, or the provider declined. Start again, or ask your administrator.',
  },
  provider_unavailable: {
    title: 'The identity provider could not be reached',
    text: 'Try again in a moment. If it keeps failing, the provider or its configuration is at fault.',
  },
  unknown_provider: {
    title: 'No such identity provider',
    text: 'The link names a provider this service does not know. Pick one below.',
  },
  failed: { title: 'The sign-in failed', text: 'Start again from this page.' },
};

interface Providers {
  providers: { name: string }[];
}

export const SignInPage = () => {
  const { params } = useLocation();
  const [providers, setProviders] = useState<Providers['providers'] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [inviteState, setInviteState] = useState<string | null>(null);
  const reason = params.get('error');
  const link = params.get('link') ?? '';
  const [linkError, setLinkError] = useState<unknown>(null);
  const [linkBusy, setLinkBusy] = useState(false);
  const useLink = async () => {
    setLinkBusy(true);
    setLinkError(null);
    try {
      const r = await api.post<{ return_to: string }>('/api/session/link', { token: link });
      location.assign(
        r.return_to.startsWith('/') && !r.return_to.startsWith('//') ? r.return_to : '/console',
      );
    } catch (err) {
      setLinkError(err);
      setLinkBusy(false);
    }
  };
  const invite = params.get('invite') ?? '';
  const code = params.get('registration_code') ?? '';
  const returnTo = params.get('return_to') ?? '/console/requests';

  useEffect(() => {
    document.title = 'Sign in · Model Gateway console';
    api.get<Providers>('/api/session/providers').then((p) => setProviders(p.providers), setError);
  }, []);
  useEffect(() => {
    if (!invite && !code) return;
    const check = invite
      ? api.get<{ valid: boolean; expired: boolean }>('/api/auth/registration-invite/status', { invite })
      : api.get<{ valid: boolean; expired: boolean }>('/api/auth/registration-code/status', { code });
    check.then(
      (s) =>
        setInviteState(
          s.valid
            ? 'Your invitation is valid: signing in creates your account.'
            : s.expired
              ? 'This invitation has expired. Ask for a new one.'
              : 'This invitation is not valid.',
        ),
      setError,
    );
  }, [invite, code]);

  const failure = reason ? (REASONS[reason] ?? REASONS.failed!) : null;
  return (
    <main id="main" class="sign-in">
      <h1>Sign in to the Model Gateway console</h1>
      {failure ? (
        <div class="error" role="alert">
          <h2>{failure.title}</h2>
          <p>{failure.text}</p>
        </div>
      ) : null}
      {params.get('signed_out') ? <Notice>You are signed out.</Notice> : null}
      {link ? (
        <section class="card" aria-labelledby="link-title">
          <h2 id="link-title">Sign in with your link</h2>
          <p>
            An operator made this single-use link for you. Continue to sign in; the link cannot be used again.
          </p>
          <Button kind="primary" busy={linkBusy} onClick={useLink}>
            Continue
          </Button>
          <ErrorBox error={linkError} />
        </section>
      ) : null}
      {inviteState ? <Notice>{inviteState}</Notice> : null}
      <ErrorBox error={error} />
      {providers === null ? null : providers.length === 0 ? (
        <p class="notice">
          No identity provider is configured. Set SVC_OIDC_PROVIDERS (see the README, "Console") and restart.
        </p>
      ) : (
        <ul class="providers">
          {providers.map((p) => (
            <li key={p.name}>
              <a
                class="btn btn-primary"
                href={urlOf(`/api/session/oidc/${encodeURIComponent(p.name)}/start`, {
                  return_to: returnTo.startsWith('/') && !returnTo.startsWith('//') ? returnTo : '/console',
                  invite,
                  registration_code: code,
                })}
              >
                Sign in with {p.name}
              </a>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
};
