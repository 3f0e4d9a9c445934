import * as grpc from '@grpc/grpc-js';
import { z } from 'zod';
import type { HealthRegistry } from '../../lib/health.js';
import type { HealthHandlers } from './generated/grpc/health/v1/Health.js';
import type { HealthCheckRequest__Output } from './generated/grpc/health/v1/HealthCheckRequest.js';
import type {
  HealthCheckResponse,
  HealthCheckResponse__Output,
} from './generated/grpc/health/v1/HealthCheckResponse.js';

/** The statuses this process answers (grpc.health.v1 HealthCheckResponse.ServingStatus). */
type ServingStatus = Extract<
  HealthCheckResponse__Output['status'],
  'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN'
>;

/** How often Watch looks at the dependencies again, and only while a watcher is connected. */
export const WATCH_POLL_MS = 1_000;

const healthCheckRequest = z.object({ service: z.string() }) satisfies z.ZodType<HealthCheckRequest__Output>;

interface Watcher {
  service: string;
  call: grpc.ServerWritableStream<HealthCheckRequest__Output, HealthCheckResponse>;
  last: ServingStatus | null;
}

export interface GrpcHealth {
  /** grpc.health.v1.Health: Check and Watch. */
  implementation: HealthHandlers;
  /**
   * The process starts to drain: NOT_SERVING from now on. Every watcher is told and its stream
   * ends, so the server's graceful shutdown does not wait for probes that never hang up.
   */
  drain(): void;
}

/**
 * The standard gRPC health protocol beside svc.health.v1.HealthService.Ping (SPEC 4.8), as
 * grpc-health-probe and Kubernetes gRPC probes ask it: "" is the process, serving while every
 * dependency of the HealthRegistry is up; a service the process serves has the process's status;
 * any other name is unknown. No service token: probes carry none.
 */
export const grpcHealth = (options: {
  health: HealthRegistry;
  /** Whether the process serves this fully qualified service name. */
  serves: (service: string) => boolean;
  pollMs?: number;
}): GrpcHealth => {
  const pollMs = options.pollMs ?? WATCH_POLL_MS;
  const watchers = new Set<Watcher>();
  let draining = false;
  let timer: NodeJS.Timeout | null = null;

  const known = (service: string) => service === '' || options.serves(service);
  // Draining is checked after the report as well: a drain that began meanwhile wins.
  const processStatus = (): Promise<ServingStatus> =>
    options.health.report().then(
      (report) => (report.ok && !draining ? 'SERVING' : 'NOT_SERVING'),
      () => 'NOT_SERVING',
    );
  const statusOf = (service: string, process: ServingStatus): ServingStatus =>
    known(service) ? process : 'SERVICE_UNKNOWN';

  const send = (watcher: Watcher, status: ServingStatus) => {
    if (watcher.last === status || watcher.call.cancelled) return;
    watcher.last = status;
    watcher.call.write({ status });
  };

  const poll = () => {
    if (timer !== null || draining || watchers.size === 0) return;
    timer = setTimeout(() => {
      void processStatus().then((status) => {
        for (const watcher of watchers) send(watcher, statusOf(watcher.service, status));
        timer = null;
        poll();
      });
    }, pollMs);
    timer.unref();
  };

  const serviceOf = (request: unknown): string | null => {
    const parsed = healthCheckRequest.safeParse(request);
    return parsed.success ? parsed.data.service : null;
  };

  return {
    implementation: {
      Check: (call, callback) => {
        const service = serviceOf(call.request);
        if (service === null)
          return callback({ code: grpc.status.INVALID_ARGUMENT, details: 'service must be a string' });
        if (!known(service))
          return callback({
            code: grpc.status.NOT_FOUND,
            details: `unknown service ${JSON.stringify(service.slice(0, 80))}`,
          });
        void processStatus().then((status) => callback(null, { status }));
      },
      Watch: (call) => {
        const service = serviceOf(call.request);
        if (service === null) {
          call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: 'service must be a string' });
          return;
        }
        const watcher: Watcher = { service, call, last: null };
        call.on('cancelled', () => watchers.delete(watcher));
        void processStatus().then((status) => {
          send(watcher, statusOf(service, status));
          if (call.cancelled) return;
          if (draining) return call.end();
          watchers.add(watcher);
          poll();
        });
      },
    },
    drain: () => {
      draining = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      for (const watcher of watchers) {
        send(watcher, statusOf(watcher.service, 'NOT_SERVING'));
        watcher.call.end();
      }
      watchers.clear();
    },
  };
};
