/**
 * Personal developer tokens (SPEC 2.11, 4.4: the caller's own, for one org and an optional project)
 * and trace-ingest keys (SPEC 4.6: project-scoped; create, rotate and revoke return or end a secret).
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { useScope } from '../scope';
import { Button, ErrorBox, Loading, SecretOnce, Section, useAction, useLoad } from '../ui';
import { Confirm, isName, MembersRead, ProjectAndName, Toggle, when } from './keys-common';

interface DeveloperToken {
  id: string;
  prefix: string;
  org_id: string;
  project_id: string | null;
  name: string;
  created_at: string;
}
interface TraceIngestKey {
  id: string;
  project_id: string;
  org_id: string;
  name: string;
  prefix: string;
  tracing: boolean;
  created_at: string;
  rotated_at: string | null;
  revoked_at: string | null;
}

export const DeveloperTokensSection = () => {
  const scope = useScope();
  const [tick, setTick] = useState(0);
  const [name, setName] = useState('');
  const [projectId, setProjectId] = useState('');
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [revoking, setRevoking] = useState<DeveloperToken | null>(null);
  const create = useAction();
  const revoke = useAction();
  const tokens = useLoad(
    () => api.get<{ data: DeveloperToken[] }>('/api/auth/developer-tokens', { org_id: scope.orgId }),
    [scope.orgId, tick],
  );
  const projectName = (id: string | null) =>
    id === null ? 'every project' : (scope.projects.find((p) => p.project_id === id)?.name ?? id);
  const validName = isName(name);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!validName) return;
    const r = await create.run(() =>
      api.post<DeveloperToken & { token: string }>('/api/auth/developer-tokens', {
        org_id: scope.orgId,
        project_id: projectId || null,
        name: name.trim(),
      }),
    );
    if (r) {
      setSecret({ label: `Developer token "${r.name}" (${r.prefix}…).`, value: r.token });
      setName('');
      setTick((t) => t + 1);
    }
  };
  const confirmRevoke = async () => {
    if (!revoking) return;
    const r = await revoke.run(() =>
      api.delete(`/api/auth/developer-tokens/${encodeURIComponent(revoking.id)}`),
    );
    if (r !== undefined) {
      setRevoking(null);
      setTick((t) => t + 1);
    }
  };
  return (
    <Section title="Developer tokens">
      <p class="muted">
        Your personal tokens for query and trace clients outside the browser (SPEC 2.11). Each is bound to you
        and this organization, optionally one project; only you see yours. Gateway model routes refuse them.
      </p>
      {secret ? (
        <SecretOnce label={secret.label} secret={secret.value} onClose={() => setSecret(null)} />
      ) : null}
      {revoking ? (
        <Confirm
          title={`Revoke developer token "${revoking.name}" (${revoking.prefix}…)?`}
          confirmLabel="Revoke token"
          danger
          busy={revoke.busy}
          onConfirm={confirmRevoke}
          onCancel={() => setRevoking(null)}
        >
          <p>Clients using it are refused from now on.</p>
          <ErrorBox error={revoke.error} />
        </Confirm>
      ) : null}
      {tokens.loading && !tokens.data ? <Loading /> : null}
      <ErrorBox error={tokens.error} />
      {tokens.data ? (
        <div class="table-wrap">
          <table>
            <caption>Your developer tokens for this organization</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Project</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {tokens.data.data.length === 0 ? (
                <tr>
                  <td colSpan={5} class="muted">
                    You have no developer tokens for this organization.
                  </td>
                </tr>
              ) : (
                tokens.data.data.map((t) => (
                  <tr key={t.id} data-testid="developer-token-row">
                    <td>{t.name}</td>
                    <td>
                      <code>{t.prefix}…</code>
                    </td>
                    <td>{projectName(t.project_id)}</td>
                    <td>{when(t.created_at)}</td>
                    <td>
                      <Button
                        kind="danger"
                        aria-label={`Revoke developer token ${t.name}`}
                        onClick={() => setRevoking(t)}
                      >
                        Revoke
                      </Button>
                    </td>
                  </tr>
                ))
              )}
            </tbody>
          </table>
        </div>
      ) : null}
      <h3>Create a developer token</h3>
      <form class="row" onSubmit={submit}>
        <ProjectAndName
          projectId={projectId}
          onProject={setProjectId}
          noProject="Every project of the organization"
          projectRequired={false}
          name={name}
          onName={setName}
          submit="Create token"
          busy={create.busy}
        />
      </form>
      <ErrorBox error={create.error} />
    </Section>
  );
};

export const TraceIngestKeysSection = (props: {
  canManage: boolean;
  projectName: (id: string) => string;
}) => {
  const scope = useScope();
  const [tick, setTick] = useState(0);
  const [name, setName] = useState('');
  const [projectId, setProjectId] = useState(scope.projectId);
  const [showRevoked, setShowRevoked] = useState(false);
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [pending, setPending] = useState<{ kind: 'rotate' | 'revoke'; key: TraceIngestKey } | null>(null);
  const [toggling, setToggling] = useState<string | null>(null);
  const create = useAction();
  const change = useAction();
  const keys = useLoad(
    () =>
      api
        .get<{ data: TraceIngestKey[] }>('/api/trace-ingest-keys', {
          project_id: scope.projectId || undefined,
        })
        .then((r) => r.data.filter((k) => k.org_id === scope.orgId)),
    [scope.orgId, scope.projectId, tick],
  );
  // A project chosen under another organization no longer applies.
  const project = scope.projects.some((p) => p.project_id === projectId) ? projectId : scope.projectId;
  const validName = isName(name);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!project || !validName) return;
    const r = await create.run(() =>
      api.post<{ id: string; secret: string; prefix: string; name: string }>('/api/trace-ingest-keys', {
        project_id: project,
        name: name.trim(),
      }),
    );
    if (r) {
      setSecret({ label: `Trace-ingest key "${r.name}" (${r.prefix}…).`, value: r.secret });
      setName('');
      setTick((t) => t + 1);
    }
  };
  const confirm = async () => {
    if (!pending) return;
    const id = encodeURIComponent(pending.key.id);
    if (pending.kind === 'rotate') {
      const r = await change.run(() =>
        api.post<{ id: string; secret: string; prefix: string }>(`/api/trace-ingest-keys/${id}/rotate`),
      );
      if (r) {
        setSecret({
          label: `New secret of trace-ingest key "${pending.key.name}" (${r.prefix}…); the old secret no longer works.`,
          value: r.secret,
        });
        setPending(null);
        setTick((t) => t + 1);
      }
    } else {
      const r = await change.run(() => api.delete(`/api/trace-ingest-keys/${id}`));
      if (r !== undefined) {
        setPending(null);
        setTick((t) => t + 1);
      }
    }
  };
  const setTracing = async (k: TraceIngestKey, enabled: boolean) => {
    setToggling(k.id);
    await change.run(() =>
      api.patch(`/api/trace-ingest-keys/${encodeURIComponent(k.id)}/tracing`, { enabled }),
    );
    setToggling(null);
    setTick((t) => t + 1);
  };
  const rows = (keys.data ?? []).filter((k) => showRevoked || !k.revoked_at);
  return (
    <Section title="Trace-ingest keys">
      <p class="muted">
        A trace-ingest key sends spans to the trace ingest service for one project; the project supplies the
        organization and project of every span (SPEC 4.3, 5).
      </p>
      {props.canManage ? null : <MembersRead what="trace-ingest keys" />}
      {secret ? (
        <SecretOnce label={secret.label} secret={secret.value} onClose={() => setSecret(null)} />
      ) : null}
      {pending ? (
        <Confirm
          title={`${pending.kind === 'rotate' ? 'Rotate' : 'Revoke'} trace-ingest key "${pending.key.name}" (${pending.key.prefix}…)?`}
          confirmLabel={pending.kind === 'rotate' ? 'Rotate key' : 'Revoke key'}
          danger
          busy={change.busy}
          onConfirm={confirm}
          onCancel={() => setPending(null)}
        >
          <p>
            {pending.kind === 'rotate'
              ? 'A new secret is issued and shown once; the current secret stops working at once.'
              : 'Spans sent with this key are refused from now on. This cannot be undone.'}
          </p>
          <ErrorBox error={change.error} />
        </Confirm>
      ) : (
        <ErrorBox error={change.error} />
      )}
      {keys.loading && !keys.data ? <Loading /> : null}
      <ErrorBox error={keys.error} />
      <div class="table-wrap">
        <table>
          <caption>Trace-ingest keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Project</th>
              <th scope="col">Created</th>
              <th scope="col">Rotated</th>
              <th scope="col">Status</th>
              <th scope="col">Full payload capture</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rows.length === 0 ? (
              <tr>
                <td colSpan={8} class="muted">
                  No trace-ingest keys here yet.
                </td>
              </tr>
            ) : (
              rows.map((k) => (
                <tr key={k.id} data-testid="trace-ingest-key-row">
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{props.projectName(k.project_id)}</td>
                  <td>{when(k.created_at)}</td>
                  <td>{when(k.rotated_at)}</td>
                  <td>
                    {k.revoked_at ? (
                      <span class="badge badge-err">revoked {when(k.revoked_at)}</span>
                    ) : (
                      <span class="badge badge-ok">active</span>
                    )}
                  </td>
                  <td>
                    {k.revoked_at ? (
                      '—'
                    ) : (
                      <Toggle
                        label={`Full payload capture for trace-ingest key ${k.name}`}
                        on={k.tracing}
                        disabled={!props.canManage}
                        busy={toggling === k.id}
                        onToggle={(v) => setTracing(k, v)}
                      />
                    )}
                  </td>
                  <td>
                    {k.revoked_at ? null : (
                      <div class="row tight">
                        <Button
                          disabled={!props.canManage}
                          aria-label={`Rotate trace-ingest key ${k.name}`}
                          onClick={() => setPending({ kind: 'rotate', key: k })}
                        >
                          Rotate
                        </Button>
                        <Button
                          kind="danger"
                          disabled={!props.canManage}
                          aria-label={`Revoke trace-ingest key ${k.name}`}
                          onClick={() => setPending({ kind: 'revoke', key: k })}
                        >
                          Revoke
                        </Button>
                      </div>
                    )}
                  </td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      </div>
      <div class="row">
        <label class="check-inline">
          <input
            type="checkbox"
            checked={showRevoked}
            onChange={(e) => setShowRevoked(e.currentTarget.checked)}
          />{' '}
          Show revoked keys
        </label>
      </div>
      <h3>Create a trace-ingest key</h3>
      <form onSubmit={submit}>
        <fieldset class="plain" disabled={!props.canManage}>
          <legend class="sr-only">Create a trace-ingest key</legend>
          <div class="row">
            <ProjectAndName
              projectId={project}
              onProject={setProjectId}
              noProject="Choose a project"
              projectRequired={true}
              name={name}
              onName={setName}
              submit="Create key"
              busy={create.busy}
            />
          </div>
        </fieldset>
      </form>
      <ErrorBox error={create.error} />
    </Section>
  );
};
