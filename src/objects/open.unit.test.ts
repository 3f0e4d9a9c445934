import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { FsObjectStore } from './fs-store.js';
import { openObjectStore } from './open.js';
import { S3ObjectStore } from './s3-store.js';

const S3_ENV = {
  SVC_OBJECT_STORE: 's3',
  SVC_S3_ENDPOINT: 'https://s3.eu-west-1.example.com',
  SVC_S3_BUCKET: 'svc-objects',
  SVC_S3_REGION: 'eu-west-1',
  SVC_S3_ACCESS_KEY_ID: 'AKIDEXAMPLE',
  SVC_S3_SECRET_ACCESS_KEY: 'secret-value-not-in-messages',
};

describe('openObjectStore', () => {
  it('opens the filesystem store under <data dir>/objects by default', () => {
    const store = openObjectStore(loadConfig({}), '/var/lib/svc');
    expect(store).toBeInstanceOf(FsObjectStore);
    expect(store.adapter).toBe('fs');
    expect((store as FsObjectStore).root).toBe(join('/var/lib/svc', 'objects'));
  });

  it('opens the S3 store from the SVC_S3_* variables', async () => {
    const store = openObjectStore(loadConfig({ ...S3_ENV, SVC_S3_PREFIX: 'svc/prod' }), '/unused');
    expect(store).toBeInstanceOf(S3ObjectStore);
    expect(store).toMatchObject({ adapter: 's3', bucket: 'svc-objects', region: 'eu-west-1' });
    // Path addressing, the prefix before the organization, the region in the credential scope.
    const signed = await store.signedGetUrl!('org_1', 'traces/t/a', 60);
    expect(signed.url).toMatch(
      /^https:\/\/s3\.eu-west-1\.example\.com\/svc-objects\/svc\/prod\/org_1\/traces\/t\/a\?/,
    );
    expect(decodeURIComponent(signed.url)).toContain('AKIDEXAMPLE/');
    expect(decodeURIComponent(signed.url)).toContain('/eu-west-1/s3/aws4_request');

    const virtual = openObjectStore(loadConfig({ ...S3_ENV, SVC_S3_ADDRESSING: 'virtual' }), '/unused');
    expect((await virtual.signedGetUrl!('org_1', 'k', 60)).url).toMatch(
      /^https:\/\/svc-objects\.s3\.eu-west-1\.example\.com\/org_1\/k\?/,
    );
  });

  it('names every missing variable of an S3 store, and no value', () => {
    expect(() => openObjectStore(loadConfig({ SVC_OBJECT_STORE: 's3' }), '/d')).toThrow(
      'SVC_OBJECT_STORE=s3 needs SVC_S3_ENDPOINT, SVC_S3_BUCKET, SVC_S3_ACCESS_KEY_ID, SVC_S3_SECRET_ACCESS_KEY',
    );
    for (const name of [
      'SVC_S3_ENDPOINT',
      'SVC_S3_BUCKET',
      'SVC_S3_ACCESS_KEY_ID',
      'SVC_S3_SECRET_ACCESS_KEY',
    ]) {
      const err = (() => {
        try {
          openObjectStore(loadConfig({ ...S3_ENV, [name]: ' ' }), '/d');
        } catch (e) {
          return e as Error;
        }
        return null;
      })();
      expect(err?.message, name).toBe(`SVC_OBJECT_STORE=s3 needs ${name} (unset or empty)`);
      expect(err?.message).not.toContain(S3_ENV.SVC_S3_SECRET_ACCESS_KEY);
    }
  });
});
