import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { retireSlots } from '../../cli/workers.js';
import { startTicksOf } from './journal.js';
import { mergeRecordDirs } from './merge.js';

// Issue 26: a worker slot that a smaller `svc serve --workers` no longer runs hands its journals
// and spool to a slot that runs, whose gateway adopts and drains them; never while a live process
// writes there.

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-merge-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const put = async (dir: string, name: string, text: string) => {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, name), text);
};

describe('mergeRecordDirs', () => {
  it('moves dead journals and renumbers spool segments after the target ones, keeping rejected lines', async () => {
    const from = join(dataDir, 'workers', '3');
    await put(join(from, 'journal'), 'requests-999999999-1-000001.ndjson', 'journal of a dead worker\n');
    await put(join(from, 'spool'), 'requests-000000000001.ndjson', 'a\n');
    await put(join(from, 'spool'), 'requests-000000000002.ndjson', 'b\n');
    await put(join(from, 'spool'), 'requests-rejected.ndjson', 'rejected there\n');
    await put(join(dataDir, 'spool'), 'requests-000000000007.ndjson', 'already here\n');
    await put(join(dataDir, 'spool'), 'requests-rejected.ndjson', 'rejected here\n');

    expect(mergeRecordDirs(from, dataDir)).toEqual({ merged: { journals: 1, spoolSegments: 2 } });
    expect(await readdir(join(dataDir, 'journal'))).toEqual(['requests-999999999-1-000001.ndjson']);
    expect((await readdir(join(dataDir, 'spool'))).sort()).toEqual([
      'requests-000000000007.ndjson',
      'requests-000000000008.ndjson',
      'requests-000000000009.ndjson',
      'requests-rejected.ndjson',
    ]);
    expect(await readFile(join(dataDir, 'spool', 'requests-000000000008.ndjson'), 'utf8')).toBe('a\n');
    expect(await readFile(join(dataDir, 'spool', 'requests-000000000009.ndjson'), 'utf8')).toBe('b\n');
    expect(await readFile(join(dataDir, 'spool', 'requests-rejected.ndjson'), 'utf8')).toBe(
      'rejected here\nrejected there\n',
    );
    expect(await readdir(join(dataDir, 'workers'))).toEqual([]);
  });

  it('leaves a slot alone while a live process has a journal there', async () => {
    const from = join(dataDir, 'workers', '1');
    const parent = process.ppid;
    await put(join(from, 'journal'), `requests-${parent}-${startTicksOf(parent) ?? 0}-000001.ndjson`, 'x\n');
    await put(join(from, 'spool'), 'requests-000000000001.ndjson', 'a\n');
    expect(mergeRecordDirs(from, dataDir)).toEqual({ inUse: 1 });
    expect(await readdir(join(from, 'spool'))).toEqual(['requests-000000000001.ndjson']);
  });
});

describe('retireSlots', () => {
  it('gives each slot above the count to slot (i mod count), and leaves the running ones', async () => {
    for (const slot of ['1', '2', '3'])
      await put(join(dataDir, 'workers', slot, 'spool'), 'requests-000000000001.ndjson', `from ${slot}\n`);
    retireSlots(dataDir, 2, pino({ level: 'silent' }));
    expect(await readdir(join(dataDir, 'workers'))).toEqual(['1']);
    // Slot 2 went to slot 0 (the data dir), slot 3 to slot 1.
    expect(await readFile(join(dataDir, 'spool', 'requests-000000000001.ndjson'), 'utf8')).toBe('from 2\n');
    expect((await readdir(join(dataDir, 'workers', '1', 'spool'))).sort()).toEqual([
      'requests-000000000001.ndjson',
      'requests-000000000002.ndjson',
    ]);
    retireSlots(dataDir, 1, pino({ level: 'silent' }));
    expect(await readdir(join(dataDir, 'workers'))).toEqual([]);
    expect((await readdir(join(dataDir, 'spool'))).length).toBe(3);
  });
});
