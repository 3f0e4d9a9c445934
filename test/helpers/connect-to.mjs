// Test-only preload for `svc serve` child processes (NODE_OPTIONS=--import <this file>): like curl's
// --connect-to, TLS connections to SVC_TEST_CONNECT_TO's `host:port` are dialled at `addr:port`
// instead, keeping the original name for SNI and certificate checks. It lets a fake stand in for an
// upstream whose URL the service derives and never takes from configuration (the deployment host's
// https://{resource}.{domain} responses surface). Never loaded outside tests.
import tls from 'node:tls';

const rule = process.env.SVC_TEST_CONNECT_TO;
if (rule) {
  const m = /^([^:=]+):(\d+)=([^:=]+):(\d+)$/.exec(rule);
  if (!m) throw new Error(`SVC_TEST_CONNECT_TO must be host:port=addr:port, not ${rule}`);
  const [, host, port, toHost, toPort] = m;
  const connect = tls.connect;
  tls.connect = function connectTo(...args) {
    const options = args[0];
    if (
      options &&
      typeof options === 'object' &&
      options.host === host &&
      String(options.port ?? 443) === port
    ) {
      args[0] = { ...options, host: toHost, port: Number(toPort), servername: options.servername || host };
    }
    return connect.apply(this, args);
  };
}
