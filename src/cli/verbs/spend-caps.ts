import type { Command } from 'commander';
import type { SpendCapLevel } from '../../commands/spend-cap/events.js';
import { emit, table } from '../output.js';
import { type OwnerFlags, ownerOf, withOwnerFlags } from './owner-flags.js';
import { withControlPlane } from './tenancy.js';

const cli = { id: 'cli' };

type TargetFlags = OwnerFlags;

const targetOf = (o: TargetFlags): { level: SpendCapLevel; id: string } => {
  const { scope, id } = ownerOf(o);
  return { level: scope, id };
};

const withTarget = (cmd: Command) => withOwnerFlags(cmd, 'cap');

export const registerSpendCapCommands = (program: Command): void => {
  const caps = program
    .command('spend-caps')
    .description(
      'monthly USD spend caps per organization, project or API key: at or over its cap (UTC month to date) the gateway refuses with spend_cap_exceeded and calls no upstream',
    );
  withTarget(
    caps
      .command('set')
      .description('set (or change) a monthly cap; 0 refuses all priced traffic')
      .requiredOption('--monthly-usd <amount>', 'exact decimal US dollars, e.g. 250.00'),
  ).action(async (opts: TargetFlags & { monthlyUsd: string; json?: boolean }) => {
    const target = targetOf(opts);
    const cap = await withControlPlane(async (cp) => {
      await cp.setSpendCap(cli, target, { monthlyUsd: opts.monthlyUsd });
      return cp.reads.spendCap(target.level, target.id);
    });
    emit(opts.json, cap, (c) => `${target.level} ${target.id}: monthly cap ${c?.monthly_usd} USD`);
  });
  withTarget(caps.command('clear').description('remove a cap')).action(
    async (opts: TargetFlags & { json?: boolean }) => {
      const target = targetOf(opts);
      await withControlPlane((cp) => cp.setSpendCap(cli, target, 'clear'));
      emit(
        opts.json,
        { level: target.level, target_id: target.id, cleared: true },
        () => `${target.level} ${target.id}: cap cleared`,
      );
    },
  );
  caps
    .command('show')
    .description('list caps, all of them or those of one organization')
    .option('--org <org_id>', 'only this organization (its own cap and those of its projects and keys)')
    .option('--json', 'print JSON')
    .action(async (opts: { org?: string; json?: boolean }) => {
      const rows = await withControlPlane((cp) => cp.reads.spendCaps(opts.org ? { orgId: opts.org } : {}));
      emit(opts.json, { data: rows }, (r) =>
        r.data.length === 0
          ? 'no spend caps'
          : table(r.data as unknown as Record<string, unknown>[], [
              'level',
              'target_id',
              'org_id',
              'monthly_usd',
              'updated_at',
              'updated_by',
            ]),
      );
    });
};
