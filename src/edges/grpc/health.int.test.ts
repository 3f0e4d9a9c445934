import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { grpcClient } from '../../../test/helpers/grpc.js';
import type { AnalyticsStore } from '../../analytics/port.js';
import { HealthRegistry } from '../../lib/health.js';
import { addQueryService } from './query.js';
import { bindGrpc, createGrpcServer, type GrpcServer, loadService } from './server.js';

// The standard gRPC health protocol (grpc.health.v1.Health, SPEC 4.8 beside HealthService.Ping)
// over a real socket, as grpc-health-probe and Kubernetes gRPC probes ask it: no service token,
// "" is the process, served services are known, Watch follows the dependencies and the drain.

const FILE = 'grpc/health/v1/health.proto';
const SERVICE = 'grpc.health.v1.Health';

type Status = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN' | 'UNKNOWN';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for a condition; the test's own timeout bounds it. */
const until = async (condition: () => boolean) => {
  while (!condition()) await sleep(25);
};

/** A Watch call: every status received, and how the stream ended. */
const watch = (port: number, service: string) => {
  const Client = grpc.makeGenericClientConstructor(loadService(FILE, SERVICE), 'Health');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const call = (client as unknown as Record<string, (req: object) => grpc.ClientReadableStream<unknown>>)
    .Watch!({ service });
  const statuses: Status[] = [];
  call.on('data', (m: { status: Status }) => statuses.push(m.status));
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('error', () => {});
  return {
    statuses,
    ended,
    /** Resolves once `count` statuses have arrived. */
    received: (count: number) => until(() => statuses.length >= count),
    cancel: () => call.cancel(),
    close: () => client.close(),
  };
};

let registry: HealthRegistry;
let dependencyUp: boolean;
let checks: number;
let served: GrpcServer;
let port: number;
let anonymous: ReturnType<typeof grpcClient>;

beforeEach(async () => {
  dependencyUp = true;
  checks = 0;
  registry = new HealthRegistry();
  registry.register('postgres', async () => {
    checks++;
    if (!dependencyUp) throw new Error('connection refused');
  });
  served = createGrpcServer({
    health: registry,
    // Only the service's name matters here: its store is never asked.
    roles: [{ name: 'query', grpc: (s) => addQueryService(s, {} as AnalyticsStore, 'service-token') }],
    version: 'test',
  });
  port = await bindGrpc(served.server, '127.0.0.1', 0);
  anonymous = grpcClient(port, FILE, SERVICE);
});
afterEach(async () => {
  anonymous.close();
  served.drain();
  await new Promise<void>((resolve) => served.server.tryShutdown(() => resolve()));
});

const check = (service: string) => anonymous.call<{ status: Status }>('Check', { service });

describe('grpc.health.v1.Health Check', () => {
  it('answers "" SERVING without a service token while every dependency is up, NOT_SERVING when one is down', async () => {
    expect(await check('')).toEqual({ status: 'SERVING' });
    dependencyUp = false;
    expect(await check('')).toEqual({ status: 'NOT_SERVING' });
    dependencyUp = true;
    expect(await check('')).toEqual({ status: 'SERVING' });
  });

  it('knows every service the process serves by its fully qualified name', async () => {
    for (const name of ['svc.query.v1.QueryService', 'svc.health.v1.HealthService', 'grpc.health.v1.Health'])
      expect(await check(name), name).toEqual({ status: 'SERVING' });
    dependencyUp = false;
    expect(await check('svc.query.v1.QueryService')).toEqual({ status: 'NOT_SERVING' });
  });

  it('answers NOT_FOUND for a service it does not serve', async () => {
    for (const name of ['svc.controlplane.v1.AuthService', 'svc.query.v1', 'QueryService', 'nope']) {
      const err = (await check(name).catch((e: grpc.ServiceError) => e)) as grpc.ServiceError;
      expect(err.code, name).toBe(grpc.status.NOT_FOUND);
    }
  });

  it('answers NOT_SERVING once the process drains', async () => {
    served.drain();
    expect(await check('')).toEqual({ status: 'NOT_SERVING' });
    expect(await check('svc.query.v1.QueryService')).toEqual({ status: 'NOT_SERVING' });
  });

  it('leaves HealthService.Ping as it was, and the role services behind the service token', async () => {
    const ping = grpcClient(port, 'svc/health/v1/health.proto', 'svc.health.v1.HealthService');
    const query = grpcClient(port, 'svc/query/v1/query.proto', 'svc.query.v1.QueryService');
    try {
      expect(await ping.call('Ping', {})).toMatchObject({ status: 'ok', roles: ['query'] });
      const denied = (await query
        .call('GetRequest', { org_id: 'org_1', request_id: 'req_1' })
        .catch((e: grpc.ServiceError) => e)) as grpc.ServiceError;
      expect(denied.code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      ping.close();
      query.close();
    }
  });
});

describe('grpc.health.v1.Health Watch', () => {
  it('sends the status at once and again on every change, then NOT_SERVING and a clean end on drain', async () => {
    const w = watch(port, '');
    try {
      await w.received(1);
      dependencyUp = false;
      await w.received(2);
      dependencyUp = true;
      await w.received(3);
      served.drain();
      const end = await w.ended;
      expect(end.code).toBe(grpc.status.OK);
      // Only changes are sent: each status once per change, the drain's NOT_SERVING last.
      expect(w.statuses).toEqual(['SERVING', 'NOT_SERVING', 'SERVING', 'NOT_SERVING']);
    } finally {
      w.close();
    }
  });

  it('answers SERVICE_UNKNOWN for an unknown service without failing, and ends on drain', async () => {
    const w = watch(port, 'svc.controlplane.v1.AuthService');
    try {
      await w.received(1);
      served.drain();
      expect((await w.ended).code).toBe(grpc.status.OK);
      expect(w.statuses).toEqual(['SERVICE_UNKNOWN']);
    } finally {
      w.close();
    }
  });

  it('a watch begun while draining gets NOT_SERVING and ends', async () => {
    served.drain();
    const w = watch(port, 'svc.query.v1.QueryService');
    try {
      expect((await w.ended).code).toBe(grpc.status.OK);
      expect(w.statuses).toEqual(['NOT_SERVING']);
    } finally {
      w.close();
    }
  });

  it('looks at the dependencies only while someone watches', async () => {
    const w = watch(port, '');
    await w.received(1);
    expect(w.statuses).toEqual(['SERVING']);
    // Polling runs: the dependency is asked again without any Check.
    const before = checks;
    await until(() => checks > before + 1);
    w.cancel();
    await w.ended;
    w.close();
    // A poll already under way may finish; after that, nobody asks.
    await sleep(1_500);
    const settled = checks;
    await sleep(2_500);
    expect(checks).toBe(settled);
  });
});
