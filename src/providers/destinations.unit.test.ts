import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  configureUpstreams,
  type DestinationPolicy,
  DestinationRefused,
  destinationOf,
  guardedAgent,
  guardedLookup,
} from './destinations.js';
import { callUpstream } from './http.js';

// SPEC 4.7 keeps loopback HTTP for operators; a tenant's origin is checked on every address it
// resolves to, at the moment the socket dials, and never reaches this gateway's own listener.

const policy = (allowPrivate: boolean, self: [string, number][] = []): DestinationPolicy => ({
  allowPrivate,
  isSelf: (address, port) => self.some(([a, p]) => a === address && p === port),
});

/** A resolver that answers from a table, as a DNS server under someone else's control would. */
const table =
  (names: Record<string, string[]>) =>
  (
    hostname: string,
    _options: unknown,
    callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ) => {
    const list = names[hostname];
    if (!list) return callback(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }), []);
    callback(
      null,
      list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };

const lookupWith = (lookup: LookupFunction, hostname: string, all: boolean) =>
  new Promise<{ err: Error | null; address: unknown; family?: number }>((resolve) =>
    lookup(hostname, { all }, (err, address, family) => resolve({ err, address, family })),
  );

const names = table({
  'public.example': ['93.184.216.34'],
  'rebound.example': ['127.0.0.1'],
  'mixed.example': ['93.184.216.34', '169.254.169.254'],
  'private6.example': ['fd00::1'],
});

describe('guardedLookup', () => {
  it('passes a name whose every address is public, in the form net.connect asked for', async () => {
    const lookup = guardedLookup(policy(false), 443, names);
    expect(await lookupWith(lookup, 'public.example', false)).toEqual({
      err: null,
      address: '93.184.216.34',
      family: 4,
    });
    const all = await lookupWith(lookup, 'public.example', true);
    expect(all.address).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it('refuses a name that resolves to a loopback, link-local or private address', async () => {
    const lookup = guardedLookup(policy(false), 443, names);
    for (const [name, cls] of [
      ['rebound.example', 'loopback'],
      ['mixed.example', 'link-local'],
      ['private6.example', 'private'],
    ]) {
      const { err } = await lookupWith(lookup, name!, true);
      expect(err).toBeInstanceOf(DestinationRefused);
      // The class is the operator's to log; the tenant's message is one fixed sentence.
      expect((err as DestinationRefused).reason).toContain(`a ${cls} address`);
      expect(err?.message).not.toContain(name);
      expect(err?.message).not.toContain(cls!);
    }
  });

  it('passes internal addresses when the operator allows them, but never the gateway itself', async () => {
    const allowed = guardedLookup(policy(true, [['127.0.0.1', 8080]]), 9000, names);
    expect((await lookupWith(allowed, 'rebound.example', false)).err).toBeNull();
    const self = guardedLookup(policy(true, [['127.0.0.1', 8080]]), 8080, names);
    const { err } = await lookupWith(self, 'rebound.example', false);
    expect(err).toBeInstanceOf(DestinationRefused);
    expect((err as DestinationRefused).reason).toContain('this gateway itself');
  });

  it('hands resolution errors through unchanged', async () => {
    const { err } = await lookupWith(guardedLookup(policy(false), 443, names), 'nowhere.example', false);
    expect((err as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});

describe('a tenant pool dials only what the policy allows', () => {
  let server: Server;
  let port: number;
  const hits: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(String(req.headers['x-svc-hop'] ?? ''));
      req.resume();
      res.statusCode = 418;
      res.end('internal secret body');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    configureUpstreams({ allowPrivateDestinations: false, hop: null });
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const send = (host: string, p: DestinationPolicy) => {
    const agent = guardedAgent(p);
    return callUpstream({
      url: `http://${host}:${port}/v1/chat/completions`,
      headers: { 'content-type': 'application/json' },
      body: '{}',
      signal: new AbortController().signal,
      timeoutMs: 5_000,
      bodyTimeoutMs: 5_000,
      dispatcher: agent,
    }).finally(() => agent.close());
  };

  it('a literal loopback address and a name resolving to one are refused before any byte is sent', async () => {
    hits.length = 0;
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]']) {
      const result = await send(host, policy(false));
      expect(result.ok, host).toBe(false);
      if (result.ok) continue;
      // Not retried against the same origin, and nothing of an internal answer in the message.
      expect(result.failure).toMatchObject({ kind: 'UpstreamError', retryable: false, fallback: true });
      expect(result.failure.message).toBe(
        "upstream destination refused: the connection's origin is not an allowed destination",
      );
      expect(result.failure.message).not.toContain('secret');
    }
    expect(hits).toEqual([]);
  });

  it('allowed private destinations are reached, carrying the hop mark; the own listener is not', async () => {
    hits.length = 0;
    configureUpstreams({ allowPrivateDestinations: true, hop: 'mark-1' });
    const reached = await send('127.0.0.1', policy(true));
    expect(reached.ok).toBe(true);
    if (reached.ok) await reached.response.body.dump();
    expect(hits).toEqual(['mark-1']);
    const self = await send('127.0.0.1', policy(true, [['127.0.0.1', port]]));
    expect(self).toMatchObject({ ok: false, failure: { kind: 'UpstreamError', retryable: false } });
    expect(hits).toHaveLength(1);
  });
});

describe('destinationOf', () => {
  it("names the tenant's own fields a tenant destination, and everything else the operator's", () => {
    const byok = { funding: 'byok' as const };
    const wallet = { funding: 'wallet' as const };
    expect(destinationOf(byok, 'connection')).toBe('tenant');
    expect(destinationOf(byok, 'derived')).toBe('tenant');
    expect(destinationOf(byok, 'lane')).toBe('operator');
    expect(destinationOf(byok, 'default')).toBe('operator');
    expect(destinationOf(wallet, 'connection')).toBe('operator');
  });
});
