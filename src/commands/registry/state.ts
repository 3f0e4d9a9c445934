import { assertNever } from '../../lib/assert.js';
import type { RateRowInput } from '../../pricing/index.js';
import { type Adapter, CAPABILITIES, type EndpointFacts } from '../../providers/endpoint.js';
import type { EndpointUpsertedData, RateCardActivatedData, RegistryEvent } from './events.js';

export type EndpointState = EndpointUpsertedData & { retired: boolean; quarantined: boolean };
export type CardState = RateCardActivatedData;

/** Everything the lane's stream says, folded: the write model of the registry. */
export interface Lane {
  adapter: Adapter | null;
  endpoints: ReadonlyMap<string, EndpointState>;
  /** Every card ever activated, per model, in activation order (revisions ascend). */
  cards: ReadonlyMap<string, readonly CardState[]>;
  lastDigest: string | null;
}

export const initialLane = (): Lane => ({
  adapter: null,
  endpoints: new Map(),
  cards: new Map(),
  lastDigest: null,
});

export const evolveLane = (s: Lane, e: RegistryEvent): Lane => {
  switch (e.type) {
    case 'ArtifactImported':
      return { ...s, adapter: e.data.adapter, lastDigest: e.data.digest };
    case 'EndpointUpserted':
      return {
        ...s,
        adapter: e.data.adapter,
        // A quarantine outlives re-imports and upserts: only the operator's command lifts it.
        endpoints: new Map(s.endpoints).set(e.data.model, {
          ...e.data,
          retired: false,
          quarantined: s.endpoints.get(e.data.model)?.quarantined ?? false,
        }),
      };
    case 'EndpointRetired': {
      const endpoint = s.endpoints.get(e.data.model);
      if (endpoint === undefined) return s;
      return { ...s, endpoints: new Map(s.endpoints).set(e.data.model, { ...endpoint, retired: true }) };
    }
    case 'RateCardActivated':
      return {
        ...s,
        cards: new Map(s.cards).set(e.data.model, [...(s.cards.get(e.data.model) ?? []), e.data]),
      };
    case 'EndpointQuarantined':
    case 'EndpointUnquarantined': {
      const endpoint = s.endpoints.get(e.data.model);
      if (endpoint === undefined) return s;
      const quarantined = e.type === 'EndpointQuarantined';
      return { ...s, endpoints: new Map(s.endpoints).set(e.data.model, { ...endpoint, quarantined }) };
    }
    case 'RateCardApproved': {
      const cards = (s.cards.get(e.data.model) ?? []).map((c) =>
        c.card_id === e.data.card_id ? { ...c, needs_approval: false } : c,
      );
      return { ...s, cards: new Map(s.cards).set(e.data.model, cards) };
    }
    default:
      return assertNever(e);
  }
};

/** Field-by-field, in a fixed order, so two equal facts compare equal however they were built. */
const factsKey = (f: EndpointFacts): string =>
  JSON.stringify([
    f.model,
    f.provider_model_id,
    f.base_url,
    f.display_name,
    f.family,
    f.release_date,
    f.description,
    CAPABILITIES.map((c) => f.capabilities[c]),
    f.input_modalities,
    f.output_modalities,
    f.context_length,
    f.max_output_tokens,
    f.enabled,
  ]);

export const sameFacts = (a: EndpointFacts, b: EndpointFacts): boolean => factsKey(a) === factsKey(b);

const rowsKey = (rows: readonly RateRowInput[]): string =>
  JSON.stringify(
    [...rows]
      .sort((a, b) => (a.row_id < b.row_id ? -1 : a.row_id > b.row_id ? 1 : 0))
      .map((r) => [
        r.row_id,
        r.tier,
        r.meter,
        r.modality,
        r.min_context,
        r.max_context,
        r.cache_ttl,
        r.tool_type,
        r.unit_price,
      ]),
  );

export const sameRows = (a: readonly RateRowInput[], b: readonly RateRowInput[]): boolean =>
  rowsKey(a) === rowsKey(b);

const endMs = (to: string | null): number => (to === null ? Number.POSITIVE_INFINITY : Date.parse(to));

export const intervalsOverlap = (
  a: { effective_from: string; effective_to: string | null },
  b: { effective_from: string; effective_to: string | null },
): boolean =>
  Date.parse(a.effective_from) < endMs(b.effective_to) &&
  Date.parse(b.effective_from) < endMs(a.effective_to);

/**
 * The card that prices (some of) an interval today: the highest revision among the model's cards
 * overlapping it, since pricing picks the highest revision in force.
 */
export const winningCard = (
  cards: readonly CardState[],
  interval: { effective_from: string; effective_to: string | null },
): CardState | undefined => {
  let winner: CardState | undefined;
  for (const card of cards) {
    if (!intervalsOverlap(card, interval)) continue;
    if (winner === undefined || card.revision > winner.revision) winner = card;
  }
  return winner;
};

export const latestRevision = (cards: readonly CardState[]): number =>
  cards.reduce((max, c) => Math.max(max, c.revision), 0);

/** Revisions count per lane and model, so the id is unique and readable in cost-line provenance. */
export const cardIdFor = (lane: string, model: string, revision: number): string =>
  `${lane}/${model}#${revision}`;
