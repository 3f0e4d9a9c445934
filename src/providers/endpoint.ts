import type { CompiledRateCard, Meter, Modality } from '../pricing/index.js';

/**
 * What an upstream offers, in the words every floor uses: the adapter ids, the capabilities a
 * catalog row states (SPEC 2.8), an endpoint's facts, and the endpoint as the gateway routes it.
 * The registry aggregate records these facts; the providers, the selector and the query side read
 * them.
 */

export const ADAPTERS = ['openai', 'anthropic', 'bedrock', 'bedrock-gov', 'azure', 'azure-gov'] as const;
export type Adapter = (typeof ADAPTERS)[number];

export const isAdapter = (value: string): value is Adapter => (ADAPTERS as readonly string[]).includes(value);

export const CAPABILITIES = [
  'chat',
  'embeddings',
  'responses',
  'images',
  'moderations',
  'tools',
  'streaming',
  'reasoning',
] as const;
export type Capability = (typeof CAPABILITIES)[number];
export type Capabilities = Record<Capability, boolean>;

export type ManagedBy = 'import' | 'operator';

/**
 * Meters, beside input and output tokens, that an adapter's replies report as the translation reads
 * them (SPEC 4.1 rule 10): prompt-cache reads on the chat-completions wire (`cached_tokens`), reads
 * and writes on the messages wire. A card that leaves one unpriced fails billing on every reply
 * that reports it, and billing health then quarantines the endpoint (SPEC 3).
 */
export const REPORTED_METERS: Readonly<Record<Adapter, readonly Meter[]>> = {
  openai: ['cache_read_token'],
  anthropic: ['cache_read_token', 'cache_write_token'],
  bedrock: [],
  'bedrock-gov': [],
  azure: ['cache_read_token'],
  'azure-gov': ['cache_read_token'],
};

/** The reported meters of `adapter` that no row prices (at any tier, modality or prompt size). */
export const unpricedMeters = (adapter: Adapter, priced: readonly string[]): Meter[] =>
  REPORTED_METERS[adapter].filter((meter) => !priced.includes(meter));

/** What a catalog row (or the upsert command) says about one model on one lane. */
export interface EndpointFacts {
  model: string;
  provider_model_id: string;
  /** Lane default origin from the catalog; null when absent or `https://unused.invalid`. */
  base_url: string | null;
  display_name: string;
  family: string;
  release_date: string | null;
  description: string;
  capabilities: Capabilities;
  input_modalities: Modality[];
  output_modalities: Modality[];
  /** Null only on operator upserts that did not state it; an import always has one. */
  context_length: number | null;
  max_output_tokens: number | null;
  enabled: boolean;
}

/** SPEC 2.8: the catalog's way of saying "this lane has no default origin". */
export const NO_BASE_URL = 'https://unused.invalid';

/** An endpoint as the gateway routes it: its facts, its state, and its compiled rate cards. */
export type RegistryEndpoint = Readonly<EndpointFacts> & {
  readonly lane: string;
  readonly adapter: Adapter;
  readonly retired: boolean;
  readonly quarantined: boolean;
  readonly managed_by: ManagedBy;
  readonly pricing_pinned: boolean;
  /** Every card of the endpoint (all revisions and intervals); pricing picks by time and revision. */
  readonly cards: readonly CompiledRateCard[];
  /**
   * The tenant connection a model selector named for this candidate (SPEC 5: names other than
   * primary are routed only when a selector targets them). Absent on registry endpoints: the
   * project's primary connection of the lane, else the lane's platform key.
   */
  readonly connection?: string;
};
