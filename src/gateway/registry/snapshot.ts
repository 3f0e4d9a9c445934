import {
  type CompiledRateCard,
  compileRateCard,
  RateCardError,
  type RateCardInput,
  selectRateCard,
} from '../../pricing/index.js';
import type { RegistryEndpoint } from '../../providers/endpoint.js';

/**
 * The registry as the gateway sees it: every endpoint with its compiled rate cards, held in memory
 * so the request path reads no database (ARCHITECTURE.md "The request path"). Built from the
 * registry read model by `loadRegistrySnapshot`, kept fresh by `RegistrySnapshotCache`.
 */

/** A read-model row before its cards are compiled. */
export type EndpointRecord = Omit<RegistryEndpoint, 'cards'>;

export interface RegistrySnapshotData {
  /** rm_registry_state.revision the rows were read at. */
  revision: number;
  endpoints: readonly EndpointRecord[];
  /** Cards keyed by `lane/model`. */
  cards: ReadonlyMap<string, readonly RateCardInput[]>;
}

export interface RegistrySnapshot {
  readonly revision: number;
  /** Every endpoint, routable or not, by lane then model. */
  readonly endpoints: readonly RegistryEndpoint[];
  /** Cards the engine refused to compile, named; their endpoints price as if the card were absent. */
  readonly problems: readonly string[];
  /**
   * Routable candidates for a request's model selector: the endpoints serving the canonical model
   * id, or else the one endpoint named `lane/model` (SPEC 4.1 provider-pinned ids).
   */
  candidates(selector: string, atMs?: number): RegistryEndpoint[];
  /** Routable endpoints serving a canonical model id, by lane. */
  byModel(model: string, atMs?: number): RegistryEndpoint[];
  /** The routable endpoint of `lane` for `model`, if any. */
  byLaneModel(lane: string, model: string, atMs?: number): RegistryEndpoint | undefined;
  /** An endpoint whatever its state (retired, disabled, quarantined, unpriced). */
  find(lane: string, model: string): RegistryEndpoint | undefined;
  /** The card in force for the endpoint at `atMs` (highest revision whose interval holds it). */
  cardAt(endpoint: RegistryEndpoint, atMs?: number): CompiledRateCard | undefined;
  /** Enabled, not retired, not quarantined, and priced at `atMs`. */
  isRoutable(endpoint: RegistryEndpoint, atMs?: number): boolean;
  /** Every routable endpoint at `atMs` (the /v1/models listing before visibility filters). */
  routable(atMs?: number): RegistryEndpoint[];
}

export const laneModelKey = (lane: string, model: string): string => `${lane}/${model}`;

const compileAll = (inputs: readonly RateCardInput[], problems: string[]): readonly CompiledRateCard[] => {
  const out: CompiledRateCard[] = [];
  for (const input of inputs) {
    try {
      out.push(compileRateCard(input));
    } catch (err) {
      if (!(err instanceof RateCardError)) throw err;
      problems.push(`${input.card_id}: ${err.message}`);
    }
  }
  return Object.freeze(out);
};

export const buildRegistrySnapshot = (data: RegistrySnapshotData): RegistrySnapshot => {
  const problems: string[] = [];
  const endpoints = data.endpoints
    .map(
      (record): RegistryEndpoint =>
        Object.freeze({
          ...record,
          cards: compileAll(data.cards.get(laneModelKey(record.lane, record.model)) ?? [], problems),
        }),
    )
    .sort((a, b) => (a.lane === b.lane ? cmp(a.model, b.model) : cmp(a.lane, b.lane)));
  const byLane = new Map(endpoints.map((e) => [laneModelKey(e.lane, e.model), e]));
  const byModel = new Map<string, RegistryEndpoint[]>();
  for (const e of endpoints) {
    const list = byModel.get(e.model);
    if (list === undefined) byModel.set(e.model, [e]);
    else list.push(e);
  }

  const cardAt = (endpoint: RegistryEndpoint, atMs = Date.now()) => selectRateCard(endpoint.cards, atMs);
  const isRoutable = (e: RegistryEndpoint, atMs = Date.now()) =>
    e.enabled && !e.retired && !e.quarantined && cardAt(e, atMs) !== undefined;
  const routableOf = (list: readonly RegistryEndpoint[] | undefined, atMs?: number) =>
    (list ?? []).filter((e) => isRoutable(e, atMs));
  const byLaneModel = (lane: string, model: string, atMs?: number) => {
    const e = byLane.get(laneModelKey(lane, model));
    return e !== undefined && isRoutable(e, atMs) ? e : undefined;
  };

  return Object.freeze({
    revision: data.revision,
    endpoints: Object.freeze(endpoints),
    problems: Object.freeze(problems),
    candidates: (selector: string, atMs?: number) => {
      // A canonical id wins over a `lane/model` reading of the same text: canonical ids may hold '/'.
      if (byModel.has(selector)) return routableOf(byModel.get(selector), atMs);
      const slash = selector.indexOf('/');
      if (slash <= 0) return [];
      const pinned = byLaneModel(selector.slice(0, slash), selector.slice(slash + 1), atMs);
      return pinned === undefined ? [] : [pinned];
    },
    byModel: (model: string, atMs?: number) => routableOf(byModel.get(model), atMs),
    byLaneModel,
    find: (lane: string, model: string) => byLane.get(laneModelKey(lane, model)),
    cardAt,
    isRoutable,
    routable: (atMs?: number) => routableOf(endpoints, atMs),
  });
};

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const EMPTY_REGISTRY: RegistrySnapshot = buildRegistrySnapshot({
  revision: -1,
  endpoints: [],
  cards: new Map(),
});
