import { BlockList, isIP } from 'node:net';

/**
 * Where a tenant may send the gateway (SPEC 4.7, 5). Tenant-set upstream origins (a connection's
 * base_url, a deployment host's resource and domain, a project endpoint) may reach the public
 * internet only: not this machine, not a private network, not a link-local or cloud metadata
 * address. Operator lanes keep SPEC 4.7's loopback rule. The check runs on the address actually
 * dialled (every address a name resolves to), so a name cannot be rebound around it.
 */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'unspecified'
  | 'private'
  | 'link-local'
  | 'shared'
  | 'multicast'
  | 'reserved';

const ranges = (entries: [AddressClass, string, number, 'ipv4' | 'ipv6'][]) =>
  entries.map(([cls, net, prefix, family]) => {
    const list = new BlockList();
    list.addSubnet(net, prefix, family);
    return { cls, family, list };
  });

// IANA special-purpose registries (RFC 6890 and successors): everything a tenant has no business
// reaching from inside the operator's network.
const RANGES = ranges([
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['shared', '100.64.0.0', 10, 'ipv4'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['reserved', '192.0.0.0', 24, 'ipv4'],
  ['reserved', '192.0.2.0', 24, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['reserved', '198.18.0.0', 15, 'ipv4'],
  ['reserved', '198.51.100.0', 24, 'ipv4'],
  ['reserved', '203.0.113.0', 24, 'ipv4'],
  ['multicast', '224.0.0.0', 4, 'ipv4'],
  ['reserved', '240.0.0.0', 4, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  // Deprecated forms that carry an IPv4 address inside (IPv4-compatible ::a.b.c.d, 6to4, Teredo):
  // never a legitimate upstream, and a way to spell 127.0.0.1 past a check of the mapped form.
  ['reserved', '::', 96, 'ipv6'],
  ['reserved', '2002::', 16, 'ipv6'],
  ['reserved', '2001::', 32, 'ipv6'],
  ['reserved', '64:ff9b:1::', 48, 'ipv6'],
  ['reserved', '100::', 64, 'ipv6'],
  ['reserved', '2001:db8::', 32, 'ipv6'],
  ['private', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['multicast', 'ff00::', 8, 'ipv6'],
]);

/** The IPv4 address an IPv6 address stands for (IPv4-mapped ::ffff:a.b.c.d, or NAT64 64:ff9b::/96). */
const embeddedIpv4 = (address: string): string | null => {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return null;
  const hi = Number.parseInt(hex[1]!, 16);
  const lo = Number.parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
};

/** The class of one IP address (v4 or v6, without brackets); anything unparsable is reserved. */
export const classifyAddress = (address: string): AddressClass => {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'reserved';
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4) return classifyAddress(v4);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const r of RANGES) if (r.family === type && r.list.check(bare, type)) return r.cls;
  return 'public';
};

/** Names that only ever mean this machine or a cloud's metadata service, refused before any lookup. */
const INTERNAL_NAMES = /^(?:localhost|.*\.localhost|metadata|metadata\.google\.internal|.*\.internal)\.?$/i;

/** Why a tenant destination host is refused as it is written, or null when only a lookup can tell. */
export const refusedHost = (hostname: string): string | null => {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const cls = classifyAddress(host);
    return cls === 'public' ? null : `${hostname} is a ${cls} address`;
  }
  if (INTERNAL_NAMES.test(host)) return `${hostname} names an internal host`;
  return null;
};

/** Why a resolved address is refused for a tenant destination, or null when it is public. */
export const refusedAddress = (address: string): string | null => {
  const cls = classifyAddress(address);
  return cls === 'public' ? null : `resolves to a ${cls} address`;
};
