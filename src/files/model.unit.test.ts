import { describe, expect, it } from 'vitest';
import { ServiceError } from '../lib/errors.js';
import { parseListQuery } from './list-query.js';
import { fileIdTime, fileObject, newFileId } from './model.js';
import { checkFilename, UploadForm } from './upload-form.js';

describe('file ids', () => {
  it('carry their creation time to the millisecond and sort like it', () => {
    const times = [0, 1, 31, 32, 1_000, 1_700_000_000_000, 1_700_000_000_001, 2 ** 50 - 1];
    const ids = times.map((t) => newFileId(t));
    for (const [i, id] of ids.entries()) {
      expect(id).toMatch(/^file-[0-9a-z]{26}$/);
      expect(fileIdTime(id)?.getTime()).toBe(times[i]);
    }
    // Plain string order (what COLLATE "C" compares) is time order.
    expect([...ids].reverse().sort()).toEqual(ids);
    // Two ids of one millisecond differ.
    expect(newFileId(5)).not.toBe(newFileId(5));
  });

  it('anything else has no time', () => {
    for (const id of [
      '',
      'file-',
      'file-abc123',
      `file_${'0'.repeat(26)}`,
      `file-${'0'.repeat(25)}`,
      `file-${'0'.repeat(27)}`,
      `file-${'0'.repeat(25)}u`, // not in the alphabet
      `file-${'0'.repeat(25)}A`,
      ` file-${'0'.repeat(26)}`,
      `file-${'0'.repeat(26)}\n`,
    ])
      expect(fileIdTime(id), id).toBeNull();
  });

  it('render as the OpenAI file object, times in whole seconds', () => {
    expect(
      fileObject({
        id: 'file-x',
        orgId: 'org_1',
        projectId: 'prj_1',
        purpose: 'batch',
        filename: 'a.jsonl',
        contentType: 'application/jsonl',
        bytes: 12,
        blake3: 'b'.repeat(64),
        objectKey: 'files/prj_1/file-x',
        createdAt: new Date(1_700_000_000_999),
        expiresAt: new Date(1_700_003_600_999),
      }),
    ).toEqual({
      id: 'file-x',
      object: 'file',
      bytes: 12,
      created_at: 1_700_000_000,
      filename: 'a.jsonl',
      purpose: 'batch',
      status: 'processed',
      expires_at: 1_700_003_600,
      status_details: null,
    });
  });
});

const refusal = (fn: () => unknown): { param: string | null; message: string; status: number } => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    const e = err as ServiceError;
    return { param: e.param, message: e.message, status: e.status };
  }
  throw new Error('no refusal');
};

describe('list parameters', () => {
  it('default to every file, newest first, from the start', () => {
    expect(parseListQuery({})).toEqual({ purpose: null, limit: 10_000, order: 'desc', after: null });
    expect(parseListQuery(undefined)).toEqual(parseListQuery({}));
    const after = newFileId(1_700_000_000_123);
    expect(parseListQuery({ limit: '1', order: 'asc', purpose: 'batch', after, other: 'x' })).toEqual({
      purpose: 'batch',
      limit: 1,
      order: 'asc',
      after: { id: after, createdAt: new Date(1_700_000_000_123) },
    });
    expect(parseListQuery({ limit: '10000' }).limit).toBe(10_000);
    expect(parseListQuery({ purpose: 'fine-tune-results' }).purpose).toBe('fine-tune-results');
  });

  it('refuse bad values with a 400 naming the parameter', () => {
    for (const [query, param] of [
      [{ limit: '0' }, 'limit'],
      [{ limit: '10001' }, 'limit'],
      [{ limit: '-1' }, 'limit'],
      [{ limit: '1.0' }, 'limit'],
      [{ limit: '1e3' }, 'limit'],
      [{ limit: ' 5' }, 'limit'],
      [{ limit: '' }, 'limit'],
      [{ limit: '99999999999999999999' }, 'limit'],
      [{ limit: ['1', '2'] }, 'limit'],
      [{ order: 'DESC' }, 'order'],
      [{ order: '' }, 'order'],
      [{ purpose: 'Batch' }, 'purpose'],
      [{ purpose: '' }, 'purpose'],
      [{ after: 'file-abc' }, 'after'],
      [{ after: '' }, 'after'],
      [{ after: ['a', 'b'] }, 'after'],
    ] as const) {
      const r = refusal(() => parseListQuery(query));
      expect(r.status, JSON.stringify(query)).toBe(400);
      expect(r.param, JSON.stringify(query)).toBe(param);
    }
  });
});

describe('upload form fields', () => {
  const complete = (fields: [string, string][]) => {
    const form = new UploadForm();
    for (const [name, value] of fields) form.take(name, value);
    return form.complete();
  };

  it('purpose is required; expires_after is optional and needs both halves', () => {
    expect(complete([['purpose', 'vision']])).toEqual({ purpose: 'vision', expiresAfterSeconds: null });
    expect(
      complete([
        ['expires_after[seconds]', '2592000'],
        ['purpose', 'evals'],
        ['expires_after[anchor]', 'created_at'],
      ]),
    ).toEqual({ purpose: 'evals', expiresAfterSeconds: 2_592_000 });
    expect(refusal(() => complete([]))).toMatchObject({ param: 'purpose', status: 400 });
    expect(
      refusal(() =>
        complete([
          ['purpose', 'batch'],
          ['expires_after[seconds]', '3600'],
        ]),
      ),
    ).toMatchObject({ param: 'expires_after' });
  });

  it('refuses at once what is unknown, repeated or invalid, naming it', () => {
    for (const [name, value, param] of [
      ['purpose', 'assistants_output', 'purpose'],
      ['purpose', 'batch ', 'purpose'],
      ['expires_after[anchor]', 'now', 'expires_after[anchor]'],
      ['expires_after[seconds]', '3599', 'expires_after[seconds]'],
      ['expires_after[seconds]', '2592001', 'expires_after[seconds]'],
      ['expires_after[seconds]', '3600.5', 'expires_after[seconds]'],
      ['model', 'gpt-4o', 'model'],
      ['file', 'inline text', 'file'],
    ] as const) {
      const form = new UploadForm();
      expect(
        refusal(() => form.take(name, value)),
        `${name}=${value}`,
      ).toMatchObject({ param, status: 400 });
    }
    const form = new UploadForm();
    form.take('purpose', 'batch');
    expect(refusal(() => form.take('purpose', 'batch'))).toMatchObject({ param: 'purpose' });
  });

  it('filenames: present, not too long, no control characters', () => {
    expect(checkFilename('résumé 2024 (final).pdf')).toBe('résumé 2024 (final).pdf');
    for (const name of ['', 'a'.repeat(513), 'a\u0000b', 'line\nbreak', 'del\u007f'])
      expect(refusal(() => checkFilename(name))).toMatchObject({ param: 'file', status: 400 });
  });
});
