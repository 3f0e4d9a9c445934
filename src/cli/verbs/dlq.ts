import type { Command } from 'commander';
import type { Bus } from '../../events/bus.js';
import { NatsBus } from '../../events/nats/bus.js';
import {
  type DeadLetter,
  type DeadLetterSource,
  natsDeadLetters,
  postgresDeadLetters,
  replayDeadLetters,
  replaySubject,
  requestOf,
} from '../../projections/ingest/dlq.js';
import { DLQ_REASONS } from '../../projections/ingest/metrics.js';
import { emit, table } from '../output.js';
import { progress } from '../progress.js';
import { openDatabase, readConfig } from '../runtime.js';
import { natsBusOptions, openBus } from '../storage.js';

/**
 * `svc dlq list` and `svc dlq replay`: the dead letters of svc.dlq.requests, kept
 * 30 days (SPEC 8). A dead letter with reason audit_emit has its row committed and its audit event
 * pending; replaying it is how the audit record is restored (SPEC 6).
 */

interface Opts {
  reason?: string;
  json?: boolean;
}

/** The deployment's bus and where its dead letters are kept; NATS needs no database. */
const withDeadLetters = async <T>(fn: (bus: Bus, source: DeadLetterSource) => Promise<T>): Promise<T> => {
  const config = readConfig();
  if (config.SVC_NATS_URL) {
    const bus = new NatsBus({
      servers: config.SVC_NATS_URL,
      connectionName: 'svc-dlq',
      ...natsBusOptions(config),
    });
    try {
      return await fn(bus, natsDeadLetters(bus, config.SVC_NATS_STREAM_PREFIX));
    } finally {
      await bus.close();
    }
  }
  const db = await openDatabase(config, { application: 'svc-dlq' });
  const bus = await openBus(config, db);
  try {
    return await fn(bus, postgresDeadLetters(db.pool));
  } finally {
    await bus.close();
    await db.close();
  }
};

/** Any reason is accepted: other consumers' dead letters share the subject (e.g. max_deliveries). */
const selected = async (source: DeadLetterSource, reason: string | undefined): Promise<DeadLetter[]> => {
  const all = await source.list();
  return reason === undefined ? all : all.filter((dl) => dl.info.reason === reason);
};

const describeLetter = (dl: DeadLetter) => {
  const request = requestOf(dl);
  return {
    seq: dl.seq,
    reason: dl.info.reason,
    subject: dl.info.subject,
    message_id: dl.info.messageId,
    org_id: request?.orgId ?? null,
    request_id: request?.requestId ?? null,
    deliveries: dl.info.deliveries,
    consumer: dl.info.consumer,
    bytes: dl.data.byteLength,
    dead_lettered_at: dl.deadLetteredAt?.toISOString() ?? null,
    replay_to: replaySubject(dl),
  };
};

const list = async (opts: Opts): Promise<void> => {
  const rows = await withDeadLetters(async (_bus, source) =>
    (await selected(source, opts.reason)).map(describeLetter),
  );
  emit(opts.json, rows, (r) =>
    r.length === 0
      ? 'no dead letters'
      : `${table(r, ['seq', 'reason', 'consumer', 'request_id', 'subject', 'deliveries', 'bytes', 'dead_lettered_at'])}\n\n${r.length} dead letters`,
  );
};

const replay = async (opts: Opts): Promise<void> => {
  const summary = await withDeadLetters(async (bus, source) => {
    const letters = await selected(source, opts.reason);
    const bar = progress('dlq replay', { quiet: opts.json });
    bar.update(0, letters.length);
    try {
      return await replayDeadLetters(bus, letters, {
        runId: Date.now().toString(36),
        onProgress: (done, total) => bar.update(done, total),
      });
    } finally {
      bar.stop();
    }
  });
  emit(opts.json, summary, (s) =>
    [
      `replayed ${s.replayed}${s.failed ? `, failed ${s.failed}` : ''}`,
      ...Object.entries(s.byReason).map(([reason, count]) => `  ${reason}: ${count}`),
      ...s.errors.slice(0, 10).map((e) => `  seq ${e.seq}: ${e.error}`),
    ].join('\n'),
  );
  if (summary.failed > 0) process.exitCode = 1;
};

export const registerDlqCommands = (program: Command): void => {
  const dlq = program
    .command('dlq')
    .description('dead letters of the ingest consumer (svc.dlq.requests, kept 30 days): list and replay');
  dlq
    .command('list')
    .description('list dead letters with their reason and request')
    .option('--reason <reason>', `only this reason (ingest: ${DLQ_REASONS.join(', ')})`)
    .option('--json', 'print JSON')
    .action(list);
  dlq
    .command('replay')
    .description(
      'republish each payload to svc.requests.<org_id>.<request_id> (body chunks to their own subject)',
    )
    .option('--reason <reason>', `only this reason (ingest: ${DLQ_REASONS.join(', ')})`)
    .option('--json', 'print JSON')
    .action(replay);
};
