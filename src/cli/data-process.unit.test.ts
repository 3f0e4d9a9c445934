import { describe, expect, it } from 'vitest';
import { ROLE_NAMES } from '../roles/role.js';
import { backgroundElsewhere, splitRoles } from './data-process.js';

// Which roles `svc serve` hands to its data process (ARCHITECTURE.md roles; SPEC 6 ingest).
describe('splitRoles', () => {
  it('every role: ingest and the projector go to the data process, the rest stay', () => {
    const { here, child } = splitRoles([...ROLE_NAMES], 'auto');
    expect(child).toEqual(['ingest', 'projector', 'audit']);
    expect(here).toContain('gateway');
    expect(here).toContain('query');
    expect(here).not.toContain('ingest');
    expect(new Set([...here, ...child])).toEqual(new Set(ROLE_NAMES));
  });

  it('audit is split: its routes are served here, its consumer and sealer run in the data process', () => {
    const split = splitRoles(['gateway', 'ingest', 'audit'], 'auto');
    expect(split).toEqual({ here: ['gateway', 'audit'], child: ['ingest', 'audit'] });
    expect(backgroundElsewhere(split)).toEqual(new Set(['audit']));
  });

  it('without a data process audit does all its work where it is served', () => {
    const split = splitRoles(['gateway', 'audit'], 'auto');
    expect(split).toEqual({ here: ['gateway', 'audit'], child: [] });
    expect(backgroundElsewhere(split).size).toBe(0);
    expect(backgroundElsewhere(splitRoles(['gateway', 'ingest', 'audit'], 'inline')).size).toBe(0);
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
