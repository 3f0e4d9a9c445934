import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, test } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../../scripts/proto-types.mjs', import.meta.url));
const COMMITTED = fileURLToPath(new URL('./generated/', import.meta.url));

const files = (dir: string, prefix = ''): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? files(join(dir, entry.name), `${prefix}${entry.name}/`)
      : [`${prefix}${entry.name}`],
  );

// A Windows checkout may turn the committed files' line ends into CRLF; the types are the same.
const read = (dir: string, file: string): string | null => {
  try {
    return readFileSync(join(dir, ...file.split('/')), 'utf8').replace(/\r\n/g, '\n');
  } catch {
    return null;
  }
};

const fresh = mkdtempSync(join(tmpdir(), 'proto-types-check-'));
afterAll(() => rmSync(fresh, { recursive: true, force: true }));

// The edges type their requests and replies from src/edges/grpc/generated; a proto changed without
// `npm run proto:types` leaves those types behind the wire they describe.
test('the committed gRPC types are what npm run proto:types generates from proto/', () => {
  const run = spawnSync(process.execPath, [SCRIPT, fresh], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  const all = [...new Set([...files(fresh), ...files(COMMITTED)])].sort();
  const stale = all.filter((file) => read(fresh, file) !== read(COMMITTED, file));
  expect(stale, 'these files differ from the protos: run `npm run proto:types`').toEqual([]);
});
