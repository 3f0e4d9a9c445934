import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import { formatUsd, tryParseUsd } from '../../lib/money.js';

/**
 * Monthly USD spend caps (issue 13 item 5). A cap belongs to the organization, project or API key it
 * limits, so its events live in that aggregate's stream (`org-…`, `project-…`, `apikey-…`) and the
 * three deciders share this one rule. A cap of 0 freezes paid traffic; a request is refused once
 * the month-to-date spend (UTC calendar month) is at or above the cap.
 */

export type SpendCapLevel = 'org' | 'project' | 'api_key';
export const SPEND_CAP_LEVELS: readonly SpendCapLevel[] = ['org', 'project', 'api_key'];

export type SpendCapEvent =
  | {
      type: 'SpendCapSet';
      data: { level: SpendCapLevel; org_id: string; workspace_id: string; monthly_usd: string };
    }
  | { type: 'SpendCapCleared'; data: { level: SpendCapLevel } };

export type SpendCapCommand =
  | { type: 'SetSpendCap'; level: SpendCapLevel; orgId: string; workspaceId: string; monthlyUsd: string }
  | { type: 'ClearSpendCap'; level: SpendCapLevel };

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
