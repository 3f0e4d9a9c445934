import { describe, expect, it } from 'vitest';
import { ROLE_NAMES } from '../roles/role.js';
import { splitRoles } from './data-process.js';

// Which roles `svc serve` hands to its data process (ARCHITECTURE.md roles; SPEC 6 ingest).
describe('splitRoles', () => {
  it('every role: ingest and the projector go to the data process, the rest stay', () => {
    const { here, child } = splitRoles([...ROLE_NAMES], 'auto');
    expect(child).toEqual(['ingest', 'projector']);
    expect(here).toContain('gateway');
    expect(here).toContain('query');
    expect(here).not.toContain('ingest');
    expect([...here, ...child].sort()).toEqual([...ROLE_NAMES].sort());
  });

  it('no gateway, no data process: a process of data roles is already apart from the gateway', () => {
    expect(splitRoles(['ingest', 'query'], 'auto')).toEqual({ here: ['ingest', 'query'], child: [] });
  });

  it('a gateway without ingest or projector has nothing to hand over', () => {
    expect(splitRoles(['gateway', 'query'], 'auto')).toEqual({ here: ['gateway', 'query'], child: [] });
  });

  it('SVC_SERVE_DATA_PROCESS=inline keeps every role in the one process', () => {
    expect(splitRoles(['gateway', 'ingest'], 'inline')).toEqual({ here: ['gateway', 'ingest'], child: [] });
  });
});
