import dns, { type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Agent, buildConnector } from 'undici';
import { classifyAddress, refusedAddress } from '../lib/destinations.js';

/**
 * Whose choice an upstream origin is (SPEC 4.7 origin resolution): the operator's (a lane's catalog
 * base_url, a platform key, the public API) or a tenant's (a connection's base_url, a deployment
 * host's resource and domain, a project endpoint). Operator origins keep SPEC 4.7's loopback rule;
 * tenant origins are checked on every address actually dialled.
 */
export type Destination = 'operator' | 'tenant';

/**
 * A tenant origin refused at dial time. The message the tenant sees is one fixed sentence: naming
 * the class of address would let a tenant probe what the operator's internal names resolve to.
 * `reason` (the class, for the operator's logs) never leaves the process.
 */
export class DestinationRefused extends Error {
  readonly code = 'SVC_DESTINATION_REFUSED';
  constructor(readonly reason: string) {
    super("upstream destination refused: the connection's origin is not an allowed destination");
    this.name = 'DestinationRefused';
  }
}

export interface DestinationPolicy {
  /** The operator lets tenant origins reach loopback and private addresses (tests, labs). */
  readonly allowPrivate: boolean;
  /** Is `address:port` one of this process's own listeners? */
  isSelf(address: string, port: number): boolean;
}

/** Why dialling `address:port` for a tenant is refused, or null. The gateway itself never is dialled. */
export const refusal = (policy: DestinationPolicy, address: string, port: number): string | null => {
  if (policy.isSelf(address, port)) return 'is this gateway itself';
  return policy.allowPrivate ? null : refusedAddress(address);
};

type Resolver = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

// Read at call time, so a test preload that maps a name (as /etc/hosts would) is honoured.
const systemResolver: Resolver = (hostname, options, callback) => dns.lookup(hostname, options, callback);

/**
 * A `lookup` for net.connect that resolves every address of a name and refuses the connection when
 * any of them is refused: the socket then dials only addresses this check has seen, so a name
 * cannot resolve to a public address when checked and to an internal one when dialled.
 */
export const guardedLookup =
  (policy: DestinationPolicy, port: number, resolve: Resolver = systemResolver): LookupFunction =>
  (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const first = addresses[0];
      if (!first) return callback(new DestinationRefused('resolves to no address'), '', 0);
      for (const a of addresses) {
        const why = refusal(policy, a.address, port);
        if (why !== null) return callback(new DestinationRefused(why), '', 0);
      }
      // net.connect asks for every address when it races them (autoSelectFamily), else for one.
      if (options.all) return callback(null, addresses);
      return callback(null, first.address, first.family);
    });
  };

type Connector = ReturnType<typeof buildConnector>;

/**
 * undici's connector with the check in front: a literal IP is checked here (net.connect does not
 * look one up), a name through the guarded lookup. One inner connector per port, because the
 * lookup must know the port to recognise this gateway's own listener.
 */
const guardedConnector = (
  policy: DestinationPolicy,
  options: buildConnector.BuildOptions = {},
): Connector => {
  const byPort = new Map<number, Connector>();
  return (opts, callback) => {
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0) {
      const why = refusal(policy, host, port);
      if (why !== null) {
        queueMicrotask(() => callback(new DestinationRefused(why), null));
        return;
      }
    }
    let connect = byPort.get(port);
    if (connect === undefined) {
      connect = buildConnector({ ...options, lookup: guardedLookup(policy, port) });
      byPort.set(port, connect);
    }
    connect(opts, callback);
  };
};

/** This process's listeners; one bound to 0.0.0.0 or :: answers on every local address. */
const listeners: { address: string; port: number }[] = [];

const localAddresses = (): Set<string> => {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(a.address);
  return out;
};

const sameAddress = (a: string, b: string): boolean =>
  a.replace(/^::ffff:/i, '').toLowerCase() === b.replace(/^::ffff:/i, '').toLowerCase();

const isOwnListener = (address: string, port: number): boolean =>
  listeners.some((l) => {
    if (l.port !== port) return false;
    const cls = classifyAddress(address);
    // On the listener's port, a loopback or unspecified address is taken as this gateway whatever
    // interface it listens on: refusing a loopback service that shares the port costs little,
    // dialling the gateway itself starts a loop.
    if (cls === 'loopback' || cls === 'unspecified') return true;
    if (classifyAddress(l.address) === 'unspecified')
      return localAddresses().has(address.replace(/^::ffff:/i, ''));
    return sameAddress(address, l.address);
  });

const settings = { allowPrivate: false, hop: null as string | null };

/** The policy of this process, as configured at start (SVC_TENANT_PRIVATE_DESTINATIONS). */
export const processPolicy: DestinationPolicy = {
  get allowPrivate() {
    return settings.allowPrivate;
  },
  isSelf: isOwnListener,
};

/**
 * Set once by the composition root: whether tenant origins may be private, and the hop mark every
 * upstream call carries (lib/hop.ts).
 */
export const configureUpstreams = (options: { allowPrivateDestinations: boolean; hop?: string | null }) => {
  settings.allowPrivate = options.allowPrivateDestinations;
  settings.hop = options.hop ?? null;
};

/** Records a listener of this process once it listens (its port is known only then). */
export const addOwnListener = (address: string, port: number): void => {
  listeners.push({ address, port });
};

/** The hop mark of this deployment, or null when the process did not configure one (CLI tools). */
export const outboundHop = (): string | null => settings.hop;

/** The pool options every upstream agent shares. */
export const AGENT_OPTIONS = {
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 600_000,
  connections: 256,
  pipelining: 1,
} as const;

/** A keep-alive pool whose every new connection passes the tenant check of `policy`. */
export const guardedAgent = (
  policy: DestinationPolicy,
  options: ConstructorParameters<typeof Agent>[0] = AGENT_OPTIONS,
): Agent => new Agent({ ...options, connect: guardedConnector(policy) });

/** Where an adapter took its origin from (SPEC 4.7 origin resolution, in order). */
export type OriginSource = 'connection' | 'lane' | 'derived' | 'default';

/**
 * A tenant connection's own fields (its base_url, or a host derived from its metadata) name a
 * tenant destination; a lane's catalog base_url, the public default, and anything reached with a
 * platform key are the operator's.
 */
export const destinationOf = (
  credentials: { funding: 'byok' | 'wallet' },
  source: OriginSource,
): Destination =>
  credentials.funding === 'byok' && (source === 'connection' || source === 'derived') ? 'tenant' : 'operator';

/**
 * The destination of an adapter whose origin is the connection's base_url when it has one, else
 * the lane's (the reference and messages-style wires).
 */
export const connectionOrLane = (credentials: { funding: 'byok' | 'wallet'; baseUrl: string | null }) =>
  destinationOf(credentials, credentials.baseUrl !== null ? 'connection' : 'lane');
