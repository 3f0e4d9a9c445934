import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { Agent, request } from 'undici';

/**
 * The ceiling row of bench/gateway: the least a fastify + undici proxy does for one chat request
 * (parse the JSON body, forward it on a keep-alive pool, relay the answer as it arrives), with no
 * auth, selection, pricing or records. What it costs is Node's HTTP plumbing on this machine; what
 * the gateway costs beyond it is ours. Forked by the bench; reports `{ origin }` over IPC.
 */
const upstream = process.env.BENCH_PROXY_UPSTREAM!;
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256, pipelining: 1 });
const app = Fastify({ logger: false });

app.post('/v1/chat/completions', async (req, reply) => {
  const res = await request(`${upstream}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-bench-byok', 'content-type': 'application/json' },
    body: JSON.stringify(req.body),
    dispatcher: agent,
  });
  reply.code(res.statusCode).header('content-type', String(res.headers['content-type']));
  return reply.send(res.body);
});

const address = await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address() as AddressInfo;
process.send?.({ origin: `http://127.0.0.1:${port}`, address });
process.on('disconnect', () => void app.close().then(() => process.exit(0)));
