import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { configSchema } from '../../src/config/config.js';
import { ROLE_NAMES } from '../../src/roles/role.js';

// deploy/ (the Dockerfile, the compose cluster, the Kubernetes manifests) parses, names only
// variables the configuration schema knows (SPEC 8), sets the ones a cluster cannot do without,
// and runs only roles that exist.

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
const KNOWN = new Set(Object.keys(configSchema.shape));
/** Without these a process of a cluster would make its own database, bus, engine or secrets. */
const CLUSTER_REQUIRED = [
  'SVC_DATABASE_URL',
  'SVC_NATS_URL',
  'SVC_CLICKHOUSE_URL',
  'SVC_MASTER_KEY',
  'SVC_ADMIN_TOKEN',
];

type Doc = Record<string, unknown>;
const yamlDocs = async (file: string): Promise<Doc[]> => {
  // Compose files use YAML merge keys (<<: *anchor).
  const docs = parseAllDocuments(await readFile(file, 'utf8'), { merge: true });
  for (const d of docs) expect(d.errors, `${file}: ${d.errors.join('; ')}`).toEqual([]);
  return docs.map((d) => d.toJS({ maxAliasCount: 100 }) as Doc).filter(Boolean);
};
const svcVariables = (text: string): string[] =>
  [...text.matchAll(/\b((?:SVC|POLICY)_[A-Z0-9_]+)\b/g)].map((m) => m[1]!);
/** The roles a `serve --roles a,b` command line names. */
const rolesOf = (args: unknown): string[] => {
  const list = (args as string[]).map(String);
  const i = list.indexOf('--roles');
  return i < 0 ? [] : list[i + 1]!.split(',');
};

describe('deploy/', () => {
  it('names only configuration variables that exist', async () => {
    const files = [
      'Dockerfile',
      'compose.yaml',
      'README.md',
      ...(await readdir(join(DEPLOY, 'k8s'))).map((f) => `k8s/${f}`),
    ];
    for (const file of files) {
      const unknown = svcVariables(await readFile(join(DEPLOY, file), 'utf8')).filter((v) => !KNOWN.has(v));
      expect(unknown, file).toEqual([]);
    }
  });

  it('the compose cluster gives every svc process what a cluster needs, and runs real roles', async () => {
    const [compose] = await yamlDocs(join(DEPLOY, 'compose.yaml'));
    const services = compose!.services as Record<
      string,
      { image?: string; command?: string[]; environment?: Record<string, string> }
    >;
    const svc = Object.entries(services).filter(([, s]) => s.image === 'model-gateway:dev');
    expect(svc.map(([n]) => n).sort()).toEqual(['api', 'console', 'data', 'gateway-1', 'gateway-2']);
    const served = new Set<string>();
    for (const [name, s] of svc) {
      for (const v of CLUSTER_REQUIRED) expect(s.environment?.[v], `${name} ${v}`).toBeTruthy();
      for (const r of rolesOf(s.command)) {
        expect(ROLE_NAMES, `${name} role ${r}`).toContain(r);
        served.add(r);
      }
    }
    // Every role runs somewhere; the console knows where the API roles are.
    expect([...served].sort()).toEqual([...ROLE_NAMES].sort());
    expect(services.console!.environment!.SVC_CONSOLE_API_URL).toBe('http://api:8080');
    expect(Object.keys(services).filter((n) => n.startsWith('nats-'))).toHaveLength(3);
  });

  it('the Kubernetes manifests: one Deployment per role, each with probes and requests, the gateway with a PDB and an HPA', async () => {
    const docs: Doc[] = [];
    for (const f of await readdir(join(DEPLOY, 'k8s')))
      docs.push(...(await yamlDocs(join(DEPLOY, 'k8s', f))));
    const kinds = (kind: string) => docs.filter((d) => d.kind === kind);
    const config = kinds('ConfigMap')[0]!.data as Record<string, string>;
    const secret = kinds('Secret')[0]!.stringData as Record<string, string>;
    for (const v of CLUSTER_REQUIRED) expect(config[v] ?? secret[v], v).toBeTruthy();
    for (const v of [...Object.keys(config), ...Object.keys(secret)]) expect(KNOWN.has(v), v).toBe(true);

    const served: string[] = [];
    for (const d of kinds('Deployment')) {
      const name = (d.metadata as { name: string }).name;
      const spec = d.spec as {
        template: { spec: { containers: Record<string, unknown>[]; securityContext: Doc } };
      };
      expect(spec.template.spec.securityContext.runAsNonRoot, name).toBe(true);
      const [c] = spec.template.spec.containers;
      expect(c!.readinessProbe, name).toBeDefined();
      expect(c!.livenessProbe, name).toBeDefined();
      expect((c!.resources as { requests: Doc }).requests, name).toMatchObject({
        cpu: expect.anything(),
        memory: expect.anything(),
      });
      expect(c!.envFrom, name).toEqual([
        { configMapRef: { name: 'svc-config' } },
        { secretRef: { name: 'svc-secrets' } },
      ]);
      // One role a Deployment, named after it: each scales and fails on its own.
      const roles = rolesOf(c!.args);
      expect(roles, name).toHaveLength(1);
      expect(ROLE_NAMES, `${name} role ${roles[0]}`).toContain(roles[0]);
      expect(name).toBe(`svc-${roles[0]}`);
      served.push(roles[0]!);
    }
    expect(served.sort()).toEqual([...ROLE_NAMES].sort());
    const target = (d: Doc) => JSON.stringify(d.spec);
    expect(kinds('PodDisruptionBudget').map(target).join()).toContain('gateway');
    expect(kinds('HorizontalPodAutoscaler').map(target).join()).toContain('svc-gateway');
  });

  it('the image: multi-stage, production dependencies only, a non-root user, a health check', async () => {
    const dockerfile = await readFile(join(DEPLOY, 'Dockerfile'), 'utf8');
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
    expect(dockerfile).toMatch(/^COPY --from=build \/src\/dist /m);
  });
});
