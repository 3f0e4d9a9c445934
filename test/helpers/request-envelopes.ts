import {
  type RequestCompleted,
  requestCompletedSchema,
} from '../../src/events/envelopes/request-completed.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { eventually, type GatewayEnv } from './gateway-env.js';

/** The request.completed envelope `svc serve` published on the embedded bus for one request id. */
export const completedEnvelope = async (gw: GatewayEnv, requestId: string): Promise<RequestCompleted> => {
  const bus = new PostgresBus(gw.db.pool, { connectionString: gw.db.url });
  const seen = new Map<string, unknown>();
  const consumer = await bus.consume(
    `test-envelope-${requestId}`,
    'svc.requests.>',
    async (m) => {
      seen.set(m.messageId, JSON.parse(Buffer.from(m.data).toString('utf8')));
      await m.ack();
    },
    { ackWaitMs: 5_000, maxDeliveries: 3 },
  );
  try {
    await eventually(async () => seen.has(requestId), 10_000, `the envelope of ${requestId}`);
  } finally {
    await consumer.close();
    await bus.close();
  }
  return requestCompletedSchema.parse(seen.get(requestId));
};
