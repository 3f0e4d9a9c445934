import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { cgroupCpuQuota, slotDir, usableCores, workerCount, workerRoles } from './workers.js';

describe('svc serve --workers (issue 26)', () => {
  it('runs a gateway alone in one process per usable core by default, anything else in one', () => {
    expect(workerCount('auto', undefined, ['gateway'])).toBe(usableCores());
    expect(usableCores()).toBeLessThanOrEqual(availableParallelism());
    expect(workerCount('auto', undefined, ['gateway', 'query'])).toBe(1);
    expect(workerCount('auto', undefined, ['query'])).toBe(1);
  });

  it('takes SVC_SERVE_WORKERS, and the flag over it', () => {
    expect(workerCount(3, undefined, ['gateway', 'auth'])).toBe(3);
    expect(workerCount(3, '1', ['gateway'])).toBe(1);
    expect(workerCount(1, 'auto', ['gateway'])).toBe(usableCores());
  });

  it('refuses a flag that is not a whole number from 1 to 256', () => {
    for (const bad of ['0', '-1', '1.5', 'two', '257', '', '1e1', '0x2', ' 2'])
      expect(() => workerCount('auto', bad, ['gateway'])).toThrow(/--workers must be a whole number/);
  });

  it("counts a container's CPU limit, not the node's cores (cgroup v2 and v1)", () => {
    const files = (entries: Record<string, string>) => (path: string) => entries[path] ?? null;
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeNull();
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': '250000 100000\n' }))).toBe(2.5);
    expect(
      cgroupCpuQuota(
        files({
          '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '100000',
          '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
        }),
      ),
    ).toBe(1);
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1' }))).toBeNull();
    expect(usableCores(files({ '/sys/fs/cgroup/cpu.max': '50000 100000' }))).toBe(1);
    expect(usableCores(files({ '/sys/fs/cgroup/cpu.max': '100000000 100000' }))).toBe(availableParallelism());
  });

  it('keeps ingest and the projector in the one data process, the rest in the workers', () => {
    expect(workerRoles(['gateway', 'ingest', 'query', 'projector'])).toEqual({
      http: ['gateway', 'query'],
      data: ['ingest', 'projector'],
    });
    // audit is served by the workers and consumed and sealed in the data process.
    expect(workerRoles(['gateway', 'ingest', 'audit'])).toEqual({
      http: ['gateway', 'audit'],
      data: ['ingest', 'audit'],
    });
    expect(workerRoles(['gateway', 'audit'])).toEqual({ http: ['gateway', 'audit'], data: [] });
  });

  it('gives slot 0 the data dir itself and every other slot a directory of its own', () => {
    expect(slotDir('/d', 0)).toBe('/d');
    expect(slotDir('/d', 2)).toBe('/d/workers/2');
  });
});
