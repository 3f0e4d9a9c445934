import type { Command } from 'commander';
import { describeConfig } from '../../config/config.js';
import { readHeadPosition } from '../../events/postgres/event-store.js';
import { findProjection, PROJECTIONS } from '../../projections/index.js';
import { checkpointOf, rebuildProjection } from '../../projections/runner.js';
import { CliError, emit, table } from '../output.js';
import { progress } from '../progress.js';
import { openDatabase, readConfig } from '../runtime.js';

export const registerDatabaseCommands = (program: Command): void => {
  program
    .command('config')
    .description('print the effective configuration, secrets masked')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const shown = describeConfig(readConfig());
      emit(opts.json, shown, (c) =>
        table(
          Object.entries(c).map(([variable, value]) => ({ variable, value: value ?? '(unset)' })),
          ['variable', 'value'],
        ),
      );
    });

  program
    .command('migrate')
    .description('apply pending PostgreSQL migrations (also done at every start)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const db = await openDatabase(readConfig(), { migrate: false });
      try {
        const { migratePostgres } = await import('../../events/postgres/migrate.js');
        const result = await migratePostgres(db.pool);
        emit(opts.json, { applied: result.applied, already_applied: result.alreadyApplied }, (r) =>
          r.applied.length
            ? `applied ${r.applied.length}: ${r.applied.join(', ')}`
            : `up to date (${r.already_applied} applied before)`,
        );
      } finally {
        await db.close();
      }
    });

  program
    .command('projections')
    .description('list the read-model projections with their versions and checkpoints')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const db = await openDatabase(readConfig());
      try {
        const head = await readHeadPosition(db.pool);
        const rows = [];
        for (const p of PROJECTIONS) {
          const cp = await checkpointOf(db.pool, p.name);
          rows.push({
            name: p.name,
            version: p.version,
            stored_version: cp?.version ?? null,
            position: cp?.position ?? 0,
            head,
          });
        }
        emit(opts.json, rows, (r) => table(r, ['name', 'version', 'stored_version', 'position', 'head']));
      } finally {
        await db.close();
      }
    });

  program
    .command('replay')
    .description('rebuild a read model by replaying the event store from position 0')
    .argument('<projection>', `projection name (${PROJECTIONS.map((p) => p.name).join(', ')})`)
    .option('--batch-size <n>', 'events per transaction', '2000')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean; batchSize: string }) => {
      const projection = findProjection(name);
      if (!projection)
        throw new CliError(
          `unknown projection ${name} (known: ${PROJECTIONS.map((p) => p.name).join(', ')})`,
        );
      const batchSize = Number(opts.batchSize);
      if (!Number.isInteger(batchSize) || batchSize < 1)
        throw new CliError('--batch-size must be a positive integer');
      const db = await openDatabase(readConfig());
      const bar = progress(`replay ${name}`, { quiet: opts.json });
      try {
        const started = performance.now();
        const result = await rebuildProjection(
          db.pool,
          projection,
          (position, head) => bar.update(position, head),
          { batchSize },
        );
        bar.stop();
        const seconds = (performance.now() - started) / 1_000;
        emit(
          opts.json,
          {
            projection: name,
            version: projection.version,
            events: result.events,
            position: result.position,
            seconds: Number(seconds.toFixed(3)),
          },
          (r) =>
            `replayed ${r.events} events into ${r.projection} (v${r.version}) up to position ${r.position} in ${r.seconds}s`,
        );
      } finally {
        bar.stop();
        await db.close();
      }
    });
};
