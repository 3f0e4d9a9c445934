import { describe, expect, it } from 'vitest';
import { classifyAddress, refusedAddress, refusedHost } from './destinations.js';

describe('tenant destinations (SPEC 4.7, 5)', () => {
  it('classifies the addresses a tenant must not reach', () => {
    const cases: [string, string][] = [
      ['127.0.0.1', 'loopback'],
      ['127.8.9.10', 'loopback'],
      ['0.0.0.0', 'unspecified'],
      ['10.0.0.1', 'private'],
      ['172.16.5.4', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'shared'],
      ['169.254.169.254', 'link-local'],
      ['224.0.0.1', 'multicast'],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['fd00::1', 'private'],
      ['fd00:ec2::254', 'private'],
      ['fe80::1%eth0', 'link-local'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['[::ffff:169.254.169.254]', 'link-local'],
      ['64:ff9b::a00:1', 'private'],
      ['::127.0.0.1', 'reserved'],
      ['[::7f00:1]', 'reserved'],
      ['2002:7f00:1::', 'reserved'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
      ['not an address', 'reserved'],
    ];
    for (const [address, cls] of cases) expect([address, classifyAddress(address)]).toEqual([address, cls]);
  });

  it('lets public addresses through', () => {
    for (const address of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700::1111', '::ffff:8.8.8.8'])
      expect([address, classifyAddress(address)]).toEqual([address, 'public']);
    expect(refusedAddress('93.184.216.34')).toBeNull();
  });

  it('refuses internal hosts as written: literals, localhost and metadata names', () => {
    expect(refusedHost('169.254.169.254')).toContain('link-local');
    expect(refusedHost('[::1]')).toContain('loopback');
    expect(refusedHost('10.0.0.1')).toContain('private');
    expect(refusedHost('localhost')).toContain('internal');
    expect(refusedHost('metadata.google.internal')).toContain('internal');
    expect(refusedHost('api.openai.com')).toBeNull();
    expect(refusedHost('my-resource.openai.azure.com')).toBeNull();
  });
});
