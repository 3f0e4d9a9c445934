import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

/**
 * Preloaded into the gateway with NODE_OPTIONS=--import when BENCH_GATEWAY_CPU_PROF is set:
 * Node 20 refuses --cpu-prof in NODE_OPTIONS, and `svc serve` is started through bin/svc.js,
 * which leaves no other place for the flag. The same-thread inspector answers synchronously,
 * so the profile can still be written from the 'exit' handler after a graceful shutdown.
 */
const dir = process.env.BENCH_GATEWAY_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  session.post('Profiler.enable');
  session.post('Profiler.start');
  process.once('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (err) return;
      writeFileSync(join(dir, `gateway-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
