import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { RunningService } from '../../src/cli/service.js';
import type { ServedRoute } from '../../src/edges/http/server.js';
import { startEveryRole } from '../helpers/every-role.js';

// deploy/k8s runs one Deployment per role (ARCHITECTURE.md roles) behind one Ingress. Held here
// to the code: every HTTP route a role registers, with every role in one process, reaches that
// role's Service through the Ingress, by the Ingress's own matching rules (Exact, then the longest
// Prefix by path element).

const K8S = fileURLToPath(new URL('../../deploy/k8s/', import.meta.url));

/** The fields of the manifests read here. */
interface Doc {
  kind: string;
  metadata: { name: string };
  spec: {
    selector: Record<string, string>;
    template: { metadata: { labels: Record<string, string> }; spec: { containers: { args: string[] }[] } };
    defaultBackend: Backend;
    rules: { http: { paths: { path: string; pathType: string; backend: Backend }[] } }[];
  };
}
interface Backend {
  service: { name: string };
}
interface Rule {
  path: string;
  exact: boolean;
  service: string;
}

const docs: Doc[] = [];
let rules: Rule[] = [];
let fallback = '';
let stop: (() => Promise<void>) | null = null;
let service: RunningService;
let routes: ServedRoute[] = [];

const elements = (path: string) => path.split('/').filter(Boolean);

/** The Service an Ingress sends a path to (networking.k8s.io/v1 path matching). */
const backendOf = (path: string): string => {
  const exact = rules.find((r) => r.exact && r.path === path);
  if (exact) return exact.service;
  const asked = elements(path);
  let best: Rule | null = null;
  for (const r of rules) {
    if (r.exact) continue;
    const want = elements(r.path);
    if (want.length > asked.length || want.some((e, i) => e !== asked[i])) continue;
    if (!best || want.length > elements(best.path).length) best = r;
  }
  return best?.service ?? fallback;
};

/** A concrete path for a route pattern: each parameter and wildcard becomes one segment. */
const sample = (url: string) =>
  url
    .split('/')
    .map((s) => (s.startsWith(':') || s === '*' ? 'x1' : s))
    .join('/');

beforeAll(async () => {
  for (const f of await readdir(K8S)) {
    for (const d of parseAllDocuments(await readFile(join(K8S, f), 'utf8'))) {
      expect(d.errors, f).toEqual([]);
      const js = d.toJS() as Doc | null;
      if (js) docs.push(js);
    }
  }
  const ingresses = docs.filter((d) => d.kind === 'Ingress');
  expect(ingresses).toHaveLength(1);
  const spec = ingresses[0]!.spec;
  fallback = spec.defaultBackend.service.name;
  rules = spec.rules.flatMap((r) =>
    r.http.paths.map((p) => ({
      path: p.path,
      exact: p.pathType === 'Exact',
      service: p.backend.service.name,
    })),
  );

  ({ service, stop } = await startEveryRole('ingress'));
  routes = service.routes.filter((r) => r.method !== 'HEAD');
}, 120_000);

afterAll(async () => {
  await stop?.();
});

describe('deploy/k8s: one Deployment per role behind one Ingress', () => {
  it('every role registers its routes (the inventory the Ingress is held to)', () => {
    const roles = new Set(routes.map((r) => r.role));
    for (const role of ['gateway', 'control-plane', 'auth', 'query', 'trace-ingest', 'audit', 'console'])
      expect(roles, role).toContain(role);
    expect(routes.length).toBeGreaterThan(150);
  });

  it("sends every route a role registers to that role's Service", () => {
    const wrong = routes
      .map((r) => ({ ...r, path: sample(r.url), to: backendOf(sample(r.url)) }))
      .filter((r) => r.to !== `svc-${r.role}`)
      .map((r) => `${r.method} ${r.url} (${r.role}) -> ${r.to}`);
    expect(wrong).toEqual([]);
  });

  it('each Service it names selects the pods of a Deployment running that one role', () => {
    const deployments = new Map(
      docs
        .filter((d) => d.kind === 'Deployment')
        .map((d) => [d.spec.template.metadata.labels['app.kubernetes.io/component'], d] as const),
    );
    for (const name of new Set([...rules.map((r) => r.service), fallback])) {
      const svc = docs.find((d) => d.kind === 'Service' && d.metadata.name === name);
      expect(svc, name).toBeDefined();
      const component = svc!.spec.selector['app.kubernetes.io/component'];
      const deployment = deployments.get(component);
      expect(deployment, name).toBeDefined();
      const args = deployment!.spec.template.spec.containers[0]!.args;
      expect(args.slice(args.indexOf('--roles') + 1)[0]).toBe(name.replace(/^svc-/, ''));
    }
  });

  it('what no role serves is answered in its surface, never looped through the console', () => {
    // The console forwards /api/* to the Ingress (SVC_CONSOLE_API_URL): only /api/query is its own.
    expect(backendOf('/api/query/requests')).toBe('svc-console');
    expect(backendOf('/api/no-such-family/x')).toBe('svc-control-plane');
    expect(backendOf('/api/audit-tokens')).toBe('svc-control-plane');
    expect(backendOf('/v1/audio/speech')).toBe('svc-gateway');
    expect(backendOf('/v1/traces/ingest')).toBe('svc-gateway');
    expect(backendOf('/v1/traces')).toBe('svc-trace-ingest');
    expect(backendOf('/')).toBe('svc-console');
    expect(backendOf('/favicon.ico')).toBe('svc-gateway');
  });
});
