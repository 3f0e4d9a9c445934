import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { slotDir, workerCount, workerRoles } from './workers.js';

describe('svc serve --workers (issue 26)', () => {
  it('runs a gateway alone in one process per core by default, anything else in one', () => {
    expect(workerCount('auto', undefined, ['gateway'])).toBe(availableParallelism());
    expect(workerCount('auto', undefined, ['gateway', 'query'])).toBe(1);
    expect(workerCount('auto', undefined, ['query'])).toBe(1);
  });

  it('takes SVC_SERVE_WORKERS, and the flag over it', () => {
    expect(workerCount(3, undefined, ['gateway', 'auth'])).toBe(3);
    expect(workerCount(3, '1', ['gateway'])).toBe(1);
    expect(workerCount(1, 'auto', ['gateway'])).toBe(availableParallelism());
  });

  it('refuses a flag that is not a whole number from 1 to 256', () => {
    for (const bad of ['0', '-1', '1.5', 'two', '257', ''])
      expect(() => workerCount('auto', bad, ['gateway'])).toThrow(/--workers must be a whole number/);
  });

  it('keeps ingest and the projector in the one data process, the rest in the workers', () => {
    expect(workerRoles(['gateway', 'ingest', 'query', 'projector'])).toEqual({
      http: ['gateway', 'query'],
      data: ['ingest', 'projector'],
    });
  });

  it('gives slot 0 the data dir itself and every other slot a directory of its own', () => {
    expect(slotDir('/d', 0)).toBe('/d');
    expect(slotDir('/d', 2)).toBe('/d/workers/2');
  });
});
