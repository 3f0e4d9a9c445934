/**
 * What the signed-in user is looking at: a workspace, one of its organizations and optionally a
 * project. Every page reads it with `useScope()`; the picker in the header changes it. The server
 * enforces the session's scope on every call; this only chooses among what it allows.
 */
import { type ComponentChildren, createContext } from 'preact';
import { useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { api, type ConsoleSession } from './api';

export interface OrgRow {
  org_id: string;
  workspace_id: string;
  name: string;
}
export interface ProjectRow {
  project_id: string;
  org_id: string;
  name: string;
}

export interface Scope {
  session: ConsoleSession;
  workspaceId: string;
  orgId: string;
  /** '' for every project of the org. */
  projectId: string;
  orgs: OrgRow[];
  projects: ProjectRow[];
  /** The session's role in the chosen workspace. */
  role: 'manager' | 'member' | null;
  setWorkspace(id: string): void;
  setOrg(id: string): void;
  setProject(id: string): void;
}

const ScopeContext = createContext<Scope | null>(null);

export const useScope = (): Scope => {
  const s = useContext(ScopeContext);
  if (!s) throw new Error('useScope outside ScopeProvider');
  return s;
};

const remembered = (key: string): string => {
  try {
    return localStorage.getItem(`svc.console.${key}`) ?? '';
  } catch {
    return '';
  }
};
const remember = (key: string, value: string): void => {
  try {
    localStorage.setItem(`svc.console.${key}`, value);
  } catch {
    // Private mode: the choice lasts the page.
  }
};

export const ScopeProvider = (props: { session: ConsoleSession; children: ComponentChildren }) => {
  const { session } = props;
  const [workspaceId, setWorkspaceId] = useState(() => {
    const w = remembered('workspace');
    return session.workspaces.some((x) => x.workspace_id === w)
      ? w
      : (session.workspaces[0]?.workspace_id ?? '');
  });
  const [orgs, setOrgs] = useState<OrgRow[]>([]);
  const [orgId, setOrgId] = useState(remembered('org'));
  const [projects, setProjects] = useState<ProjectRow[]>([]);
  const [projectId, setProjectId] = useState(remembered('project'));

  useEffect(() => {
    if (!workspaceId) return;
    api.get<{ data: OrgRow[] }>('/api/orgs').then(
      (r) => {
        const mine = r.data.filter((o) => o.workspace_id === workspaceId);
        setOrgs(mine);
        setOrgId((cur) => (mine.some((o) => o.org_id === cur) ? cur : (mine[0]?.org_id ?? '')));
      },
      () => setOrgs([]),
    );
  }, [workspaceId]);

  useEffect(() => {
    if (!orgId) {
      setProjects([]);
      return;
    }
    api.get<{ data: ProjectRow[] }>('/api/projects', { org_id: orgId }).then(
      (r) => {
        setProjects(r.data);
        setProjectId((cur) => (r.data.some((p) => p.project_id === cur) ? cur : ''));
      },
      () => setProjects([]),
    );
  }, [orgId]);

  const value = useMemo<Scope>(
    () => ({
      session,
      workspaceId,
      orgId,
      projectId,
      orgs,
      projects,
      role: session.workspaces.find((w) => w.workspace_id === workspaceId)?.role ?? null,
      setWorkspace: (id) => {
        remember('workspace', id);
        setWorkspaceId(id);
      },
      setOrg: (id) => {
        remember('org', id);
        setOrgId(id);
      },
      setProject: (id) => {
        remember('project', id);
        setProjectId(id);
      },
    }),
    [session, workspaceId, orgId, projectId, orgs, projects],
  );
  return <ScopeContext.Provider value={value}>{props.children}</ScopeContext.Provider>;
};
