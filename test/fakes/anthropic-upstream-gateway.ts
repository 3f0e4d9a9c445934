/** Wiring the fake Anthropic upstream (and the fake OpenAI one) into a running gateway for e2e tests. */
import type { RequestCompleted } from '../../src/events/envelopes/request-completed.js';
import { connect as connectPrimary, eventually, type GatewayEnv } from '../helpers/gateway-env.js';

/** Registers a messages-style lane on the fake upstream through the operator CLI; `extra` adds options. */
export const upsertAnthropic = (
  gw: GatewayEnv,
  options: { lane: string; model: string; providerModelId: string; baseUrl: string; reasoning: boolean },
  extra: string[] = [],
) =>
  gw.svc([
    'registry',
    'upsert',
    '--lane',
    options.lane,
    '--adapter',
    'anthropic',
    '--model',
    options.model,
    '--provider-model-id',
    options.providerModelId,
    '--base-url',
    options.baseUrl,
    '--capabilities',
    `chat,streaming,tools${options.reasoning ? ',reasoning' : ''}`,
    '--max-output-tokens',
    '8192',
    '--input-price-per-token',
    '0.000003',
    '--output-price-per-token',
    '0.000015',
    ...extra,
  ]);

export const upsertOpenAi = (gw: GatewayEnv, model: string, baseUrl: string) =>
  gw.svc([
    'registry',
    'upsert',
    '--lane',
    'openai',
    '--adapter',
    'openai',
    '--model',
    model,
    '--provider-model-id',
    `${model}-2024-08-06`,
    '--base-url',
    baseUrl,
    '--capabilities',
    'chat,streaming,tools',
    '--input-price-per-token',
    '0.0000025',
    '--output-price-per-token',
    '0.00001',
  ]);

export const connect = (gw: GatewayEnv, provider: string, secret: string) =>
  connectPrimary(gw, { provider, secret });

/** The request.completed envelopes of the given request ids, read from the bus like ingest would. */
export const envelopesOf = async (
  gw: GatewayEnv,
  requestIds: string[],
): Promise<Map<string, RequestCompleted>> => {
  const { PostgresBus } = await import('../../src/events/postgres/bus.js');
  const { requestCompletedSchema } = await import('../../src/events/envelopes/request-completed.js');
  const bus = new PostgresBus(gw.db.pool, { connectionString: gw.db.url });
  const seen = new Map<string, RequestCompleted>();
  const consumer = await bus.consume(
    `test-envelopes-${Math.random().toString(36).slice(2, 10)}`,
    'svc.requests.>',
    async (m) => {
      if (requestIds.includes(m.messageId))
        seen.set(m.messageId, requestCompletedSchema.parse(JSON.parse(Buffer.from(m.data).toString('utf8'))));
      await m.ack();
    },
    { ackWaitMs: 5_000, maxDeliveries: 3 },
  );
  try {
    await eventually(async () => requestIds.every((id) => seen.has(id)), 10_000, 'the envelopes');
  } finally {
    await consumer.close();
    await bus.close();
  }
  return seen;
};

/** Cost lines without what differs between two requests of equal counts. */
export const costOf = (e: RequestCompleted) => ({
  total: e.total_cost_usd,
  lines: e.cost_lines.map((l) => [l.meter, l.modality, l.quantity, l.unit_price, l.amount]),
});
