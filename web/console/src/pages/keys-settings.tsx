/**
 * Settings beside the keys: full payload tracing of the organization and its projects (SPEC 4.6
 * PATCH .../tracing), reporting dimensions of the workspace and their values per API key (SPEC
 * 2.10), and monthly spend caps on the organization, a project or an API key (SPEC 8).
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { useScope } from '../scope';
import {
  Button,
  ErrorBox,
  formatTime,
  formatUsd,
  Loading,
  Notice,
  Section,
  SelectField,
  Table,
  TextField,
  useAction,
  useLoad,
} from '../ui';
import { type ApiKey, Confirm, MembersRead, Toggle, when } from './keys-common';

interface OrgDetail {
  org_id: string;
  name: string;
  tracing: boolean;
}
interface ProjectDetail {
  project_id: string;
  org_id: string;
  name: string;
  tracing: boolean;
}

export const TracingSection = (props: { canManage: boolean }) => {
  const scope = useScope();
  const [tick, setTick] = useState(0);
  const [busy, setBusy] = useState<string | null>(null);
  const change = useAction();
  const data = useLoad(
    async () => ({
      org: await api.get<OrgDetail>(`/api/orgs/${encodeURIComponent(scope.orgId)}`),
      projects: (await api.get<{ data: ProjectDetail[] }>('/api/projects', { org_id: scope.orgId })).data,
    }),
    [scope.orgId, tick],
  );
  const set = async (id: string, path: string, enabled: boolean) => {
    setBusy(id);
    await change.run(() => api.patch(path, { enabled }));
    setBusy(null);
    setTick((t) => t + 1);
  };
  return (
    <Section title="Full payload tracing">
      <p class="muted">
        With full tracing on, request and response bodies are captured for the organization, a project or an
        API key (any of the three turns it on for a request). API key switches are in the API keys table.
      </p>
      {props.canManage ? null : <MembersRead what="tracing settings" />}
      {data.loading && !data.data ? <Loading /> : null}
      <ErrorBox error={data.error} />
      <ErrorBox error={change.error} />
      {data.data ? (
        <Table
          caption="Tracing by organization and project"
          columns={[
            {
              label: 'Scope',
              cell: (r: { id: string; kind: string; name: string; on: boolean; path: string }) => r.kind,
            },
            { label: 'Name', cell: (r) => r.name },
            {
              label: 'Full tracing',
              cell: (r) => (
                <Toggle
                  label={`Full tracing for ${r.kind} ${r.name}`}
                  on={r.on}
                  disabled={!props.canManage}
                  busy={busy === r.id}
                  onToggle={(v) => set(r.id, r.path, v)}
                />
              ),
            },
          ]}
          rows={[
            {
              id: data.data.org.org_id,
              kind: 'Organization',
              name: data.data.org.name,
              on: data.data.org.tracing,
              path: `/api/orgs/${encodeURIComponent(data.data.org.org_id)}/tracing`,
            },
            ...data.data.projects.map((p) => ({
              id: p.project_id,
              kind: 'Project',
              name: p.name,
              on: p.tracing,
              path: `/api/projects/${encodeURIComponent(p.project_id)}/tracing`,
            })),
          ]}
          rowKey={(r) => r.id}
        />
      ) : null}
    </Section>
  );
};

interface Definition {
  definition_id: string;
  key: string;
  description: string;
  created_at: string;
  archived_at: string | null;
}
interface Assignment {
  definition_id: string;
  key: string;
  value: string;
  effective_from: string;
  effective_to: string | null;
}
const DIMENSION_KEY = /^[a-z][a-z0-9_]{0,62}$/;

export const DimensionsSection = (props: {
  canManage: boolean;
  keys: ApiKey[];
  apiKeyId: string;
  onApiKey: (id: string) => void;
}) => {
  const scope = useScope();
  const ws = encodeURIComponent(scope.workspaceId);
  const [tick, setTick] = useState(0);
  const [key, setKey] = useState('');
  const [description, setDescription] = useState('');
  const [archiving, setArchiving] = useState<Definition | null>(null);
  const define = useAction();
  const archive = useAction();
  const defs = useLoad(
    () =>
      api.get<{ data: Definition[]; guidance: string }>(`/api/workspaces/${ws}/reporting-dimensions`, {
        include_archived: true,
      }),
    [ws, tick],
  );
  const validKey = DIMENSION_KEY.test(key);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!validKey) return;
    const r = await define.run(() =>
      api.post(`/api/workspaces/${ws}/reporting-dimensions`, {
        key,
        ...(description.trim() ? { description: description.trim() } : {}),
      }),
    );
    if (r !== undefined) {
      setKey('');
      setDescription('');
      setTick((t) => t + 1);
    }
  };
  const confirmArchive = async () => {
    if (!archiving) return;
    const r = await archive.run(() =>
      api.delete(`/api/workspaces/${ws}/reporting-dimensions/${encodeURIComponent(archiving.definition_id)}`),
    );
    if (r !== undefined) {
      setArchiving(null);
      setTick((t) => t + 1);
    }
  };
  const active = (defs.data?.data ?? []).filter((d) => !d.archived_at);
  return (
    <Section title="Reporting dimensions">
      {defs.data ? <Notice>{defs.data.guidance}</Notice> : null}
      {props.canManage ? null : <MembersRead what="reporting dimensions" />}
      {defs.loading && !defs.data ? <Loading /> : null}
      <ErrorBox error={defs.error} />
      {archiving ? (
        <Confirm
          title={`Archive dimension "${archiving.key}"?`}
          confirmLabel="Archive"
          danger
          busy={archive.busy}
          onConfirm={confirmArchive}
          onCancel={() => setArchiving(null)}
        >
          <p>New values cannot be set on an archived dimension; reports keep the values already recorded.</p>
          <ErrorBox error={archive.error} />
        </Confirm>
      ) : null}
      {defs.data ? (
        <Table
          caption="Dimensions of the workspace"
          columns={[
            { label: 'Key', cell: (d: Definition) => <code>{d.key}</code> },
            { label: 'Description', cell: (d) => d.description || '—' },
            { label: 'Defined', cell: (d) => when(d.created_at) },
            { label: 'Status', cell: (d) => (d.archived_at ? `archived ${when(d.archived_at)}` : 'active') },
            {
              label: 'Actions',
              cell: (d) =>
                d.archived_at ? null : (
                  <Button
                    disabled={!props.canManage}
                    aria-label={`Archive dimension ${d.key}`}
                    onClick={() => setArchiving(d)}
                  >
                    Archive
                  </Button>
                ),
            },
          ]}
          rows={defs.data.data}
          rowKey={(d) => d.definition_id}
          empty="No reporting dimensions are defined."
        />
      ) : null}
      <h3>Define a dimension</h3>
      <form onSubmit={submit}>
        <fieldset class="plain" disabled={!props.canManage}>
          <legend class="sr-only">Define a dimension</legend>
          <div class="row">
            <TextField
              label="Key"
              value={key}
              onValue={setKey}
              required
              maxLength={63}
              pattern="[a-z][a-z0-9_]{0,62}"
              aria-invalid={key !== '' && !validKey}
              hint="Lower-case letters, digits and underscores, starting with a letter (e.g. cost_center)."
            />
            <TextField
              label="Description (optional)"
              value={description}
              onValue={setDescription}
              maxLength={500}
            />
            <Button type="submit" kind="primary" busy={define.busy} disabled={!validKey}>
              Define
            </Button>
          </div>
        </fieldset>
      </form>
      <ErrorBox error={define.error} />
      <KeyDimensionValues
        canManage={props.canManage}
        keys={props.keys}
        apiKeyId={props.apiKeyId}
        onApiKey={props.onApiKey}
        definitions={active}
      />
    </Section>
  );
};

const KeyDimensionValues = (props: {
  canManage: boolean;
  keys: ApiKey[];
  apiKeyId: string;
  onApiKey: (id: string) => void;
  definitions: Definition[];
}) => {
  const [tick, setTick] = useState(0);
  const [definitionId, setDefinitionId] = useState('');
  const [value, setValue] = useState('');
  const change = useAction();
  const id = props.apiKeyId;
  const values = useLoad(
    () =>
      id
        ? api.get<{ data: Assignment[] }>(`/api/api-keys/${encodeURIComponent(id)}/reporting-dimensions`)
        : Promise.resolve(null),
    [id, tick],
  );
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!id || !definitionId || !value.trim()) return;
    const r = await change.run(() =>
      api.put(`/api/api-keys/${encodeURIComponent(id)}/reporting-dimensions`, {
        definition_id: definitionId,
        value: value.trim(),
      }),
    );
    if (r !== undefined) {
      setValue('');
      setTick((t) => t + 1);
    }
  };
  const end = async (a: Assignment) => {
    const r = await change.run(() =>
      api.delete(
        `/api/api-keys/${encodeURIComponent(id)}/reporting-dimensions/${encodeURIComponent(a.definition_id)}`,
      ),
    );
    if (r !== undefined) setTick((t) => t + 1);
  };
  return (
    <div class="card inner" id="dimension-values" tabIndex={-1}>
      <h3>Values of an API key</h3>
      <SelectField
        label="API key"
        value={id}
        onValue={props.onApiKey}
        empty="Choose an API key"
        options={props.keys.map((k) => ({ value: k.api_key_id, label: `${k.name} (${k.prefix}…)` }))}
      />
      {values.loading && id ? <Loading /> : null}
      <ErrorBox error={values.error} />
      <ErrorBox error={change.error} />
      {values.data ? (
        <>
          <Table
            caption="Values in force now"
            columns={[
              { label: 'Dimension', cell: (a: Assignment) => <code>{a.key}</code> },
              { label: 'Value', cell: (a) => a.value },
              { label: 'Since', cell: (a) => formatTime(a.effective_from) },
              { label: 'Until', cell: (a) => formatTime(a.effective_to) },
              {
                label: 'Actions',
                cell: (a) => (
                  <Button
                    disabled={!props.canManage || change.busy}
                    aria-label={`End value of ${a.key}`}
                    onClick={() => end(a)}
                  >
                    End
                  </Button>
                ),
              },
            ]}
            rows={values.data.data}
            rowKey={(a) => `${a.definition_id}:${a.effective_from}`}
            empty="This key has no dimension values."
          />
          <form onSubmit={submit}>
            <fieldset class="plain" disabled={!props.canManage}>
              <legend class="sr-only">Set a value</legend>
              <div class="row">
                <SelectField
                  label="Dimension"
                  value={definitionId}
                  onValue={setDefinitionId}
                  empty="Choose a dimension"
                  options={props.definitions.map((d) => ({ value: d.definition_id, label: d.key }))}
                />
                <TextField label="Value" value={value} onValue={setValue} required maxLength={200} />
                <Button
                  type="submit"
                  kind="primary"
                  busy={change.busy}
                  disabled={!definitionId || !value.trim()}
                >
                  Set value
                </Button>
              </div>
            </fieldset>
          </form>
        </>
      ) : null}
    </div>
  );
};

interface SpendCap {
  level: 'org' | 'project' | 'api_key';
  target_id: string;
  org_id: string;
  monthly_usd: string;
  updated_at: string;
  updated_by: string | null;
}
const LEVEL_LABEL: Record<SpendCap['level'], string> = {
  org: 'Organization',
  project: 'Project',
  api_key: 'API key',
};
const capPath = (level: SpendCap['level'], id: string) =>
  `/api/${level === 'org' ? 'orgs' : level === 'project' ? 'projects' : 'api-keys'}/${encodeURIComponent(id)}/spend-cap`;
const CAP_PATTERN = '\\d{1,12}(\\.\\d{1,18})?';

export const SpendCapsSection = (props: { canManage: boolean; keys: ApiKey[]; tick: number }) => {
  const scope = useScope();
  const [tick, setTick] = useState(0);
  const [level, setLevel] = useState<SpendCap['level']>('org');
  const [target, setTarget] = useState('');
  const [amount, setAmount] = useState('');
  const change = useAction();
  const caps = useLoad(
    () => api.get<{ data: SpendCap[]; guidance: string }>('/api/spend-caps', { org_id: scope.orgId }),
    [scope.orgId, tick, props.tick],
  );
  const targets =
    level === 'org'
      ? [{ value: scope.orgId, label: scope.orgs.find((o) => o.org_id === scope.orgId)?.name ?? scope.orgId }]
      : level === 'project'
        ? scope.projects.map((p) => ({ value: p.project_id, label: p.name }))
        : props.keys.map((k) => ({ value: k.api_key_id, label: `${k.name} (${k.prefix}…)` }));
  const chosen = level === 'org' ? scope.orgId : target;
  const nameOf = (c: SpendCap) =>
    c.level === 'org'
      ? (scope.orgs.find((o) => o.org_id === c.target_id)?.name ?? c.target_id)
      : c.level === 'project'
        ? (scope.projects.find((p) => p.project_id === c.target_id)?.name ?? c.target_id)
        : (props.keys.find((k) => k.api_key_id === c.target_id)?.name ?? c.target_id);
  const valid = new RegExp(`^${CAP_PATTERN}$`).test(amount.trim()) && chosen !== '';
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!valid) return;
    const r = await change.run(() => api.put(capPath(level, chosen), { monthly_usd: amount.trim() }));
    if (r !== undefined) {
      setAmount('');
      setTick((t) => t + 1);
    }
  };
  const clear = async (c: SpendCap) => {
    // DELETE answers 204 (no body): the action returns true once it has succeeded.
    const ok = await change.run(async () => {
      await api.delete(capPath(c.level, c.target_id));
      return true;
    });
    if (ok) setTick((t) => t + 1);
  };
  return (
    <Section title="Spend caps">
      {caps.data ? <Notice>{caps.data.guidance}</Notice> : null}
      {props.canManage ? null : <MembersRead what="spend caps" />}
      {caps.loading && !caps.data ? <Loading /> : null}
      <ErrorBox error={caps.error} />
      <ErrorBox error={change.error} />
      {caps.data ? (
        <Table
          caption="Monthly spend caps of the organization, its projects and keys"
          columns={[
            { label: 'Level', cell: (c: SpendCap) => LEVEL_LABEL[c.level] },
            { label: 'Applies to', cell: (c) => nameOf(c) },
            {
              label: 'Cap per UTC month',
              cell: (c) => <span title={`${c.monthly_usd} USD`}>{formatUsd(c.monthly_usd)}</span>,
              numeric: true,
            },
            {
              label: 'Changed',
              cell: (c) => `${formatTime(c.updated_at)}${c.updated_by ? ` by ${c.updated_by}` : ''}`,
            },
            {
              label: 'Actions',
              cell: (c) => (
                <Button
                  disabled={!props.canManage || change.busy}
                  aria-label={`Clear the spend cap of ${LEVEL_LABEL[c.level]} ${nameOf(c)}`}
                  onClick={() => clear(c)}
                >
                  Clear
                </Button>
              ),
            },
          ]}
          rows={caps.data.data}
          rowKey={(c) => `${c.level}:${c.target_id}`}
          empty="No spend caps are set."
        />
      ) : null}
      <h3>Set a spend cap</h3>
      <form onSubmit={submit}>
        <fieldset class="plain" disabled={!props.canManage}>
          <legend class="sr-only">Set a spend cap</legend>
          <div class="row">
            <SelectField
              label="Level"
              value={level}
              onValue={(v) => {
                setLevel(v as SpendCap['level']);
                setTarget('');
              }}
              options={[
                { value: 'org', label: 'Organization' },
                { value: 'project', label: 'Project' },
                { value: 'api_key', label: 'API key' },
              ]}
            />
            <SelectField
              label="Applies to"
              value={chosen}
              onValue={setTarget}
              disabled={level === 'org'}
              {...(level === 'org' ? {} : { empty: 'Choose one' })}
              options={targets}
            />
            <TextField
              label="Monthly cap (USD)"
              value={amount}
              onValue={setAmount}
              inputMode="decimal"
              required
              pattern={CAP_PATTERN}
              hint="Exact decimal, e.g. 250 or 99.50."
            />
            <Button type="submit" kind="primary" busy={change.busy} disabled={!valid}>
              Set cap
            </Button>
          </div>
        </fieldset>
      </form>
    </Section>
  );
};
