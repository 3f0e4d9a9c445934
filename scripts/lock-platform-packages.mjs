/**
 * Writes the package-lock.json entries of the platform packages that this workplace's registry
 * mirror does not serve, so that one lock file installs on every platform the dependencies ship for.
 * `npm install` against that mirror drops an optional dependency it cannot
 * fetch; run `node scripts/lock-platform-packages.mjs` after any `npm install` that rewrites the
 * lock file. On the public registry npm writes these entries itself and this script changes nothing.
 *
 * An entry written here has no integrity (the mirror cannot supply it): npm accepts that, and on the
 * platform that installs the package it fetches the tarball by name and version.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The os/cpu/libc each package declares in its own package.json, by consumer. */
const PLATFORM_PACKAGES = {
  chdb: {
    '@chdb/lib-darwin-arm64': { os: ['darwin'], cpu: ['arm64'] },
    '@chdb/lib-darwin-x64': { os: ['darwin'], cpu: ['x64'] },
    '@chdb/lib-linux-arm64-gnu': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
    '@chdb/lib-linux-x64-gnu': { os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
  },
  '@biomejs/biome': {
    '@biomejs/cli-android-arm64': { os: ['android'], cpu: ['arm64'] },
    '@biomejs/cli-android-x64': { os: ['android'], cpu: ['x64'] },
    '@biomejs/cli-darwin-arm64': { os: ['darwin'], cpu: ['arm64'] },
    '@biomejs/cli-darwin-x64': { os: ['darwin'], cpu: ['x64'] },
    '@biomejs/cli-linux-arm64': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
    '@biomejs/cli-linux-arm64-musl': { os: ['linux'], cpu: ['arm64'], libc: ['musl'] },
    '@biomejs/cli-linux-x64': { os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
    '@biomejs/cli-linux-x64-musl': { os: ['linux'], cpu: ['x64'], libc: ['musl'] },
    '@biomejs/cli-win32-arm64': { os: ['win32'], cpu: ['arm64'] },
    '@biomejs/cli-win32-x64': { os: ['win32'], cpu: ['x64'] },
  },
};

const EXACT_VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;
/** Lock metadata that belongs to one tarball and so cannot be copied to another package's entry. */
const TARBALL_FIELDS = ['resolved', 'integrity', 'os', 'cpu', 'libc'];

/** The entry of `name` modelled on a sibling the mirror does serve (same release, same metadata). */
const entryFor = (packages, consumer, name, platform) => {
  const declared = packages[`node_modules/${consumer}`].optionalDependencies?.[name];
  if (!declared) return null;
  if (!EXACT_VERSION.test(declared))
    throw new Error(`${consumer} asks for ${name}@${declared}; only an exact version can be locked here`);
  const sibling = Object.keys(PLATFORM_PACKAGES[consumer])
    .map((other) => packages[`node_modules/${other}`])
    .find((entry) => entry?.version === declared && entry.integrity);
  if (!sibling) throw new Error(`no fetched sibling of ${name}@${declared} in the lock to model it on`);
  const entry = { ...sibling, version: declared, optional: true };
  for (const field of TARBALL_FIELDS) delete entry[field];
  return Object.assign(entry, platform);
};

/**
 * An entry keyed as npm writes one (version first, then plain fields by name, then objects), so a
 * later `npm install` keeps it as it is; the lock's other entries are left untouched.
 */
const npmOrder = (entry) => {
  const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
  const keys = Object.keys(entry).filter((key) => key !== 'version');
  const plain = keys.filter((key) => !isObject(entry[key])).sort((a, b) => a.localeCompare(b, 'en'));
  const objects = keys.filter((key) => isObject(entry[key]));
  return Object.fromEntries(['version', ...plain, ...objects].map((key) => [key, entry[key]]));
};

const lockPath = join(dirname(fileURLToPath(import.meta.url)), '..', 'package-lock.json');
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const added = [];
for (const [consumer, platforms] of Object.entries(PLATFORM_PACKAGES)) {
  if (!lock.packages[`node_modules/${consumer}`]) continue;
  for (const [name, platform] of Object.entries(platforms)) {
    if (lock.packages[`node_modules/${name}`]) continue;
    const entry = entryFor(lock.packages, consumer, name, platform);
    if (!entry) continue;
    lock.packages[`node_modules/${name}`] = npmOrder(entry);
    added.push(`${name}@${entry.version}`);
  }
}
if (added.length > 0) {
  lock.packages = Object.fromEntries(
    Object.entries(lock.packages).sort(([a], [b]) => a.localeCompare(b, 'en')),
  );
  writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
}
console.log(
  added.length > 0 ? `added to package-lock.json: ${added.join(', ')}` : 'package-lock.json: complete',
);
