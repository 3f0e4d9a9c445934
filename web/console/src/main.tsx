/**
 * The console (SPEC 4.4-4.6): signs a user in through OIDC, then shows one workspace's requests,
 * sessions, traces, usage, wallet, keys and connections through the service's own routes.
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, type ConsoleSession, setCsrfToken } from './api';
import { ConnectionsPage } from './pages/connections';
import { KeysPage } from './pages/keys';
import { RequestsPage } from './pages/requests';
import { SessionsPage } from './pages/sessions';
import { SignInPage } from './pages/sign-in';
import { TracesPage } from './pages/traces';
import { UsagePage } from './pages/usage';
import { WalletPage } from './pages/wallet';
import { Link, navigate, useLocation } from './router';
import { ScopeProvider, useScope } from './scope';
import { Button, ErrorBox, Loading, SelectField } from './ui';
import './style.css';

const NAV = [
  { to: '/requests', label: 'Requests', page: RequestsPage },
  { to: '/sessions', label: 'Sessions', page: SessionsPage },
  { to: '/traces', label: 'Traces', page: TracesPage },
  { to: '/usage', label: 'Usage', page: UsagePage },
  { to: '/wallet', label: 'Wallet', page: WalletPage },
  { to: '/keys', label: 'Keys', page: KeysPage },
  { to: '/connections', label: 'Connections', page: ConnectionsPage },
] as const;

const ScopePicker = () => {
  const s = useScope();
  return (
    <fieldset class="scope">
      <legend class="sr-only">Scope</legend>
      <SelectField
        label="Workspace"
        value={s.workspaceId}
        onValue={s.setWorkspace}
        options={s.session.workspaces.map((w) => ({ value: w.workspace_id, label: w.name }))}
      />
      <SelectField
        label="Organization"
        value={s.orgId}
        onValue={s.setOrg}
        options={s.orgs.map((o) => ({ value: o.org_id, label: o.name }))}
      />
      <SelectField
        label="Project"
        value={s.projectId}
        onValue={s.setProject}
        empty="All projects"
        options={s.projects.map((p) => ({ value: p.project_id, label: p.name }))}
      />
    </fieldset>
  );
};

const Shell = (props: { session: ConsoleSession }) => {
  const { path } = useLocation();
  const current = NAV.find((n) => path === n.to || path.startsWith(`${n.to}/`)) ?? null;
  const first = useRef(true);
  useEffect(() => {
    if (!current) navigate('/requests', true);
    // After a navigation (not the first load, where Tab starts at the skip link), focus the new
    // page's heading so keyboard and screen-reader users land on it.
    if (first.current) first.current = false;
    else document.getElementById('page-title')?.focus();
  }, [current]);
  const Page = current?.page ?? RequestsPage;
  const signOut = async () => {
    await api.post('/api/session/sign-out').catch(() => undefined);
    location.assign('/console/sign-in?signed_out=1');
  };
  return (
    <ScopeProvider session={props.session}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Model Gateway</span>
        <nav aria-label="Console">
          <ul>
            {NAV.map((n) => (
              <li key={n.to}>
                <Link to={n.to} current={n === current}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span>{props.session.user.email}</span>
          <Button onClick={signOut}>Sign out</Button>
        </div>
      </header>
      <ScopePicker />
      <main id="main">
        {props.session.workspaces.length === 0 ? (
          <p class="notice">
            You are signed in, but no workspace has made you a member yet. Ask a workspace manager to add{' '}
            {props.session.user.email}.
          </p>
        ) : (
          <Page />
        )}
      </main>
    </ScopeProvider>
  );
};

const App = () => {
  const { path } = useLocation();
  const [state, setState] = useState<{ session: ConsoleSession | null; error: unknown; loading: boolean }>({
    session: null,
    error: null,
    loading: true,
  });
  useEffect(() => {
    api.get<ConsoleSession>('/api/session').then(
      (session) => {
        setCsrfToken(session.csrf_token);
        setState({ session, error: null, loading: false });
      },
      (error: unknown) => setState({ session: null, error, loading: false }),
    );
  }, []);
  if (path === '/sign-in' || path.startsWith('/sign-in/')) return <SignInPage />;
  if (state.loading) return <Loading />;
  if (state.error instanceof ApiError && state.error.status === 401) return <SignInPage />;
  if (!state.session) return <ErrorBox error={state.error} />;
  return <Shell session={state.session} />;
};

render(<App />, document.getElementById('app')!);
