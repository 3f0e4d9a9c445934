import { describe, expect, it } from 'vitest';
import { chooseEntry } from '../../bin/entry.js';

// Bin/svc.js runs the compiled dist/ when it exists and is not older than the
// sources, otherwise the TypeScript sources.
describe('chooseEntry', () => {
  const t = 1_800_000_000_000;

  it.each([
    ['no build', { distMtime: null, newestSourceMtime: t }, 'source'],
    ['a build older than a source', { distMtime: t - 1, newestSourceMtime: t }, 'source'],
    ['a build newer than every source', { distMtime: t + 1, newestSourceMtime: t }, 'dist'],
    ['a build as old as the newest source (npm tarballs)', { distMtime: t, newestSourceMtime: t }, 'dist'],
    [
      'a build and no sources (an image of dist/ only)',
      { distMtime: t, newestSourceMtime: -Infinity },
      'dist',
    ],
    [
      'SVC_FROM_SOURCE=1 beside a fresh build',
      { distMtime: t + 1, newestSourceMtime: t, fromSource: true },
      'source',
    ],
  ] as const)('%s: %s', (_name, input, expected) => {
    expect(chooseEntry(input)).toBe(expected);
  });
});
