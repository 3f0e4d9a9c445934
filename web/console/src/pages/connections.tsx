/**
 * Connections (SPEC 2.6, 2.7, 4.6, 5): the organization's tenant provider connections
 * (BYOK): list with their non-secret metadata, create with a form per provider family, delete, and
 * deployment discovery for deployment-host (Azure) connections, as a report or applied. Secrets
 * are never returned by the server and never kept by the page after they are sent.
 */
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../api';
import { useScope } from '../scope';
import { Button, ErrorBox, Loading, Notice, Page, Section, Table, useAction, useLoad } from '../ui';
import { CreateConnectionForm, PROVIDERS } from './connections-form';
import { Confirm, MembersRead, when } from './keys-common';
import './control-pages.css';

interface Connection {
  id: string;
  workspace_id: string;
  org_id: string;
  project_id: string | null;
  provider: string;
  lane: string | null;
  name: string;
  base_url: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

interface ClassifiedDeployment {
  name: string;
  identifiers: string[];
  model: string | null;
  model_version: string | null;
  status: string | null;
  classification: 'mapped' | 'mappable' | 'unsupported';
  models: string[];
}
interface DiscoveryReport {
  provider: string;
  surface: 'projects' | 'data-plane';
  listing_url: string;
  tried: { surface: string; url: string; outcome: string }[];
  deployments: ClassifiedDeployment[];
  counts: Record<
    'listed' | 'mapped' | 'mappable' | 'unsupported' | 'added' | 'pruned' | 'rewritten' | 'kept',
    number
  >;
  mappings: Record<string, string>;
  changes: {
    added: { model: string; deployment: string }[];
    pruned: { model: string; deployment: string }[];
    rewritten: { model: string; from: string; to: string }[];
  };
  applied: boolean;
}

const isDeploymentHost = (p: string) => p === 'azure' || p === 'azure-gov';
const providerLabel = (p: string) => PROVIDERS.find((x) => x.value === p)?.label ?? p;
const text = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** The non-secret metadata of a connection, field by field (deployments as a count and list). */
const MetadataCell = (props: { c: Connection }) => {
  const entries = Object.entries(props.c.metadata).filter(([k]) => k !== 'deployments');
  const deployments = props.c.metadata.deployments;
  const mapped =
    deployments && typeof deployments === 'object'
      ? Object.entries(deployments as Record<string, unknown>)
      : [];
  return (
    <dl class="kv">
      {props.c.base_url ? (
        <>
          <dt>base_url</dt>
          <dd>{props.c.base_url}</dd>
        </>
      ) : null}
      {entries.map(([k, v]) => (
        <Fragment key={k}>
          <dt>{k}</dt>
          <dd>{text(v)}</dd>
        </Fragment>
      ))}
      {isDeploymentHost(props.c.provider) ? (
        <>
          <dt>deployments</dt>
          <dd>
            {mapped.length === 0
              ? 'none mapped'
              : mapped.map(([model, dep]) => `${model} → ${text(dep)}`).join(', ')}
          </dd>
        </>
      ) : null}
      {!props.c.base_url && entries.length === 0 && !isDeploymentHost(props.c.provider) ? (
        <dd class="muted">no metadata</dd>
      ) : null}
    </dl>
  );
};

const CLASS_LABEL: Record<ClassifiedDeployment['classification'], string> = {
  mapped: 'mapped',
  mappable: 'mappable (a registry model matches)',
  unsupported: 'unsupported (no enabled registry endpoint)',
};

const Report = (props: { report: DiscoveryReport }) => {
  const r = props.report;
  return (
    <div class="card inner" aria-live="polite" data-testid="discovery-report">
      <h3>{r.applied ? 'Discovery applied' : 'Discovery report (nothing changed)'}</h3>
      <p>
        Listed through the {r.surface} surface: <code>{r.listing_url}</code>
      </p>
      {r.tried.length > 1 ? (
        <ul>
          {r.tried.map((t) => (
            <li key={t.url}>
              Tried {t.surface} <code>{t.url}</code>: {t.outcome}
            </li>
          ))}
        </ul>
      ) : null}
      <ul class="discovery-counts" aria-label="Counts">
        {(
          ['listed', 'mapped', 'mappable', 'unsupported', 'added', 'pruned', 'rewritten', 'kept'] as const
        ).map((k) => (
          <li key={k}>
            <strong>{r.counts[k]}</strong> {k}
          </li>
        ))}
      </ul>
      <Table
        caption="Deployments of the resource"
        columns={[
          { label: 'Deployment', cell: (d: ClassifiedDeployment) => <code>{d.name}</code> },
          {
            label: 'Model',
            cell: (d) => `${d.model ?? '—'}${d.model_version ? ` (${d.model_version})` : ''}`,
          },
          { label: 'Status', cell: (d) => d.status ?? '—' },
          { label: 'Classification', cell: (d) => CLASS_LABEL[d.classification] },
          { label: 'Serves model ids', cell: (d) => (d.models.length ? d.models.join(', ') : '—') },
        ]}
        rows={r.deployments}
        rowKey={(d) => d.name}
        empty="The listing returned no deployments."
      />
      <h3>{r.applied ? 'Changes made' : 'Changes an apply would make'}</h3>
      {r.changes.added.length + r.changes.pruned.length + r.changes.rewritten.length === 0 ? (
        <p>None: the mappings already match the resource.</p>
      ) : (
        <ul>
          {r.changes.added.map((c) => (
            <li key={`a${c.model}`}>
              add {c.model} → {c.deployment}
            </li>
          ))}
          {r.changes.pruned.map((c) => (
            <li key={`p${c.model}`}>
              remove {c.model} → {c.deployment} (deployment gone)
            </li>
          ))}
          {r.changes.rewritten.map((c) => (
            <li key={`r${c.model}`}>
              rewrite {c.model}: {c.from} → {c.to}
            </li>
          ))}
        </ul>
      )}
      <p class="muted">
        Mappings {r.applied ? 'now stored' : 'after an apply'}:{' '}
        {Object.keys(r.mappings).length === 0
          ? 'none'
          : Object.entries(r.mappings)
              .map(([m, d]) => `${m} → ${d}`)
              .join(', ')}
      </p>
    </div>
  );
};

const Discovery = (props: {
  connection: Connection;
  canManage: boolean;
  onApplied: () => void;
  onClose: () => void;
}) => {
  const [report, setReport] = useState<DiscoveryReport | null>(null);
  const [confirming, setConfirming] = useState(false);
  const action = useAction();
  const run = async (apply: boolean) => {
    const r = await action.run(() =>
      api.post<DiscoveryReport>(`/api/provider-keys/${encodeURIComponent(props.connection.id)}/discover`, {
        apply,
      }),
    );
    if (r) {
      setReport(r);
      setConfirming(false);
      if (apply) props.onApplied();
    }
  };
  return (
    <Section
      title={`Deployment discovery: ${props.connection.name} (${providerLabel(props.connection.provider)})`}
    >
      <p class="muted">
        Lists the resource's deployments (the project endpoint first when set, then the data plane) and
        classifies each as mapped, mappable or unsupported. A report changes nothing; apply adds mappable
        deployments to the connection's map and removes mappings whose deployment is gone.
      </p>
      {props.canManage ? null : (
        <Notice>
          Discovery calls the provider with the connection's key, so it needs a workspace manager.
        </Notice>
      )}
      <div class="row">
        <Button kind="primary" busy={action.busy} disabled={!props.canManage} onClick={() => run(false)}>
          Run report
        </Button>
        <Button busy={action.busy} disabled={!props.canManage} onClick={() => setConfirming(true)}>
          Apply…
        </Button>
        <Button onClick={props.onClose}>Close</Button>
      </div>
      {confirming ? (
        <Confirm
          title="Apply discovery to this connection?"
          confirmLabel="Apply"
          busy={action.busy}
          onConfirm={() => run(true)}
          onCancel={() => setConfirming(false)}
        >
          <p>
            The deployments map is replaced by the merged result (added mappable deployments, pruned missing
            ones). An empty listing is refused when the connection already has mappings.
          </p>
        </Confirm>
      ) : null}
      <ErrorBox error={action.error} />
      {report ? <Report report={report} /> : null}
    </Section>
  );
};

export const ConnectionsPage = () => {
  const scope = useScope();
  const [tick, setTick] = useState(0);
  const [deleting, setDeleting] = useState<Connection | null>(null);
  const [discovering, setDiscovering] = useState<Connection | null>(null);
  const [created, setCreated] = useState<string | null>(null);
  const remove = useAction();
  const canManage = scope.role === 'manager';
  const list = useLoad(
    () =>
      scope.orgId
        ? api.get<{ data: Connection[] }>('/api/provider-keys', {
            org_id: scope.orgId,
            project_id: scope.projectId || undefined,
          })
        : Promise.resolve({ data: [] as Connection[] }),
    [scope.orgId, scope.projectId, tick],
  );
  const projectName = (id: string | null) =>
    id === null ? '—' : (scope.projects.find((p) => p.project_id === id)?.name ?? id);
  const confirmDelete = async () => {
    if (!deleting) return;
    // DELETE answers 204: the action returns true once it has succeeded.
    const ok = await remove.run(async () => {
      await api.delete(`/api/provider-keys/${encodeURIComponent(deleting.id)}`);
      return true;
    });
    if (ok) {
      if (discovering?.id === deleting.id) setDiscovering(null);
      setDeleting(null);
      setTick((t) => t + 1);
    }
  };
  if (!scope.orgId)
    return (
      <Page title="Connections">
        <Notice>Choose an organization to see its provider connections.</Notice>
      </Page>
    );
  return (
    <Page title="Connections" actions={<Button onClick={() => setTick((t) => t + 1)}>Refresh</Button>}>
      <p class="muted">
        Your own provider credentials (BYOK), per project. The gateway routes a project's connection named{' '}
        <code>primary</code> for its provider; a connection routes nothing until the registry has an endpoint
        for the model. Secrets are encrypted at rest and never shown again.
      </p>
      <Section title="Connections">
        {canManage ? null : <MembersRead what="the connections" />}
        {deleting ? (
          <Confirm
            title={`Delete connection "${deleting.name}" (${providerLabel(deleting.provider)}, ${projectName(deleting.project_id)})?`}
            confirmLabel="Delete connection"
            danger
            busy={remove.busy}
            onConfirm={confirmDelete}
            onCancel={() => setDeleting(null)}
          >
            <p>Requests routed to it stop using your credential at once. The stored secret is discarded.</p>
            <ErrorBox error={remove.error} />
          </Confirm>
        ) : null}
        {list.loading && !list.data ? <Loading /> : null}
        <ErrorBox error={list.error} />
        {list.data ? (
          <Table
            caption={`Provider connections of the organization${scope.projectId ? ' (chosen project)' : ''}`}
            columns={[
              { label: 'Name', cell: (c: Connection) => c.name },
              { label: 'Provider', cell: (c) => providerLabel(c.provider) },
              { label: 'Lane', cell: (c) => c.lane ?? 'all' },
              { label: 'Project', cell: (c) => projectName(c.project_id) },
              { label: 'Settings', cell: (c) => <MetadataCell c={c} /> },
              { label: 'Created', cell: (c) => when(c.created_at) },
              {
                label: 'Actions',
                cell: (c) => (
                  <div class="row tight">
                    {isDeploymentHost(c.provider) ? (
                      <Button
                        aria-label={`Discover deployments of ${c.name}`}
                        onClick={() => setDiscovering(c)}
                      >
                        Discover
                      </Button>
                    ) : null}
                    <Button
                      kind="danger"
                      disabled={!canManage}
                      aria-label={`Delete connection ${c.name}`}
                      onClick={() => {
                        remove.setError(null);
                        setDeleting(c);
                      }}
                    >
                      Delete
                    </Button>
                  </div>
                ),
              },
            ]}
            rows={list.data.data}
            rowKey={(c) => c.id}
            empty="No provider connections yet: requests use the platform's keys and the wallet."
          />
        ) : null}
      </Section>
      {discovering ? (
        <Discovery
          key={discovering.id}
          connection={discovering}
          canManage={canManage}
          onApplied={() => setTick((t) => t + 1)}
          onClose={() => setDiscovering(null)}
        />
      ) : null}
      <Section title="Add a connection">
        {canManage ? null : <Notice>Only a workspace manager may add connections.</Notice>}
        {created ? (
          <p class="ok" role="status">
            Connection {created} created.
          </p>
        ) : null}
        <CreateConnectionForm
          key={scope.orgId}
          disabled={!canManage}
          onCreated={(name) => {
            setCreated(name);
            setTick((t) => t + 1);
          }}
        />
      </Section>
    </Page>
  );
};
