/**
 * The chdb-backed ClickHouse HTTP test server (test/fakes/clickhouse-http.ts) as a child process of
 * bench/ingest/run.ts, so the HTTP adapter's client side is measured in the ingest process and the
 * engine's CPU apart. It is not a ClickHouse server (none that is modern enough installs here): its
 * CPU stands for the engine's, not a server's. Sends `{ url }` on the IPC channel; stops on SIGTERM.
 *
 *   node --import tsx bench/ingest/clickhouse-server.ts <data dir>
 */
import { startFakeClickHouse } from '../../test/fakes/clickhouse-http.js';

const server = await startFakeClickHouse({ path: process.argv[2]! });
process.send?.({ url: server.url });
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
