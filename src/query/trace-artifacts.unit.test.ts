import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../objects/fs-store.js';
import { S3ObjectStore } from '../objects/s3-store.js';
import { artifactUrlKey, checkArtifactSignature, objectArtifactUrl } from './trace-artifacts.js';

const KEY = artifactUrlKey(Buffer.alloc(32, 7));
const NAME = { orgId: 'org_1', traceId: 'abc123', artifactId: 'art_1' };
const NOW = new Date('2025-06-01T10:00:00Z');
const s3 = new S3ObjectStore({
  endpoint: 'https://s3.example.com',
  bucket: 'bkt',
  region: 'us-east-1',
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'secret-example',
});

const hmacChecked = (url: string) => {
  const q = new URL(url, 'http://x').searchParams;
  return checkArtifactSignature(
    KEY,
    NAME,
    q.get('expires') ?? undefined,
    q.get('signature') ?? undefined,
    NOW,
  );
};

describe('objectArtifactUrl', () => {
  it("hands out the gateway's HMAC content route when the store cannot presign", async () => {
    for (const objects of [null, new FsObjectStore('/nowhere')]) {
      const signed = await objectArtifactUrl(
        objects,
        KEY,
        NAME,
        { key: 'traces/t/a', compression: 'none' },
        NOW,
      );
      expect(signed.url).toMatch(/^\/api\/traces\/abc123\/artifacts\/art_1\/content\?org_id=org_1&/);
      expect(signed.expires_at).toBe('2025-06-01T10:05:00.000Z');
      expect(hmacChecked(signed.url)).toBe('ok');
    }
  });

  it("hands out the store's presigned URL of the org's object, as long as the route's", async () => {
    const before = Date.now();
    const signed = await objectArtifactUrl(s3, KEY, NAME, { key: 'traces/t/a', compression: '' }, NOW, 120);
    expect(signed.url).toMatch(/^https:\/\/s3\.example\.com\/bkt\/org_1\/traces\/t\/a\?.*X-Amz-Expires=120/);
    expect(Date.parse(signed.expires_at) - before).toBeGreaterThan(118_000);
    expect(Date.parse(signed.expires_at) - before).toBeLessThanOrEqual(121_000);
  });

  it('keeps the content route for a compressed object, and for a key the store refuses', async () => {
    for (const stored of [
      { key: 'traces/t/a', compression: 'gzip' },
      { key: 'traces/../other/a', compression: 'none' },
    ]) {
      const signed = await objectArtifactUrl(s3, KEY, NAME, stored, NOW);
      expect(signed.url, stored.key).toMatch(/^\/api\/traces\/abc123\/artifacts\/art_1\/content\?/);
      expect(hmacChecked(signed.url)).toBe('ok');
    }
  });
});
