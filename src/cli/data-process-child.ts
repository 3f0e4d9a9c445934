import type { Logger } from 'pino';
import { type Channel, serveEngine } from '../analytics/chdb/channel.js';
import type { Config } from '../config/config.js';
import type { RoleName } from '../roles/role.js';
import { dataMessage, type FromChild, isDataMessage, type ToChild } from './data-process.js';
import { CliError } from './output.js';
import { type RunningService, startService } from './service.js';

/**
 * The child's side of cli/data-process.ts: `svc serve --data-process --roles ...`. Runs its roles
 * without a port, answers its parent's health, metrics and analytics statements over the IPC
 * channel, and stops on the parent's word, on its own SIGTERM or SIGINT, or when the parent is
 * gone; a second signal, or a stop slower than SVC_SHUTDOWN_TIMEOUT_MS, exits at once.
 */
export const runDataProcess = async (config: Config, roles: RoleName[], logger: Logger): Promise<void> => {
  const send = process.send?.bind(process);
  if (!send) throw new CliError('--data-process is for the child that svc serve starts itself');
  const tell = (m: Parameters<typeof dataMessage<FromChild>>[0]) =>
    send(dataMessage<FromChild>(m), undefined, {}, () => {});
  const controller = new AbortController();
  let service: RunningService | null = null;
  let unserve = () => {};
  let stopping = false;

  const shutdown = (why: string) => {
    if (stopping) {
      logger.warn({ why }, 'data process: second stop request, exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ why }, 'data process stopping');
    controller.abort(new Error(`stopped: ${why}`));
    setTimeout(() => {
      logger.error({ timeout_ms: config.SVC_SHUTDOWN_TIMEOUT_MS }, 'data process stop timed out; exiting');
      process.exit(1);
    }, config.SVC_SHUTDOWN_TIMEOUT_MS).unref();
    if (service) finish(service); // else start-up unwinds by itself and exits below
  };
  const finish = (running: RunningService) => {
    unserve();
    void running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'data process stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('disconnect', () => shutdown('parent gone'));
  process.on('message', (m: unknown) => {
    if (!isDataMessage<ToChild>(m)) return;
    if (m.type === 'stop') return shutdown('asked by svc serve');
    if (m.type === 'ping') return tell({ type: 'pong', id: m.id });
    const running = service;
    if (!running) return;
    if (m.type === 'health') {
      void running.health
        .report()
        .then((r) => tell({ type: 'health', id: m.id, dependencies: r.dependencies }));
    } else if (m.type === 'metrics') {
      void running.metrics.metrics().then((text) => tell({ type: 'metrics', id: m.id, text }));
    }
  });

  try {
    service = await startService(config, {
      roles,
      logger,
      signal: controller.signal,
      listen: false,
      defaultMetricsPrefix: 'svc_data_',
    });
  } catch (err) {
    tell({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
    if (!stopping) logger.error({ err }, 'data process did not start');
    process.exit(stopping ? 0 : 1);
  }
  let engineVersion: string | null = null;
  const analytics = service.analytics;
  if (analytics?.adapter === 'chdb') {
    // The engine ingest writes through answers the parent's query role as well.
    const { engine } = analytics as import('../analytics/chdb/store.js').ChdbAnalyticsStore;
    unserve = serveEngine(process as unknown as Channel, engine);
    engineVersion = engine.version;
  }
  if (stopping) return finish(service);
  tell({ type: 'ready', pid: process.pid, engineVersion });
};
