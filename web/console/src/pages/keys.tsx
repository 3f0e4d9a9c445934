/**
 * Keys (SPEC 2.10, 2.11, 4.4, 4.6, 8): the organization's service API keys (create, rotate,
 * revoke, tracing), personal developer tokens, trace-ingest keys, tracing toggles, reporting
 * dimensions and monthly spend caps. Secrets are shown once and dropped when their box closes.
 * Members read; a workspace manager changes (the server enforces it).
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { useScope } from '../scope';
import { Button, ErrorBox, Loading, Notice, Page, SecretOnce, Section, useAction, useLoad } from '../ui';
import { Confirm, errorText, isName, MembersRead, ProjectAndName, Toggle, when } from './keys-common';
import { DimensionsSection, SpendCapsSection, TracingSection } from './keys-settings';
import { DeveloperTokensSection, TraceIngestKeysSection } from './keys-tokens';
import './control-pages.css';
import type { ApiKey } from './keys-common';

interface CreatedKey {
  api_key_id: string;
  api_key: string;
  prefix: string;
  project_id: string;
  name: string;
}
interface Assignment {
  definition_id: string;
  key: string;
  value: string;
  effective_from: string;
  effective_to: string | null;
}

/**
 * Rotation: a replacement with the same name and project, carrying the old key's tracing flag,
 * reporting-dimension values and spend cap, then the old key revoked. Returns the new secret and
 * what could not be carried over; throws only when no replacement could be made.
 */
const rotate = async (
  old: ApiKey,
): Promise<{ created: CreatedKey; warnings: string[]; revokeError: unknown }> => {
  const created = await api.post<CreatedKey>('/api/api-keys', { project_id: old.project_id, name: old.name });
  const warnings: string[] = [];
  const id = encodeURIComponent(created.api_key_id);
  if (old.tracing) {
    await api
      .patch(`/api/api-keys/${id}/tracing`, { enabled: true })
      .catch((e: unknown) => warnings.push(`tracing was not turned on: ${errorText(e)}`));
  }
  try {
    const dims = await api.get<{ data: Assignment[] }>(
      `/api/api-keys/${encodeURIComponent(old.api_key_id)}/reporting-dimensions`,
    );
    for (const a of dims.data) {
      await api
        .put(`/api/api-keys/${id}/reporting-dimensions`, { definition_id: a.definition_id, value: a.value })
        .catch((e: unknown) => warnings.push(`dimension ${a.key} was not copied: ${errorText(e)}`));
    }
  } catch (e) {
    warnings.push(`reporting dimensions could not be read: ${errorText(e)}`);
  }
  try {
    // The caps list, not GET .../spend-cap, which answers 404 for a key without one.
    const caps = await api.get<{ data: { level: string; target_id: string; monthly_usd: string }[] }>(
      '/api/spend-caps',
      { org_id: old.org_id },
    );
    const cap = caps.data.find((c) => c.level === 'api_key' && c.target_id === old.api_key_id);
    if (cap)
      await api
        .put(`/api/api-keys/${id}/spend-cap`, { monthly_usd: cap.monthly_usd })
        .catch((e: unknown) => warnings.push(`the spend cap was not copied: ${errorText(e)}`));
  } catch (e) {
    warnings.push(`spend caps could not be read: ${errorText(e)}`);
  }
  let revokeError: unknown = null;
  try {
    await api.delete(`/api/api-keys/${encodeURIComponent(old.api_key_id)}`);
  } catch (e) {
    revokeError = e;
  }
  return { created, warnings, revokeError };
};

const ApiKeysSection = (props: {
  keys: ApiKey[];
  projectName: (id: string) => string;
  canManage: boolean;
  onChanged: () => void;
  onPickDimensions: (id: string) => void;
}) => {
  const scope = useScope();
  const [projectId, setProjectId] = useState(scope.projectId);
  const [name, setName] = useState('');
  const [showRevoked, setShowRevoked] = useState(false);
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [pending, setPending] = useState<{ kind: 'rotate' | 'revoke'; key: ApiKey } | null>(null);
  const [notes, setNotes] = useState<string[]>([]);
  const create = useAction();
  const change = useAction();
  const [toggling, setToggling] = useState<string | null>(null);
  // A project chosen under another organization no longer applies.
  const project = scope.projects.some((p) => p.project_id === projectId) ? projectId : scope.projectId;
  const validName = isName(name);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!project || !validName) return;
    const r = await create.run(() =>
      api.post<CreatedKey>('/api/api-keys', { project_id: project, name: name.trim() }),
    );
    if (r) {
      setSecret({ label: `New API key "${r.name}" (${r.prefix}…).`, value: r.api_key });
      setName('');
      props.onChanged();
    }
  };
  const confirm = async () => {
    if (!pending) return;
    const target = pending.key;
    if (pending.kind === 'revoke') {
      const ok = await change.run(() => api.delete(`/api/api-keys/${encodeURIComponent(target.api_key_id)}`));
      if (ok !== undefined) {
        setNotes([`Key ${target.name} (${target.prefix}…) revoked.`]);
        setPending(null);
        props.onChanged();
      }
      return;
    }
    const r = await change.run(() => rotate(target));
    if (r) {
      setSecret({
        label: `Replacement for "${target.name}" (${r.created.prefix}…): put it where the old key was used.`,
        value: r.created.api_key,
      });
      const out = [...r.warnings];
      if (r.revokeError)
        out.unshift(
          `The replacement was created but the old key ${target.prefix}… is still active: revoking it failed (${errorText(r.revokeError)}). Revoke it by hand.`,
        );
      else out.unshift(`Old key ${target.prefix}… revoked.`);
      setNotes(out);
      setPending(null);
      props.onChanged();
    }
  };
  const setTracing = async (k: ApiKey, enabled: boolean) => {
    setToggling(k.api_key_id);
    await change.run(() =>
      api.patch(`/api/api-keys/${encodeURIComponent(k.api_key_id)}/tracing`, { enabled }),
    );
    setToggling(null);
    props.onChanged();
  };

  const rows = props.keys.filter((k) => showRevoked || !k.revoked_at);
  return (
    <Section title="API keys">
      <p class="muted">
        Service API keys call the gateway (<code>Authorization: Bearer</code>). A key belongs to one project;
        its secret is shown once at creation.
      </p>
      {props.canManage ? null : <MembersRead what="the keys" />}
      {secret ? (
        <SecretOnce label={secret.label} secret={secret.value} onClose={() => setSecret(null)} />
      ) : null}
      {notes.length ? (
        <ul class="notes" role="status">
          {notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      ) : null}
      {pending ? (
        <Confirm
          title={
            pending.kind === 'rotate'
              ? `Rotate API key "${pending.key.name}" (${pending.key.prefix}…)?`
              : `Revoke API key "${pending.key.name}" (${pending.key.prefix}…)?`
          }
          confirmLabel={pending.kind === 'rotate' ? 'Rotate key' : 'Revoke key'}
          confirmTestId={pending.kind === 'rotate' ? 'rotate-confirm' : 'revoke-confirm'}
          danger
          busy={change.busy}
          onConfirm={confirm}
          onCancel={() => {
            setPending(null);
            change.setError(null);
          }}
        >
          {pending.kind === 'rotate' ? (
            <p>
              A new key with the same name and project is created (with this key's tracing setting, reporting
              dimension values and spend cap) and its secret shown once; then this key is revoked. Clients
              still using it are refused from then on.
            </p>
          ) : (
            <p>Requests with this key are refused from now on. This cannot be undone.</p>
          )}
          <ErrorBox error={change.error} />
        </Confirm>
      ) : null}
      {pending ? null : <ErrorBox error={change.error} />}
      <div class="table-wrap">
        <table>
          <caption>API keys of the organization{scope.projectId ? ' (chosen project)' : ''}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Project</th>
              <th scope="col">Created</th>
              <th scope="col">Status</th>
              <th scope="col">Full tracing</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rows.length === 0 ? (
              <tr>
                <td colSpan={7} class="muted">
                  No API keys here yet.
                </td>
              </tr>
            ) : (
              rows.map((k) => (
                <tr
                  key={k.api_key_id}
                  data-testid="api-key-row"
                  data-key-id={k.api_key_id}
                  data-prefix={k.prefix}
                >
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{props.projectName(k.project_id)}</td>
                  <td>{when(k.created_at)}</td>
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
                        label={`Full tracing for key ${k.name}`}
                        on={k.tracing}
                        disabled={!props.canManage}
                        busy={toggling === k.api_key_id}
                        onToggle={(v) => setTracing(k, v)}
                      />
                    )}
                  </td>
                  <td>
                    {k.revoked_at ? null : (
                      <div class="row tight">
                        <Button
                          data-testid="rotate-key"
                          disabled={!props.canManage}
                          aria-label={`Rotate key ${k.name} (${k.prefix})`}
                          onClick={() => {
                            change.setError(null);
                            setPending({ kind: 'rotate', key: k });
                          }}
                        >
                          Rotate
                        </Button>
                        <Button
                          kind="danger"
                          disabled={!props.canManage}
                          aria-label={`Revoke key ${k.name} (${k.prefix})`}
                          onClick={() => {
                            change.setError(null);
                            setPending({ kind: 'revoke', key: k });
                          }}
                        >
                          Revoke
                        </Button>
                        <Button
                          aria-label={`Reporting dimensions of key ${k.name}`}
                          onClick={() => props.onPickDimensions(k.api_key_id)}
                        >
                          Dimensions
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
      <h3>Create an API key</h3>
      <form onSubmit={submit}>
        <fieldset class="plain" disabled={!props.canManage}>
          <legend class="sr-only">Create an API key</legend>
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

export const KeysPage = () => {
  const scope = useScope();
  const [tick, setTick] = useState(0);
  const [dimKey, setDimKey] = useState('');
  const reload = () => setTick((t) => t + 1);
  const keys = useLoad(
    () =>
      scope.orgId
        ? api
            .get<{ data: ApiKey[] }>('/api/api-keys', { project_id: scope.projectId || undefined })
            .then((r) => r.data.filter((k) => k.org_id === scope.orgId))
        : Promise.resolve([] as ApiKey[]),
    [scope.orgId, scope.projectId, tick],
  );
  const canManage = scope.role === 'manager';
  const projectName = (id: string) => scope.projects.find((p) => p.project_id === id)?.name ?? id;
  if (!scope.orgId)
    return (
      <Page title="Keys">
        <Notice>Choose an organization to see its keys.</Notice>
      </Page>
    );
  return (
    <Page title="Keys" actions={<Button onClick={reload}>Refresh</Button>}>
      {keys.loading && !keys.data ? <Loading /> : null}
      <ErrorBox error={keys.error} />
      {keys.data ? (
        <ApiKeysSection
          keys={keys.data}
          projectName={projectName}
          canManage={canManage}
          onChanged={reload}
          onPickDimensions={(id) => {
            setDimKey(id);
            document.getElementById('dimension-values')?.scrollIntoView();
            document.getElementById('dimension-values')?.focus();
          }}
        />
      ) : null}
      <DeveloperTokensSection />
      <TraceIngestKeysSection canManage={canManage} projectName={projectName} />
      <TracingSection canManage={canManage} />
      <DimensionsSection
        canManage={canManage}
        keys={(keys.data ?? []).filter((k) => !k.revoked_at)}
        apiKeyId={dimKey}
        onApiKey={setDimKey}
      />
      <SpendCapsSection
        canManage={canManage}
        keys={(keys.data ?? []).filter((k) => !k.revoked_at)}
        tick={tick}
      />
    </Page>
  );
};
