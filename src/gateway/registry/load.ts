import type { Pool } from '../../events/postgres/pool.js';
import type { Meter, Modality, RateCardInput, RateRowInput } from '../../pricing/index.js';
import type { Adapter, ManagedBy } from '../../providers/endpoint.js';
import {
  buildRegistrySnapshot,
  type EndpointRecord,
  laneModelKey,
  type RegistrySnapshot,
} from './snapshot.js';

interface EndpointRow {
  lane: string;
  model: string;
  adapter: Adapter;
  provider_model_id: string;
  base_url: string | null;
  display_name: string;
  family: string;
  release_date: string | null;
  description: string;
  chat: boolean;
  embeddings: boolean;
  responses: boolean;
  images: boolean;
  moderations: boolean;
  tools: boolean;
  streaming: boolean;
  reasoning: boolean;
  input_modalities: Modality[];
  output_modalities: Modality[];
  context_length: number | null;
  max_output_tokens: number | null;
  enabled: boolean;
  retired: boolean;
  quarantined: boolean;
  managed_by: ManagedBy;
  pricing_pinned: boolean;
}

interface CardRow {
  card_id: string;
  lane: string;
  model: string;
  revision: number;
  effective_from: string;
  effective_to: string | null;
}

type RateRow = RateRowInput & { card_id: string; meter: Meter; modality: Modality };

const toRecord = (r: EndpointRow): EndpointRecord => ({
  lane: r.lane,
  adapter: r.adapter,
  model: r.model,
  provider_model_id: r.provider_model_id,
  base_url: r.base_url,
  display_name: r.display_name,
  family: r.family,
  release_date: r.release_date,
  description: r.description,
  capabilities: {
    chat: r.chat,
    embeddings: r.embeddings,
    responses: r.responses,
    images: r.images,
    moderations: r.moderations,
    tools: r.tools,
    streaming: r.streaming,
    reasoning: r.reasoning,
  },
  input_modalities: r.input_modalities,
  output_modalities: r.output_modalities,
  context_length: r.context_length,
  max_output_tokens: r.max_output_tokens,
  enabled: r.enabled,
  retired: r.retired,
  quarantined: r.quarantined,
  managed_by: r.managed_by,
  pricing_pinned: r.pricing_pinned,
});

const pushTo = <T>(map: Map<string, T[]>, key: string, value: T): void => {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
};

/** The revision of the registry read model: it moves with every applied registry event. */
export const registryRevision = async (pool: Pool): Promise<number> =>
  (await pool.query<{ revision: number }>('SELECT revision FROM rm_registry_state WHERE singleton')).rows[0]
    ?.revision ?? 0;

/** Reads the whole registry read model in one snapshot-isolated transaction and compiles it. */
export const loadRegistrySnapshot = async (pool: Pool): Promise<RegistrySnapshot> => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const revision =
      (await client.query<{ revision: number }>('SELECT revision FROM rm_registry_state WHERE singleton'))
        .rows[0]?.revision ?? 0;
    const endpoints = await client.query<EndpointRow>('SELECT * FROM rm_registry_endpoints');
    const cards = await client.query<CardRow>(
      'SELECT card_id, lane, model, revision, effective_from, effective_to FROM rm_registry_rate_cards',
    );
    const rows = await client.query<RateRow>(
      `SELECT card_id, row_id, tier, meter, modality, min_context, max_context, cache_ttl, tool_type, unit_price
         FROM rm_registry_rate_rows`,
    );
    await client.query('COMMIT');

    const rowsByCard = new Map<string, RateRowInput[]>();
    for (const { card_id, ...row } of rows.rows) pushTo(rowsByCard, card_id, row);
    const cardsByEndpoint = new Map<string, RateCardInput[]>();
    for (const c of cards.rows) {
      pushTo(cardsByEndpoint, laneModelKey(c.lane, c.model), {
        card_id: c.card_id,
        model: c.model,
        revision: c.revision,
        effective_from: c.effective_from,
        effective_to: c.effective_to,
        rows: rowsByCard.get(c.card_id) ?? [],
      });
    }
    return buildRegistrySnapshot({
      revision,
      endpoints: endpoints.rows.map(toRecord),
      cards: cardsByEndpoint,
    });
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
};
