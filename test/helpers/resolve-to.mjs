// Test-only preload for `svc serve` child processes (NODE_OPTIONS=--import <this file>): like a
// line of /etc/hosts, SVC_TEST_RESOLVE's `name=address` makes dns.lookup answer `address` for that
// name, so a test can stand for a DNS name under a tenant's control that resolves to an internal
// address (SPEC 4.7 tenant destinations are checked on the address dialled). Never loaded outside tests.
import dns from 'node:dns';

const rule = process.env.SVC_TEST_RESOLVE;
if (rule) {
  const m = /^([^=\s]+)=([^=\s]+)$/.exec(rule);
  if (!m) throw new Error(`SVC_TEST_RESOLVE must be name=address, not ${rule}`);
  const [, name, address] = m;
  const family = address.includes(':') ? 6 : 4;
  const lookup = dns.lookup;
  dns.lookup = function resolveTo(...args) {
    const [hostname, options, callback] = args;
    if (hostname !== name) return lookup.apply(this, args);
    const cb = typeof options === 'function' ? options : callback;
    const all = typeof options === 'object' && options !== null && options.all === true;
    process.nextTick(() => (all ? cb(null, [{ address, family }]) : cb(null, address, family)));
  };
}
