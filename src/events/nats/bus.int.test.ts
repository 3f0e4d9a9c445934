import { busContract } from '../../../test/contract/bus.contract.js';
import { TEST_NATS_URL, uniqueSuffix } from '../../../test/helpers/env.js';
import type { Bus } from '../bus.js';
import { NatsBus } from './bus.js';

// The machine's NATS is shared: every run gets its own stream names and subject tree, and deletes
// its streams (and with them its consumers) at the end.
busContract('NATS JetStream', async () => {
  const suffix = uniqueSuffix();
  const naming = { subjectPrefix: `t_${suffix}`, streamNamePrefix: `T_${suffix}_` };
  const opened: Bus[] = [];
  const owner = new NatsBus({ servers: TEST_NATS_URL, ...naming });
  await owner.ensureStreams();
  return {
    open: async () => {
      const bus = new NatsBus({ servers: TEST_NATS_URL, ...naming });
      await bus.ensureStreams();
      opened.push(bus);
      return bus;
    },
    openUnreachable: async ({ host, port }, timeoutMs) => {
      const bus = new NatsBus({ servers: `nats://${host}:${port}`, ...naming, timeoutMs });
      opened.push(bus);
      return bus;
    },
    cleanup: async () => {
      await Promise.all(opened.map((b) => b.close()));
      await owner.deleteStreams();
      await owner.close();
    },
  };
});
