import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROLE_NAMES } from '../../roles/role.js';
import { LEAN_HEAP_FLAGS, leanHeap } from './serve.js';

// RSS under 150 MB: a gateway-only process bounds its heap growth; a process that also
// ingests keeps V8's heuristics under `auto`, where the bound cost throughput.
describe('SVC_HEAP', () => {
  it('is lean for a gateway under auto, and not once a role holding batches runs', () => {
    expect(leanHeap('auto', ['gateway'])).toBe(true);
    expect(leanHeap('auto', ['gateway', 'control-plane', 'projector'])).toBe(true);
    expect(leanHeap('auto', ['gateway', 'ingest'])).toBe(false);
    // The serving process of `npm start`: its ingest runs in the data process; trace-ingest holds one
    // export per request, and audit is not built yet (it runs nothing), so neither counts.
    const serving = ROLE_NAMES.filter((r) => r !== 'ingest' && r !== 'projector');
    expect(leanHeap('auto', serving)).toBe(true);
    expect(leanHeap('auto', [...ROLE_NAMES])).toBe(false);
  });

  it('obeys lean and v8 whatever the roles', () => {
    expect(leanHeap('lean', ['ingest'])).toBe(true);
    expect(leanHeap('v8', ['gateway'])).toBe(false);
  });

  // setFlagsFromString only prints a warning for a flag V8 no longer knows: a Node upgrade that
  // renames one would silently give the old RSS back.
  it('sets only flags this V8 knows', () => {
    const known = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    for (const flag of LEAN_HEAP_FLAGS) expect(known).toContain(`  ${flag.split('=')[0]} (`);
  });
});
