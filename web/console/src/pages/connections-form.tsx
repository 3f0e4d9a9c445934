/**
 * The create form of a tenant connection (BYOK), one set of fields per provider family, checked
 * here by the same rules the server applies before encryption (src/commands/connections/
 * validation.ts): SPEC 2.6 (managed runtime: region; secret is the access key pair), SPEC 2.7
 * (deployment host: resource, domain, api_version, deployments, project_endpoint,
 * discovery_api_version; secret is the resource api key) and SPEC 4.7 (base_url is an origin).
 * The server stays the judge; this only keeps invalid input from being sent.
 */
import { useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { useScope } from '../scope';
import { Button, ErrorBox, SelectField, TextField, useAction } from '../ui';
import { isName, NAME_HINT } from './keys-common';

export const PROVIDERS = [
  { value: 'openai', label: 'OpenAI or OpenAI-compatible', family: 'api-key' },
  { value: 'anthropic', label: 'Anthropic', family: 'api-key' },
  { value: 'bedrock', label: 'Bedrock (managed runtime)', family: 'managed-runtime' },
  { value: 'bedrock-gov', label: 'Bedrock, government cloud', family: 'managed-runtime' },
  { value: 'azure', label: 'Azure OpenAI (deployment host)', family: 'deployment-host' },
  { value: 'azure-gov', label: 'Azure OpenAI, government cloud', family: 'deployment-host' },
] as const;
type Provider = (typeof PROVIDERS)[number]['value'];
const familyOf = (p: Provider) => PROVIDERS.find((x) => x.value === p)?.family ?? 'api-key';

// The server's field rules (src/lib/fields.ts, src/lib/origin.ts), each returning a problem or null.
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const token = (v: string): string | null =>
  v.trim() === '' ? 'is required' : CONTROL.test(v) || /\s/.test(v) ? 'must not contain whitespace' : null;
const hostLabel = (v: string): string | null => {
  if (v.trim() === '') return 'is required';
  if (CONTROL.test(v) || /[/\\?#@:\s]/.test(v)) return 'must not contain / \\ ? # @ : or spaces';
  try {
    return new URL(`https://${v}.invalid`).hostname === `${v.toLowerCase()}.invalid`
      ? null
      : 'must be usable as part of a host name';
  } catch {
    return 'must be usable as part of a host name';
  }
};
const hostSuffix = (v: string): string | null =>
  /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(v)
    ? null
    : 'must be a host name suffix such as openai.azure.com';
const LOOPBACK = /^(localhost|\[::1\]|127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;
const httpUrl = (v: string, path: boolean): string | null => {
  if (/\s/.test(v) || CONTROL.test(v)) return 'must not contain whitespace';
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return path ? 'must be an absolute https URL' : 'must be an absolute URL such as https://host[:port]';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'must use https';
  if (u.protocol === 'http:' && !LOOPBACK.test(u.hostname)) return 'must use https (http only for loopback)';
  if (
    u.username ||
    u.password ||
    v
      .slice(v.indexOf('//') + 2)
      .split(/[/?#\\]/, 1)[0]
      ?.includes('@')
  )
    return 'must not contain credentials';
  if (v.includes('?')) return 'must not contain a query';
  if (v.includes('#')) return 'must not contain a fragment';
  if (!path && u.pathname !== '/') return 'must not contain a path';
  return null;
};
const LANE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

interface Deployment {
  model: string;
  deployment: string;
}

interface Fields {
  projectId: string;
  name: string;
  lane: string;
  baseUrl: string;
  apiKey: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  resource: string;
  domain: string;
  apiVersion: string;
  deployments: Deployment[];
  projectEndpoint: string;
  discoveryApiVersion: string;
}

/** Problems by field name; empty when the form may be sent. */
const problemsOf = (provider: Provider, f: Fields): Record<string, string> => {
  const out: Record<string, string> = {};
  const add = (field: string, problem: string | null) => {
    if (problem) out[field] = problem;
  };
  if (!f.projectId) out.projectId = 'choose a project';
  if (!isName(f.name)) out.name = NAME_HINT;
  if (f.lane && !LANE.test(f.lane)) out.lane = 'lower-case letters, digits, - and _, at most 63 characters';
  if (f.baseUrl) add('baseUrl', httpUrl(f.baseUrl, false));
  const family = familyOf(provider);
  if (family === 'managed-runtime') {
    add('region', hostLabel(f.region));
    add('accessKeyId', token(f.accessKeyId));
    add('secretAccessKey', token(f.secretAccessKey));
  } else {
    add('apiKey', token(f.apiKey));
  }
  if (family === 'deployment-host') {
    add('resource', hostLabel(f.resource));
    if (f.domain) add('domain', hostSuffix(f.domain));
    add('apiVersion', token(f.apiVersion));
    if (f.projectEndpoint) add('projectEndpoint', httpUrl(f.projectEndpoint, true));
    if (f.discoveryApiVersion) add('discoveryApiVersion', token(f.discoveryApiVersion));
    const seen = new Set<string>();
    f.deployments.forEach((d, i) => {
      if (d.model === '' && d.deployment === '') return;
      if (d.model.trim() === '' || CONTROL.test(d.model)) out[`dep${i}`] = 'needs a model id';
      else if (d.deployment.trim() === '' || CONTROL.test(d.deployment))
        out[`dep${i}`] = 'needs a deployment name';
      else if (seen.has(d.model)) out[`dep${i}`] = 'model listed twice';
      seen.add(d.model);
    });
  }
  return out;
};

/** The body of POST /api/provider-keys (SPEC 4.6): only the fields the provider takes. */
const bodyOf = (provider: Provider, orgId: string, f: Fields) => {
  const family = familyOf(provider);
  const metadata: Record<string, unknown> = {};
  let secret = f.apiKey;
  if (family === 'managed-runtime') {
    metadata.region = f.region.trim();
    secret = JSON.stringify({
      access_key_id: f.accessKeyId.trim(),
      secret_access_key: f.secretAccessKey.trim(),
    });
  }
  if (family === 'deployment-host') {
    metadata.resource = f.resource.trim();
    if (f.domain) metadata.domain = f.domain.trim();
    metadata.api_version = f.apiVersion.trim();
    const deployments = f.deployments.filter((d) => d.model !== '' || d.deployment !== '');
    if (deployments.length)
      metadata.deployments = Object.fromEntries(deployments.map((d) => [d.model, d.deployment]));
    if (f.projectEndpoint) metadata.project_endpoint = f.projectEndpoint.trim();
    if (f.discoveryApiVersion) metadata.discovery_api_version = f.discoveryApiVersion.trim();
  }
  return {
    org_id: orgId,
    project_id: f.projectId,
    provider,
    name: f.name.trim(),
    secret: secret.trim(),
    ...(family === 'api-key' ? {} : { metadata }),
    ...(f.lane ? { lane: f.lane } : {}),
    ...(f.baseUrl ? { base_url: f.baseUrl.trim() } : {}),
  };
};

const blank = (projectId: string): Fields => ({
  projectId,
  name: 'primary',
  lane: '',
  baseUrl: '',
  apiKey: '',
  region: '',
  accessKeyId: '',
  secretAccessKey: '',
  resource: '',
  domain: '',
  apiVersion: '',
  deployments: [{ model: '', deployment: '' }],
  projectEndpoint: '',
  discoveryApiVersion: '',
});

export const CreateConnectionForm = (props: { disabled: boolean; onCreated: (name: string) => void }) => {
  const scope = useScope();
  const [provider, setProvider] = useState<Provider>('openai');
  const [f, setF] = useState<Fields>(() => blank(scope.projectId));
  const [touched, setTouched] = useState(false);
  const create = useAction();
  const form = useRef<HTMLFormElement>(null);
  const set =
    <K extends keyof Fields>(k: K) =>
    (v: Fields[K]) =>
      setF((cur) => ({ ...cur, [k]: v }));
  // A project chosen under another organization no longer applies.
  const projectId = scope.projects.some((p) => p.project_id === f.projectId) ? f.projectId : scope.projectId;
  const fields = { ...f, projectId };
  const problems = problemsOf(provider, fields);
  const ok = Object.keys(problems).length === 0;
  const problem = (k: string) => (touched ? problems[k] : undefined);
  const family = familyOf(provider);
  const submit = async (e: Event) => {
    e.preventDefault();
    setTouched(true);
    if (!ok) {
      // Keyboard and screen-reader users land on the first field to fix.
      setTimeout(() => form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus(), 0);
      return;
    }
    const r = await create.run(() =>
      api.post<{ id: string; name: string }>('/api/provider-keys', bodyOf(provider, scope.orgId, fields)),
    );
    if (r) {
      // The secret fields are cleared at once: the page never keeps a credential after sending it.
      setF(blank(projectId));
      setTouched(false);
      props.onCreated(r.name);
    }
  };
  const err = (k: string) => {
    const p = problem(k);
    return p ? { error: p } : {};
  };
  return (
    <form ref={form} onSubmit={submit} noValidate>
      <fieldset class="plain" disabled={props.disabled}>
        <legend class="sr-only">Create a connection</legend>
        <div class="row">
          <SelectField
            label="Provider"
            value={provider}
            onValue={(v) => {
              // Another provider takes other fields: what was typed for the last one (a secret
              // included) is dropped rather than sent along or left in a hidden input.
              setProvider(v as Provider);
              setF((cur) => ({ ...blank(cur.projectId), name: cur.name, lane: cur.lane }));
              setTouched(false);
              create.setError(null);
            }}
            options={PROVIDERS.map((p) => ({ value: p.value, label: p.label }))}
          />
          <SelectField
            label="Project"
            value={projectId}
            onValue={set('projectId')}
            empty="Choose a project"
            options={scope.projects.map((p) => ({ value: p.project_id, label: p.name }))}
          />
          <TextField
            label="Name"
            value={f.name}
            onValue={set('name')}
            required
            maxLength={100}
            hint="The gateway routes the connection named primary; other names wait for a selector."
            {...err('name')}
          />
          <TextField
            label="Lane (optional)"
            value={f.lane}
            onValue={set('lane')}
            maxLength={63}
            hint="A registry lane; empty serves every lane of the provider."
            {...err('lane')}
          />
        </div>
        {family === 'api-key' ? (
          <div class="row">
            <TextField
              label={provider === 'openai' ? 'API key' : 'Anthropic API key'}
              type="password"
              autoComplete="off"
              value={f.apiKey}
              onValue={set('apiKey')}
              required
              {...err('apiKey')}
            />
            <TextField
              label="Base URL (optional)"
              type="url"
              value={f.baseUrl}
              onValue={set('baseUrl')}
              placeholder="https://api.example.com"
              hint={
                provider === 'openai'
                  ? 'For an OpenAI-compatible server: its origin, https, no path. Empty: the provider default.'
                  : 'An origin (https, no path); empty: the provider default.'
              }
              {...err('baseUrl')}
            />
          </div>
        ) : null}
        {family === 'managed-runtime' ? (
          <div class="row">
            <TextField
              label="Region"
              value={f.region}
              onValue={set('region')}
              required
              placeholder={provider === 'bedrock-gov' ? 'us-gov-west-1' : 'us-east-1'}
              hint="The signing region; it picks the runtime host."
              {...err('region')}
            />
            <TextField
              label="Access key id"
              autoComplete="off"
              value={f.accessKeyId}
              onValue={set('accessKeyId')}
              required
              {...err('accessKeyId')}
            />
            <TextField
              label="Secret access key"
              type="password"
              autoComplete="off"
              value={f.secretAccessKey}
              onValue={set('secretAccessKey')}
              required
              {...err('secretAccessKey')}
            />
            <TextField
              label="Base URL (optional)"
              type="url"
              value={f.baseUrl}
              onValue={set('baseUrl')}
              hint="A custom runtime origin; the region stays the signing region."
              {...err('baseUrl')}
            />
          </div>
        ) : null}
        {family === 'deployment-host' ? (
          <>
            <div class="row">
              <TextField
                label="Resource"
                value={f.resource}
                onValue={set('resource')}
                required
                hint="The resource name in https://{resource}.{domain}."
                {...err('resource')}
              />
              <TextField
                label="Domain (optional)"
                value={f.domain}
                onValue={set('domain')}
                placeholder={provider === 'azure-gov' ? 'openai.azure.us' : 'openai.azure.com'}
                hint="Empty: the lane's default domain."
                {...err('domain')}
              />
              <TextField
                label="API version"
                value={f.apiVersion}
                onValue={set('apiVersion')}
                required
                placeholder="2024-10-21"
                hint="Sent as api-version on every inference request."
                {...err('apiVersion')}
              />
              <TextField
                label="API key"
                type="password"
                autoComplete="off"
                value={f.apiKey}
                onValue={set('apiKey')}
                required
                hint="The resource key, sent as the api-key header."
                {...err('apiKey')}
              />
            </div>
            <div class="row">
              <TextField
                label="Project endpoint (optional)"
                type="url"
                value={f.projectEndpoint}
                onValue={set('projectEndpoint')}
                hint="Used only by deployment discovery: the project URL with its path, https."
                {...err('projectEndpoint')}
              />
              <TextField
                label="Discovery API version (optional)"
                value={f.discoveryApiVersion}
                onValue={set('discoveryApiVersion')}
                hint="Overrides the listing api-version only."
                {...err('discoveryApiVersion')}
              />
              <TextField
                label="Base URL (optional)"
                type="url"
                value={f.baseUrl}
                onValue={set('baseUrl')}
                hint="Overrides the derived origin; https, no path."
                {...err('baseUrl')}
              />
            </div>
            <fieldset class="deployments">
              <legend>Deployments (model id → deployment name); discovery can fill these in later</legend>
              {f.deployments.map((d, i) => (
                <div class="row" key={i}>
                  <TextField
                    label={`Model id ${i + 1}`}
                    value={d.model}
                    onValue={(v) =>
                      set('deployments')(f.deployments.map((x, j) => (j === i ? { ...x, model: v } : x)))
                    }
                    {...err(`dep${i}`)}
                  />
                  <TextField
                    label={`Deployment name ${i + 1}`}
                    value={d.deployment}
                    onValue={(v) =>
                      set('deployments')(f.deployments.map((x, j) => (j === i ? { ...x, deployment: v } : x)))
                    }
                  />
                  <Button
                    aria-label={`Remove deployment row ${i + 1}`}
                    onClick={() => set('deployments')(f.deployments.filter((_, j) => j !== i))}
                  >
                    Remove
                  </Button>
                </div>
              ))}
              <Button onClick={() => set('deployments')([...f.deployments, { model: '', deployment: '' }])}>
                Add a deployment
              </Button>
            </fieldset>
          </>
        ) : null}
        <div class="row">
          <Button type="submit" kind="primary" busy={create.busy}>
            Create connection
          </Button>
          {touched && !ok ? (
            <span class="error" role="alert">
              Fix the fields marked above.
            </span>
          ) : null}
        </div>
      </fieldset>
      <ErrorBox error={create.error} />
    </form>
  );
};
