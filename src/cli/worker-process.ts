import type { Logger } from 'pino';
import { AggregatorRegistry, Gauge, type MetricObjectWithValues, type MetricValue } from 'prom-client';

type MetricJson = MetricObjectWithValues<MetricValue<string>>[];

import type { Channel } from '../analytics/chdb/channel.js';
import type { Config } from '../config/config.js';
import type { DependencyState } from '../lib/health.js';
import type { RoleName } from '../roles/role.js';
import type { DataProcess } from './data-process.js';
import { CliError } from './output.js';
import { dataDirOf } from './runtime.js';
import { type RunningService, startService } from './service.js';
import {
  type FromWorker,
  isWorkerMessage,
  slotDir,
  type ToWorker,
  type WorkerAsk,
  type WorkerInfo,
  workerMessage,
} from './workers.js';

const ASK_TIMEOUT_MS = 2_000;

/**
 * The worker's side of cli/workers.ts: `svc serve --worker <slot> --roles ...`, forked by the
 * supervisor. Serves its roles on the shared ports; the data roles are the supervisor's data
 * process, whose health, metrics and analytics engine it reaches through the supervisor. Stops on
 * the supervisor's word, or on its own SIGTERM or SIGINT (a terminal's Ctrl-C reaches every
 * process of the group, and the supervisor asks as well: one request); a stop slower than
 * SVC_SHUTDOWN_TIMEOUT_MS exits at once. A second request never cuts the drain short here: the
 * supervisor decides that, with SIGKILL. A worker whose supervisor is gone (killed with -9) exits at
 * once, as node:cluster makes it: like a gateway killed with -9, its journal then names what it had
 * in flight, and the next start adopts it in the same slot.
 */
export const runWorker = async (
  config: Config,
  roles: RoleName[],
  slot: number,
  logger: Logger,
): Promise<{ service: RunningService; info: WorkerInfo } | null> => {
  const send = process.send?.bind(process);
  if (!send) throw new CliError('--worker is for the processes svc serve --workers starts itself');
  const tell = (m: Parameters<typeof workerMessage<FromWorker>>[0]) =>
    send(workerMessage<FromWorker>(m), undefined, {}, () => {});
  const channel: Channel = process as unknown as Channel;
  const controller = new AbortController();
  let service: RunningService | null = null;
  let stopping = false;
  let nextAsk = 1;
  const asks = new Map<number, (m: Extract<ToWorker, { type: 'answer' }>) => void>();

  const finish = (running: RunningService) =>
    void running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'worker stop failed');
        process.exit(1);
      },
    );
  const shutdown = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'worker stopping: draining requests');
    controller.abort(new Error(`stopped: ${why}`));
    setTimeout(() => {
      logger.error({ timeout_ms: config.SVC_SHUTDOWN_TIMEOUT_MS }, 'worker stop timed out; exiting');
      process.exit(1);
    }, config.SVC_SHUTDOWN_TIMEOUT_MS).unref();
    if (service) finish(service); // else start-up unwinds by itself and exits below
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('message', (m: unknown) => {
    if (!isWorkerMessage<ToWorker>(m)) return;
    if (m.type === 'stop') shutdown('asked by the supervisor');
    else if (m.type === 'collect') {
      const running = service;
      void (running ? running.metrics.getMetricsAsJSON() : Promise.resolve(null)).then((json) =>
        tell({ type: 'collected', id: m.id, json }),
      );
    } else asks.get(m.id)?.(m);
  });

  const ask = (what: WorkerAsk): Promise<Extract<ToWorker, { type: 'answer' }>> => {
    const id = nextAsk++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        asks.delete(id);
        reject(new Error(`the supervisor did not answer within ${ASK_TIMEOUT_MS} ms`));
      }, ASK_TIMEOUT_MS);
      asks.set(id, (m) => {
        clearTimeout(timer);
        asks.delete(id);
        if (m.error !== undefined) reject(new Error(m.error));
        else resolve(m);
      });
      send(workerMessage<FromWorker>({ type: 'ask', id, what }), undefined, {}, (err: Error | null) => {
        if (!err) return;
        clearTimeout(timer);
        asks.delete(id);
        reject(err);
      });
    });
  };

  try {
    const info = (await ask('info')).info as WorkerInfo;
    const remote: DataProcess | null =
      info.dataRoles.length === 0
        ? null
        : {
            pid: info.dataPid,
            engineVersion: info.engineVersion,
            // The supervisor serves the engine on this channel for as long as the worker lives.
            onChannel: (listener) => listener(channel),
            health: async () => (await ask('health')).dependencies as Record<string, DependencyState>,
            metrics: () =>
              ask('metrics').then(
                (m) => m.text ?? '',
                () => '',
              ),
            // The supervisor stops it, after every worker drained.
            stop: async () => {},
          };
    service = await startService(config, {
      roles,
      logger,
      signal: controller.signal,
      remoteData: { roles: info.dataRoles, process: remote },
      processDir: slotDir(dataDirOf(config), slot),
      ownMetrics: async (registry) => {
        const siblings = await ask('siblings').then(
          (m) => m.json ?? [],
          () => [],
        );
        const all = [await registry.getMetricsAsJSON(), ...(siblings as MetricJson[])];
        // Each series carries its worker's label, so none adds to another's: every family is kept,
        // those prom-client would otherwise leave out of an aggregate (process_start_time_seconds).
        for (const family of all.flat()) family.aggregator = 'sum';
        return AggregatorRegistry.aggregate(all).metrics();
      },
    });
    // Every series says which worker it is of: a scrape of one worker carries all of them.
    service.metrics.setDefaultLabels({ worker: String(slot) });
    if (stopping) {
      finish(service);
      return null;
    }
    // Which worker answered a scrape through the shared port (a counter's process, for operators).
    new Gauge({
      name: 'svc_serve_worker',
      help: 'this process is the worker of svc serve --workers in this slot (1)',
      labelNames: ['slot', 'pid'] as const,
      registers: [service.metrics],
    }).set({ slot: String(slot), pid: String(process.pid) }, 1);
    tell({
      type: 'ready',
      started: {
        httpPort: service.httpPort,
        grpcPort: service.grpcPort,
        roles: service.roles,
        notBuilt: service.notBuilt,
      },
    });
    return { service, info };
  } catch (err) {
    tell({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
    if (!stopping) logger.error({ err }, 'worker did not start');
    process.exit(stopping ? 0 : 1);
  }
};
