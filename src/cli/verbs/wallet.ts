import type { Command } from 'commander';
import type { AnalyticsStore } from '../../analytics/port.js';
import type { Config } from '../../config/config.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import type { Pool } from '../../events/postgres/pool.js';
import { describeError, ServiceError } from '../../lib/errors.js';
import { workspaceIdOf } from '../../projections/control-plane/workspaces.js';
import { type LedgerDifference, replayLedger } from '../../projections/wallet/replay.js';
import { type AnalyticsComparison, compareWithAnalytics } from '../../query/wallet-costs.js';
import { makeWalletService, type WalletService } from '../../roles/wallet.js';
import { CliError, emit, table } from '../output.js';
import { progress } from '../progress.js';
import { openDatabase, readConfig } from '../runtime.js';
import { openAnalytics } from '../storage.js';

/** The operator running the CLI holds the deployment's keys: the platform administrator. */
const admin = { id: 'admin' };

/** A workspace named by id or by name. */
const resolveWorkspace = async (pool: Pool, ref: string): Promise<string> => {
  const workspaceId = await workspaceIdOf(pool, ref);
  if (!workspaceId) throw new CliError(`no workspace with id or name ${ref}`);
  return workspaceId;
};

const withWallet = async <T>(
  fn: (wallet: WalletService, pool: Pool, config: Config) => Promise<T>,
): Promise<T> => {
  const config = readConfig();
  const db = await openDatabase(config);
  const store = new PostgresEventStore(db.pool, db.url);
  try {
    // Payments stay off here: the CLI grants and reads; top-ups and refunds belong to the console.
    return await fn(makeWalletService(store, db.pool, config, null), db.pool, config);
  } catch (err) {
    if (err instanceof ServiceError)
      throw new CliError(`${err.message}${err.param ? ` (${err.param})` : ''}`);
    throw err;
  } finally {
    await store.close();
    await db.close();
  }
};

/** auto: ClickHouse when SVC_CLICKHOUSE_URL is set (the embedded engine belongs to `svc serve`). */
const analyticsFor = async (
  config: Config,
  mode: string,
): Promise<{ store: AnalyticsStore | null; note?: string }> => {
  if (mode === 'off') return { store: null, note: 'analytics comparison turned off (--analytics off)' };
  if (mode === 'auto' && !config.SVC_CLICKHOUSE_URL)
    return {
      store: null,
      note: 'analytics comparison skipped: SVC_CLICKHOUSE_URL is unset (use --analytics on for the embedded engine while svc serve is stopped)',
    };
  try {
    return { store: await openAnalytics(config) };
  } catch (err) {
    if (mode === 'on') throw err;
    return { store: null, note: `analytics comparison skipped: ${describeError(err)}` };
  }
};

const renderDifferences = (differences: LedgerDifference[]): string =>
  differences.length === 0
    ? 'no differences'
    : `${differences.length} difference(s):\n${table(
        differences.map((d) => ({ ...d, expected: d.expected ?? '(none)', actual: d.actual ?? '(none)' })),
        ['kind', 'id', 'expected', 'actual', 'detail'],
      )}`;

export const registerWalletCommands = (program: Command): void => {
  const wallet = program.command('wallet').description('workspace wallets: balances and operator grants');
  wallet
    .command('grant')
    .description('credit a workspace wallet as the platform administrator (idempotent per key)')
    .requiredOption('--workspace <workspace>', 'workspace id or name')
    .requiredOption('--amount <usd>', 'positive decimal USD amount, e.g. 10.00')
    .requiredOption('--reason <reason>', 'why the credit is granted (kept in the ledger and audit trail)')
    .requiredOption(
      '--idempotency-key <key>',
      'unique per workspace; repeating it returns the original grant',
    )
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        workspace: string;
        amount: string;
        reason: string;
        idempotencyKey: string;
        json?: boolean;
      }) => {
        const out = await withWallet(async (w, pool) => {
          const workspaceId = await resolveWorkspace(pool, opts.workspace);
          const r = await w.grant(admin, workspaceId, {
            amountUsd: opts.amount,
            reason: opts.reason,
            idempotencyKey: opts.idempotencyKey,
            via: 'cli',
          });
          return { ...r.transaction, replayed: !r.created, balance: await w.reads.balance(workspaceId) };
        });
        emit(opts.json, out, (o) =>
          [
            `${o.replayed ? 'grant already recorded' : 'granted'} ${o.amount_usd} USD to ${o.workspace_id} (${o.transaction_id})`,
            `balance ${o.balance.balance_usd} USD, available ${o.balance.available_usd} USD`,
          ].join('\n'),
        );
      },
    );
  wallet
    .command('show')
    .description('balance, held and available funds, and auto-refill settings of a workspace wallet')
    .requiredOption('--workspace <workspace>', 'workspace id or name')
    .option('--json', 'print JSON')
    .action(async (opts: { workspace: string; json?: boolean }) => {
      const out = await withWallet(async (w, pool) => {
        const workspaceId = await resolveWorkspace(pool, opts.workspace);
        return {
          ...(await w.reads.balance(workspaceId)),
          auto_refill: await w.reads.autoRefill(workspaceId),
        };
      });
      emit(opts.json, out, (o) =>
        [
          `wallet of ${o.workspace_id}${o.funded ? '' : ' (never funded)'}`,
          `balance   ${o.balance_usd} USD`,
          `held      ${o.held_usd} USD`,
          `available ${o.available_usd} USD`,
          `auto-refill ${o.auto_refill ? `${o.auto_refill.enabled ? 'on' : 'off'}: ${o.auto_refill.amount_usd} USD below ${o.auto_refill.trigger_usd} USD (stored, never acted on)` : 'not set'}`,
        ].join('\n'),
      );
    });

  program
    .command('ledger')
    .description('wallet ledgers')
    .command('replay')
    .description(
      'rebuild a wallet balance from its ledger events and report every difference (exit 1 if any)',
    )
    .requiredOption('--workspace <workspace>', 'workspace id or name')
    .option('--analytics <mode>', 'compare with analytics cost lines: auto, on or off', 'auto')
    .option('--json', 'print JSON')
    .action(async (opts: { workspace: string; analytics: string; json?: boolean }) => {
      if (!['auto', 'on', 'off'].includes(opts.analytics))
        throw new CliError('--analytics must be auto, on or off');
      const report = await withWallet(async (_w, pool, config) => {
        const workspaceId = await resolveWorkspace(pool, opts.workspace);
        const bar = progress(`replay wallet-${workspaceId}`, { quiet: opts.json });
        const started = performance.now();
        let replay: Awaited<ReturnType<typeof replayLedger>>;
        try {
          replay = await replayLedger(pool, workspaceId, {
            onProgress: (done, total) => bar.update(done, total),
          });
        } finally {
          bar.stop();
        }
        const { store, note } = await analyticsFor(config, opts.analytics);
        let analytics: AnalyticsComparison;
        try {
          analytics = store
            ? await compareWithAnalytics(store, workspaceId, replay.charges)
            : { status: 'skipped', note: note ?? 'skipped', differences: [] };
        } finally {
          await store?.close();
        }
        const { charges, ...summary } = replay;
        return {
          ...summary,
          charges: charges.size,
          analytics: { ...analytics, differences: analytics.differences.length },
          differences: [...replay.differences, ...analytics.differences],
          seconds: Number(((performance.now() - started) / 1_000).toFixed(3)),
        };
      });
      emit(opts.json, report, (r) =>
        [
          `replayed ${r.events} events of wallet-${r.workspace_id} in ${r.seconds}s`,
          `ledger balance ${r.balance_usd} USD (credited ${r.credited_usd}, refunded ${r.refunded_usd}, charged ${r.charged_usd} over ${r.charges} requests)`,
          `read model     ${r.read_model_balance_usd ?? '(no row)'} USD`,
          r.analytics.status === 'compared'
            ? `analytics      compared with ${r.analytics.table} (${r.analytics.requests} requests)`
            : `analytics      ${r.analytics.note}`,
          renderDifferences(r.differences),
        ].join('\n'),
      );
      if (report.differences.length > 0) process.exitCode = 1;
    });
};
