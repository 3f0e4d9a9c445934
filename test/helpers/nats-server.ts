import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';

/** Where Debian's nats-server package puts the binary on this kind of machine. */
export const NATS_SERVER_BIN = [
  '/usr/sbin/nats-server',
  '/usr/bin/nats-server',
  '/usr/local/bin/nats-server',
].find((p) => existsSync(p));

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

/**
 * A private NATS server with JetStream for one test: the machine's shared server is never stopped.
 * `stop()` and `start()` keep the port and the store directory, so streams survive a restart.
 */
export const privateNats = async (storeDir: string) => {
  if (!NATS_SERVER_BIN) throw new Error('nats-server is not installed (Debian package nats-server)');
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(NATS_SERVER_BIN, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], {
      stdio: 'ignore',
    });
    const deadline = Date.now() + 10_000;
    while (!(await listening(port))) {
      if (Date.now() > deadline) throw new Error('private nats-server did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  };
  await start();
  return { url: `nats://127.0.0.1:${port}`, start, stop };
};
