import { describe, expect, it } from 'vitest';
import { ServiceError } from '../lib/errors.js';
import { activityManifest, assertActivityScope, toManifestCsv } from './activity.js';

describe('legacy manifest CSV', () => {
  const manifest = (dimensionKeys: string[]) =>
    activityManifest({
      panel: 'usage_daily',
      orgId: 'org_1',
      from: new Date('2025-03-01T00:00:00Z'),
      to: new Date('2025-03-02T00:00:00Z'),
      dimensionKeys,
      generatedAt: new Date('2026-11-22T07:00:00Z'),
      rows: 1,
    });

  it('puts the manifest lines before the CSV header, in a fixed order', () => {
    const csv = toManifestCsv(manifest(['team', 'env']), {
      columns: ['usage_date_utc', 'model'],
      rows: [{ usage_date_utc: '2025-03-01', model: 'a,b' }],
    });
    expect(csv).toBe(
      '# svc-manifest v1\r\n# panel=usage_daily\r\n# scope=org\r\n# org_id=org_1\r\n' +
        '# from=2025-03-01T00:00:00.000Z\r\n# to=2025-03-02T00:00:00.000Z\r\n# dimension=team,env\r\n' +
        '# generated_at=2026-11-22T07:00:00.000Z\r\n# rows=1\r\nusage_date_utc,model\r\n2025-03-01,"a,b"\r\n',
    );
  });

  it('never lets a value break a manifest line', () => {
    const csv = toManifestCsv(manifest(['a\r\nb%']), { columns: ['x'], rows: [] });
    expect(csv).toContain('# dimension=a%0D%0Ab%25\r\n');
    expect(csv.split('\r\n').filter((l) => !l.startsWith('#'))).toEqual(['x', '']);
  });
});

describe('activity scope', () => {
  const member = { kind: 'session', userId: 'u', workspaces: new Set(['ws']) } as const;
  const refusal = (q: Record<string, string>, caller: Parameters<typeof assertActivityScope>[2] = member) => {
    try {
      assertActivityScope('usage_breakdown', q, caller);
      return null;
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      return { code: err.code, param: err.param };
    }
  };

  it('takes one org and refuses anything wider or narrower, by name', () => {
    expect(refusal({ org_id: 'o' })).toBeNull();
    expect(refusal({ org_id: 'o', project_id: 'p' })).toEqual({ code: 'bad_request', param: 'project_id' });
    expect(refusal({ org_id: 'o', api_key_id: 'k' })).toEqual({ code: 'bad_request', param: 'api_key_id' });
    expect(refusal({ workspace_id: 'w' })).toEqual({ code: 'bad_request', param: 'workspace_id' });
    expect(refusal({ project_id: '', org_id: 'o' })).toEqual({ code: 'bad_request', param: 'project_id' });
    expect(refusal({})).toEqual({ code: 'bad_request', param: 'org_id' });
  });

  it('refuses a developer token bound to one project', () => {
    expect(refusal({ org_id: 'o' }, { kind: 'developer', userId: 'u', orgId: 'o', projectId: 'p' })).toEqual({
      code: 'forbidden',
      param: 'project_id',
    });
    expect(
      refusal({ org_id: 'o' }, { kind: 'developer', userId: 'u', orgId: 'o', projectId: null }),
    ).toBeNull();
  });
});
