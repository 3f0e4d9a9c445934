import { ServiceError } from '../../lib/errors.js';
import type { Adapter, EndpointFacts } from '../../providers/endpoint.js';
import type {
  Artifact,
  CardSpec,
  ImportCounts,
  RegistryCommand,
  RegistryEvent,
  SharedModelFact,
} from './events.js';
import {
  type CardState,
  cardIdFor,
  type Lane,
  latestRevision,
  sameFacts,
  sameRows,
  winningCard,
} from './state.js';

type ImportCommand = Extract<RegistryCommand, { type: 'ImportArtifact' }>;

export const checkAdapter = (s: Lane, lane: string, adapter: Adapter): void => {
  if (s.adapter !== null && s.adapter !== adapter) {
    throw new ServiceError(
      'bad_request',
      `lane ${lane} is served by the ${s.adapter} adapter, not ${adapter}`,
      {
        param: 'adapter',
      },
    );
  }
};

const sameList = (a: readonly string[], b: readonly string[]) => a.join('|') === b.join('|');

/**
 * SPEC 2.8: reasoning and modalities are model-level facts shared by every lane serving the model;
 * an import (or upsert) that would make them disagree is refused.
 */
export const checkSharedFacts = (
  lane: string,
  facts: EndpointFacts,
  others: readonly SharedModelFact[],
): void => {
  for (const other of others) {
    if (other.lane === lane || other.model !== facts.model) continue;
    const clash =
      other.reasoning !== facts.capabilities.reasoning
        ? { field: 'reasoning', theirs: String(other.reasoning), ours: String(facts.capabilities.reasoning) }
        : !sameList(other.input_modalities, facts.input_modalities)
          ? {
              field: 'input_modalities',
              theirs: other.input_modalities.join('|'),
              ours: facts.input_modalities.join('|'),
            }
          : !sameList(other.output_modalities, facts.output_modalities)
            ? {
                field: 'output_modalities',
                theirs: other.output_modalities.join('|'),
                ours: facts.output_modalities.join('|'),
              }
            : null;
    if (clash !== null) {
      throw new ServiceError(
        'shared_model_capability_change',
        `model ${facts.model}: ${clash.field} ${clash.ours} differs from ${clash.theirs} on lane ${other.lane}, ` +
          'which serves the same model; model-level capabilities are shared by every provider',
        { param: clash.field, details: { model: facts.model, lane: other.lane, field: clash.field } },
      );
    }
  }
};

/** Priced for `--skip-unpriced`: some card of the model has both an input and an output token price. */
const isPriced = (cards: readonly CardSpec[], model: string): boolean =>
  cards.some(
    (c) =>
      c.model === model &&
      c.rows.some((r) => r.meter === 'input_token') &&
      c.rows.some((r) => r.meter === 'output_token'),
  );

/**
 * Cards to activate for one model. A card whose interval is already priced by an equal card (same
 * interval, same rows, highest revision there) is a no-op; otherwise it becomes the next revision,
 * flagged for approval when it replaces prices already in force on an overlapping interval.
 */
export const cardsToActivate = (
  lane: string,
  model: string,
  existing: readonly CardState[],
  wanted: readonly CardSpec[],
  source: CardState['source'],
): CardState[] => {
  const out: CardState[] = [];
  let revision = latestRevision(existing);
  for (const spec of wanted) {
    const winner = winningCard(existing, spec);
    const unchanged =
      winner !== undefined &&
      winner.effective_from === spec.effective_from &&
      winner.effective_to === spec.effective_to &&
      sameRows(winner.rows, spec.rows);
    if (unchanged) continue;
    revision += 1;
    out.push({
      lane,
      model,
      card_id: cardIdFor(lane, model, revision),
      revision,
      effective_from: spec.effective_from,
      effective_to: spec.effective_to,
      rows: spec.rows,
      needs_approval: source === 'import' && winner !== undefined,
      source,
    });
  }
  return out;
};

const selectModels = (artifact: Artifact, skipUnpriced: boolean) => {
  if (!skipUnpriced) return { kept: artifact.endpoints, dropped: [] as string[] };
  const kept = artifact.endpoints.filter((e) => isPriced(artifact.cards, e.model));
  const dropped = artifact.endpoints.filter((e) => !isPriced(artifact.cards, e.model)).map((e) => e.model);
  return { kept, dropped: dropped.sort() };
};

export type ImportSummary = Extract<RegistryEvent, { type: 'ArtifactImported' }>['data'];

/**
 * Applies an artifact to a lane by difference: only what changed becomes an event. Models absent
 * from the artifact are retired unless an operator manages them; operator-managed models in the
 * artifact are left as the operator wrote them.
 */
export const planImport = (
  cmd: ImportCommand,
  s: Lane,
): { changes: RegistryEvent[]; summary: ImportSummary } => {
  const { lane, adapter, artifact, skip_unpriced } = cmd.data;
  checkAdapter(s, lane, adapter);
  const { kept, dropped } = selectModels(artifact, skip_unpriced);
  const isOperator = (model: string) => s.endpoints.get(model)?.managed_by === 'operator';
  const imported = kept.filter((e) => !isOperator(e.model));
  const skippedOperator = kept.filter((e) => isOperator(e.model)).map((e) => e.model);
  for (const facts of imported) checkSharedFacts(lane, facts, cmd.data.other_lanes);

  const counts: ImportCounts = {
    endpoints_added: 0,
    endpoints_updated: 0,
    endpoints_retired: 0,
    endpoints_unchanged: 0,
    cards_activated: 0,
    cards_flagged: 0,
  };
  const changes: RegistryEvent[] = [];
  for (const facts of imported) {
    const current = s.endpoints.get(facts.model);
    if (
      current !== undefined &&
      !current.retired &&
      current.adapter === adapter &&
      sameFacts(current, facts)
    ) {
      counts.endpoints_unchanged += 1;
      continue;
    }
    if (current === undefined || current.retired) counts.endpoints_added += 1;
    else counts.endpoints_updated += 1;
    changes.push({
      type: 'EndpointUpserted',
      data: { ...facts, lane, adapter, managed_by: 'import', pricing_pinned: false },
    });
  }
  const present = new Set(kept.map((e) => e.model));
  for (const [model, endpoint] of s.endpoints) {
    if (endpoint.retired || endpoint.managed_by === 'operator' || present.has(model)) continue;
    counts.endpoints_retired += 1;
    changes.push({ type: 'EndpointRetired', data: { lane, model, reason: 'absent_from_import' } });
  }
  for (const facts of imported) {
    const wanted = artifact.cards.filter((c) => c.model === facts.model);
    for (const card of cardsToActivate(lane, facts.model, s.cards.get(facts.model) ?? [], wanted, 'import')) {
      counts.cards_activated += 1;
      if (card.needs_approval) counts.cards_flagged += 1;
      changes.push({ type: 'RateCardActivated', data: card });
    }
  }
  const summary: ImportSummary = {
    lane,
    adapter,
    digest: artifact.digest,
    catalog_file: artifact.catalog_file,
    rates_file: artifact.rates_file,
    skip_unpriced,
    ...counts,
    dropped,
    skipped_operator: skippedOperator.sort(),
  };
  return { changes, summary };
};

/** Re-applying the artifact last applied, with nothing to change, appends nothing at all. */
export const decideImport = (cmd: ImportCommand, s: Lane): RegistryEvent[] => {
  const { changes, summary } = planImport(cmd, s);
  if (changes.length === 0 && s.lastDigest === summary.digest) return [];
  return [...changes, { type: 'ArtifactImported', data: summary }];
};
