import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
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
    await put(join(from, 'spool'), 'requests-000000000002.ndjson', 'b\nc\n');
    await put(join(from, 'spool'), 'requests-000000000002.ndjson.acked', '1');
    // A checkpoint whose segment is gone stays with no segment: numbering goes past it.
    await put(join(dataDir, 'spool'), 'requests-000000000008.ndjson.acked', '5');
    await put(join(from, 'spool'), 'requests-rejected.ndjson', 'rejected there\n');
    await put(join(dataDir, 'spool'), 'requests-000000000007.ndjson', 'already here\n');
    await put(join(dataDir, 'spool'), 'requests-rejected.ndjson', 'rejected here\n');

    expect(mergeRecordDirs(from, dataDir)).toEqual({ merged: { journals: 1, spoolSegments: 2 } });
    expect(await readdir(join(dataDir, 'journal'))).toEqual(['requests-999999999-1-000001.ndjson']);
    expect((await readdir(join(dataDir, 'spool'))).sort()).toEqual([
      'requests-000000000007.ndjson',
      'requests-000000000008.ndjson.acked',
      'requests-000000000009.ndjson',
      'requests-000000000010.ndjson',
      'requests-000000000010.ndjson.acked',
      'requests-rejected.ndjson',
    ]);
    expect(await readFile(join(dataDir, 'spool', 'requests-000000000009.ndjson'), 'utf8')).toBe('a\n');
    expect(await readFile(join(dataDir, 'spool', 'requests-000000000010.ndjson'), 'utf8')).toBe('b\nc\n');
    // The checkpoint went with its segment: the line delivered before is not sent again.
    expect(await readFile(join(dataDir, 'spool', 'requests-000000000010.ndjson.acked'), 'utf8')).toBe('1');
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

  it('leaves a slot alone while a live process writes where its records would go', async () => {
    const from = join(dataDir, 'workers', '1');
    const parent = process.ppid;
    await put(
      join(dataDir, 'journal'),
      `requests-${parent}-${startTicksOf(parent) ?? 0}-000001.ndjson`,
      'x\n',
    );
    await put(join(from, 'spool'), 'requests-000000000001.ndjson', 'a\n');
    expect(mergeRecordDirs(from, dataDir)).toEqual({ inUse: 1 });
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

  it('passes over what is not a slot directory: a file, a name with a leading zero, a link to the target', async () => {
    await put(join(dataDir, 'workers'), '3', 'a file');
    await put(join(dataDir, 'workers', '07', 'spool'), 'requests-000000000001.ndjson', 'x\n');
    await mkdir(join(dataDir, 'spool'), { recursive: true });
    await symlink(dataDir, join(dataDir, 'workers', '4'));
    retireSlots(dataDir, 1, pino({ level: 'silent' }));
    expect((await readdir(join(dataDir, 'workers'))).sort()).toEqual(['07', '3', '4']);
    expect(await readdir(join(dataDir, 'spool'))).toEqual([]);
  });
});
