import type { EventStore } from '../../events/event-store.js';
import type { Adapter, EndpointFacts } from '../../providers/endpoint.js';
import type { CommandContext } from '../decider.js';
import { type HandleResult, handleCommand } from '../handler.js';
import { registryDecider } from './decider.js';
import {
  type Artifact,
  type PinnedPrice,
  type RegistryCommand,
  type RegistryEvent,
  registryStream,
  type SharedModelFact,
} from './events.js';
import { type ImportSummary, planImport } from './import.js';
import type { Lane } from './state.js';

/**
 * Where the handler learns what other lanes say about a model. The registry read model answers
 * it (src/projections/registry/queries.ts); the decider only ever sees the answer.
 */
export type SharedFactsSource = (models: readonly string[], exceptLane: string) => Promise<SharedModelFact[]>;

/** A concurrent write to the same lane re-decides against the new state instead of failing. */
const RETRIES = 3;

export type RegistryResult = HandleResult<RegistryEvent, Lane>;
type ImportCommand = Extract<RegistryCommand, { type: 'ImportArtifact' }>;

export const importArtifact = async (
  store: EventStore,
  sharedFacts: SharedFactsSource,
  input: { lane: string; adapter: Adapter; artifact: Artifact; skipUnpriced: boolean },
  context: CommandContext,
): Promise<RegistryResult & { summary: ImportSummary }> => {
  const models = input.artifact.endpoints.map((e) => e.model);
  const command: ImportCommand = {
    type: 'ImportArtifact',
    data: {
      lane: input.lane,
      adapter: input.adapter,
      artifact: input.artifact,
      skip_unpriced: input.skipUnpriced,
      other_lanes: await sharedFacts(models, input.lane),
    },
  };
  const result = await handleCommand(store, registryDecider, registryStream(input.lane), command, context, {
    retries: RETRIES,
  });
  const imported = result.events.find((e) => e.type === 'ArtifactImported');
  // Nothing appended: the plan against the current state says what the artifact would have done.
  const summary =
    imported?.type === 'ArtifactImported' ? imported.data : planImport(command, result.state).summary;
  return { ...result, summary };
};

export const upsertEndpoint = async (
  store: EventStore,
  sharedFacts: SharedFactsSource,
  input: {
    lane: string;
    adapter: Adapter;
    endpoint: EndpointFacts;
    inputPricePerToken: string;
    outputPricePerToken: string;
    extraPrices?: PinnedPrice[];
  },
  context: CommandContext,
): Promise<RegistryResult> => {
  const other_lanes = await sharedFacts([input.endpoint.model], input.lane);
  return handleCommand(
    store,
    registryDecider,
    registryStream(input.lane),
    {
      type: 'UpsertEndpoint',
      data: {
        lane: input.lane,
        adapter: input.adapter,
        endpoint: input.endpoint,
        input_price_per_token: input.inputPricePerToken,
        output_price_per_token: input.outputPricePerToken,
        ...(input.extraPrices?.length ? { extra_prices: input.extraPrices } : {}),
        effective_from: context.now,
        other_lanes,
      },
    },
    context,
    { retries: RETRIES },
  );
};

export const approveRateCards = (
  store: EventStore,
  input: { lane: string; model: string },
  context: CommandContext,
): Promise<RegistryResult> =>
  handleCommand(
    store,
    registryDecider,
    registryStream(input.lane),
    { type: 'ApproveRateCards', data: input },
    context,
    { retries: RETRIES },
  );

/** Billing-health quarantine (SPEC 3) and the operator's `svc models unquarantine`. */
export const setQuarantine = (
  store: EventStore,
  command: Extract<RegistryCommand, { type: 'QuarantineEndpoint' | 'UnquarantineEndpoint' }>,
  context: CommandContext,
): Promise<RegistryResult> =>
  handleCommand(store, registryDecider, registryStream(command.data.lane), command, context, {
    retries: RETRIES,
  });
