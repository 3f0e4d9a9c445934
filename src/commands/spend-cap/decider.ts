import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import { formatUsd, tryParseUsd } from '../../lib/money.js';

import type { SpendCapCommand, SpendCapEvent, SpendCapLevel } from './events.js';

/**
 * The spend-cap rule the organization, project and API-key deciders share (events in events.ts).
 * A cap of 0 freezes paid traffic; a request is refused once the month-to-date spend (UTC calendar
 * month) is at or above the cap.
 */

// The gateway's spend-cap cache (src/gateway/spend-caps.ts) names the level type from here.
export type { SpendCapLevel } from './events.js';

/** A trillion dollars a month: anything above is a typo, not a budget. */
const MAX_CAP = 10n ** 12n * 10n ** 18n;

/** The canonical decimal of a cap, or a 400 naming monthly_usd. */
export const parseMonthlyCap = (raw: string): string => {
  const parsed = tryParseUsd(raw);
  if (!parsed.ok || parsed.value < 0n || parsed.value > MAX_CAP)
    throw new ServiceError(
      'bad_request',
      'monthly_usd must be a decimal string of US dollars from 0 to 1000000000000, at most 18 decimals (e.g. "250.00")',
      { param: 'monthly_usd' },
    );
  return formatUsd(parsed.value);
};

/** The decision shared by the three aggregates; `current` is the cap in force (canonical) or null. */
export const decideSpendCap = (cmd: SpendCapCommand, current: string | null): SpendCapEvent[] => {
  switch (cmd.type) {
    case 'SetSpendCap': {
      const monthly = parseMonthlyCap(cmd.monthlyUsd);
      if (monthly === current) return [];
      return [
        {
          type: 'SpendCapSet',
          data: { level: cmd.level, org_id: cmd.orgId, workspace_id: cmd.workspaceId, monthly_usd: monthly },
        },
      ];
    }
    case 'ClearSpendCap':
      if (current === null) throw new ServiceError('not_found', `no spend cap is set on this ${cmd.level}`);
      return [{ type: 'SpendCapCleared', data: { level: cmd.level } }];
    default:
      return assertNever(cmd);
  }
};

export const evolveSpendCap = (_current: string | null, e: SpendCapEvent): string | null => {
  switch (e.type) {
    case 'SpendCapSet':
      return e.data.monthly_usd;
    case 'SpendCapCleared':
      return null;
    default:
      return assertNever(e);
  }
};

/** How a caller changes a cap: a new monthly amount, or clear it. */
export type SpendCapChange = { monthlyUsd: unknown } | 'clear';

/** A 400 unless a new cap arrives as a decimal string; the decider then checks its value. */
export const checkSpendCapChange = (change: SpendCapChange): void => {
  if (change !== 'clear' && typeof change.monthlyUsd !== 'string')
    throw new ServiceError('bad_request', 'monthly_usd must be a decimal string such as "250.00"', {
      param: 'monthly_usd',
    });
};

/** The cap command of one capped aggregate, placed in its organization and workspace. */
export const spendCapCommand = (
  level: SpendCapLevel,
  owner: { org_id: string; workspace_id: string },
  change: SpendCapChange,
): SpendCapCommand =>
  change === 'clear'
    ? { type: 'ClearSpendCap', level }
    : {
        type: 'SetSpendCap',
        level,
        orgId: owner.org_id,
        workspaceId: owner.workspace_id,
        monthlyUsd: change.monthlyUsd as string,
      };
