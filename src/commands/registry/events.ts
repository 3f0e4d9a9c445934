import type { Meter, Modality, RateRowInput } from '../../pricing/index.js';
import type { Adapter, EndpointFacts, ManagedBy } from '../../providers/endpoint.js';

/**
 * The registry aggregate: one stream per lane (`registry-<lane>`). A lane is one upstream
 * environment served by one adapter; a second environment of the same provider is a second lane
 * with its own name, credentials, prices and import history (SPEC 4.7).
 */

/** Lane names appear in `lane/model` selectors and stream ids: no slash, no spaces, lower case. */
export const LANE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const registryStream = (lane: string): string => `registry-${lane}`;

/** One rate card of an artifact before the aggregate numbers it: rows hold exact per-unit prices. */
export interface CardSpec {
  model: string;
  effective_from: string;
  effective_to: string | null;
  rows: RateRowInput[];
}

export interface Artifact {
  /** `sha256:` over the catalog and rates bytes: the same files are the same artifact. */
  digest: string;
  catalog_file: string;
  rates_file: string;
  endpoints: EndpointFacts[];
  cards: CardSpec[];
}

/** Model-level facts another lane serves, read before deciding so the decider stays pure. */
export interface SharedModelFact {
  lane: string;
  model: string;
  reasoning: boolean;
  input_modalities: Modality[];
  output_modalities: Modality[];
}

/** One hand-written price beside the two per-token ones (`svc registry upsert --price`). */
export interface PinnedPrice {
  meter: Meter;
  modality: Modality;
  /** Only on cache_write_token: the cache lifetime it prices; null prices every lifetime. */
  cache_ttl: string | null;
  /** Only (and always) on tool_call. */
  tool_type: string | null;
  /** USD per unit (per token on token meters), as an exact decimal string. */
  unit_price: string;
}

export type RegistryCommand =
  | {
      type: 'ImportArtifact';
      data: {
        lane: string;
        adapter: Adapter;
        artifact: Artifact;
        skip_unpriced: boolean;
        other_lanes: SharedModelFact[];
      };
    }
  | {
      type: 'UpsertEndpoint';
      data: {
        lane: string;
        adapter: Adapter;
        endpoint: EndpointFacts;
        input_price_per_token: string;
        output_price_per_token: string;
        /**
         * Every other meter the operator prices by hand (cache reads and writes, audio, per request,
         * per tool call), in the standard tier over every prompt size: the same rows an imported card
         * would hold (SPEC 2.8).
         */
        extra_prices?: PinnedPrice[];
        /** When the pinned prices start; the command's decision time. */
        effective_from: string;
        other_lanes: SharedModelFact[];
      };
    }
  | { type: 'ApproveRateCards'; data: { lane: string; model: string } }
  | { type: 'QuarantineEndpoint'; data: QuarantineEvidence & { lane: string; model: string } }
  | { type: 'UnquarantineEndpoint'; data: { lane: string; model: string } };

/** What the billing-health evaluator saw in its window when it quarantined (SPEC 3). */
export interface QuarantineEvidence {
  failures: number;
  /** Priced plus failed requests in the window. */
  total: number;
  window_minutes: number;
  min_failures: number;
  min_ratio_bps: number;
}

export interface ImportCounts {
  endpoints_added: number;
  endpoints_updated: number;
  endpoints_retired: number;
  endpoints_unchanged: number;
  cards_activated: number;
  cards_flagged: number;
}

export type EndpointUpsertedData = EndpointFacts & {
  lane: string;
  adapter: Adapter;
  managed_by: ManagedBy;
  pricing_pinned: boolean;
};

export interface RateCardActivatedData {
  lane: string;
  model: string;
  card_id: string;
  revision: number;
  effective_from: string;
  effective_to: string | null;
  rows: RateRowInput[];
  /** Set when the card replaces prices already in force on an overlapping interval. */
  needs_approval: boolean;
  source: ManagedBy;
}

export type RegistryEvent =
  | {
      type: 'ArtifactImported';
      data: ImportCounts & {
        lane: string;
        adapter: Adapter;
        digest: string;
        catalog_file: string;
        rates_file: string;
        skip_unpriced: boolean;
        /** Models `--skip-unpriced` left out for lack of an input_token and an output_token price. */
        dropped: string[];
        /** Models in the artifact that an operator manages on this lane: the import leaves them. */
        skipped_operator: string[];
      };
    }
  | { type: 'EndpointUpserted'; data: EndpointUpsertedData }
  | { type: 'EndpointRetired'; data: { lane: string; model: string; reason: 'absent_from_import' } }
  | { type: 'RateCardActivated'; data: RateCardActivatedData }
  | { type: 'RateCardApproved'; data: { lane: string; model: string; card_id: string } }
  | { type: 'EndpointQuarantined'; data: QuarantineEvidence & { lane: string; model: string } }
  | { type: 'EndpointUnquarantined'; data: { lane: string; model: string } };

export type RegistryEventType = RegistryEvent['type'];
