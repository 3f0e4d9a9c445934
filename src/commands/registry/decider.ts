import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import { formatUsd, tryParseUsd } from '../../lib/money.js';
import { checkRateRow, isTokenMeter, type RateRowInput } from '../../pricing/index.js';
import type { Decider } from '../decider.js';
import type { PinnedPrice, RegistryCommand, RegistryEvent } from './events.js';
import { checkAdapter, checkSharedFacts, decideImport } from './import.js';
import {
  cardIdFor,
  evolveLane,
  initialLane,
  type Lane,
  latestRevision,
  sameFacts,
  sameRows,
  winningCard,
} from './state.js';

type UpsertCommand = Extract<RegistryCommand, { type: 'UpsertEndpoint' }>;
type ApproveCommand = Extract<RegistryCommand, { type: 'ApproveRateCards' }>;

/** A hand-written price as a standard-tier row over every prompt size, named as an import names it. */
const pinnedRow = (price: PinnedPrice, param: string): RateRowInput => {
  const modality = isTokenMeter(price.meter) ? price.modality : 'text';
  const row: RateRowInput = {
    row_id: `standard:${price.meter}:${modality}:${price.cache_ttl ?? price.tool_type ?? '-'}:0`,
    tier: 'standard',
    meter: price.meter,
    modality,
    min_context: 0,
    max_context: null,
    cache_ttl: price.cache_ttl,
    tool_type: price.tool_type,
    unit_price: price.unit_price,
  };
  const broken = checkRateRow(row);
  if (broken !== null) throw new ServiceError('bad_request', `${param}: ${broken.message}`, { param });
  const parsed = tryParseUsd(price.unit_price);
  if (!parsed.ok) throw new ServiceError('bad_request', `${param}: ${parsed.error}`, { param });
  return { ...row, unit_price: formatUsd(parsed.value) };
};

const perToken = (meter: 'input_token' | 'output_token', unit_price: string): PinnedPrice => ({
  meter,
  modality: 'text',
  cache_ttl: null,
  tool_type: null,
  unit_price,
});

/** The card's rows: input and output per token, then every extra price; one row per meter key. */
const pinnedRows = (cmd: UpsertCommand): RateRowInput[] => {
  const rows = [
    pinnedRow(perToken('input_token', cmd.data.input_price_per_token), 'input_price_per_token'),
    pinnedRow(perToken('output_token', cmd.data.output_price_per_token), 'output_price_per_token'),
    ...(cmd.data.extra_prices ?? []).map((p) => pinnedRow(p, 'extra_prices')),
  ];
  const seen = new Set<string>();
  for (const row of rows) {
    if (seen.has(row.row_id)) {
      const param = 'extra_prices';
      throw new ServiceError('bad_request', `${param}: ${row.row_id} is priced twice`, { param });
    }
    seen.add(row.row_id);
  }
  return rows;
};

/**
 * SPEC 2.8: an endpoint written by hand is operator-managed with pinned pricing, one per-token
 * price per direction and any other meter the operator prices, open-ended from the command's time.
 * Re-running it unchanged is a no-op.
 */
const upsert = (cmd: UpsertCommand, s: Lane): RegistryEvent[] => {
  const { lane, adapter, endpoint } = cmd.data;
  checkAdapter(s, lane, adapter);
  checkSharedFacts(lane, endpoint, cmd.data.other_lanes);
  const rows = pinnedRows(cmd);
  const events: RegistryEvent[] = [];
  const current = s.endpoints.get(endpoint.model);
  const same =
    current !== undefined &&
    !current.retired &&
    current.managed_by === 'operator' &&
    current.adapter === adapter &&
    sameFacts(current, endpoint);
  if (!same) {
    events.push({
      type: 'EndpointUpserted',
      data: { ...endpoint, lane, adapter, managed_by: 'operator', pricing_pinned: true },
    });
  }
  const existing = s.cards.get(endpoint.model) ?? [];
  const open = { effective_from: cmd.data.effective_from, effective_to: null };
  const winner = winningCard(existing, open);
  // The interval starts at each run's time, so "unchanged" means the card pricing from now on is
  // already open-ended at these prices, not that some card shares this interval.
  if (winner === undefined || winner.effective_to !== null || !sameRows(winner.rows, rows)) {
    const revision = latestRevision(existing) + 1;
    events.push({
      type: 'RateCardActivated',
      data: {
        lane,
        model: endpoint.model,
        card_id: cardIdFor(lane, endpoint.model, revision),
        revision,
        ...open,
        rows,
        needs_approval: false,
        source: 'operator',
      },
    });
  }
  return events;
};

/** Clears the approval flag of every flagged card of the model; nothing flagged is a no-op. */
const approve = (cmd: ApproveCommand, s: Lane): RegistryEvent[] => {
  const { lane, model } = cmd.data;
  if (!s.endpoints.has(model) && !s.cards.has(model)) {
    throw new ServiceError('not_found', `lane ${lane} has no model ${model}`, { param: 'model' });
  }
  return (s.cards.get(model) ?? [])
    .filter((c) => c.needs_approval)
    .map((c) => ({ type: 'RateCardApproved', data: { lane, model, card_id: c.card_id } }));
};

type QuarantineCommand = Extract<RegistryCommand, { type: 'QuarantineEndpoint' | 'UnquarantineEndpoint' }>;

/** SPEC 3: a quarantined endpoint leaves rotation for every tenant until the operator lifts it. */
const quarantine = (cmd: QuarantineCommand, s: Lane): RegistryEvent[] => {
  const { lane, model } = cmd.data;
  const endpoint = s.endpoints.get(model);
  if (endpoint === undefined)
    throw new ServiceError('not_found', `lane ${lane} has no model ${model}`, { param: 'model' });
  if (cmd.type === 'QuarantineEndpoint') {
    return endpoint.quarantined ? [] : [{ type: 'EndpointQuarantined', data: cmd.data }];
  }
  if (!endpoint.quarantined)
    throw new ServiceError('conflict', `${lane}/${model} is not quarantined`, { param: 'model' });
  return [{ type: 'EndpointUnquarantined', data: { lane, model } }];
};

const decide = (cmd: RegistryCommand, s: Lane): RegistryEvent[] => {
  switch (cmd.type) {
    case 'ImportArtifact':
      return decideImport(cmd, s);
    case 'UpsertEndpoint':
      return upsert(cmd, s);
    case 'ApproveRateCards':
      return approve(cmd, s);
    case 'QuarantineEndpoint':
    case 'UnquarantineEndpoint':
      return quarantine(cmd, s);
    default:
      return assertNever(cmd);
  }
};

export const registryDecider: Decider<RegistryCommand, RegistryEvent, Lane> = {
  initialState: initialLane,
  evolve: evolveLane,
  decide,
};
