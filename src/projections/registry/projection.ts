import type { RegistryEvent } from '../../commands/registry/events.js';
import type { StoredEvent } from '../../events/event-store.js';
import type { PoolClient } from '../../events/postgres/pool.js';
import { assertNever } from '../../lib/assert.js';
import { clearReadModel, type Projection } from '../projection.js';

/** The category of every registry stream (`registry-...`). */
export const REGISTRY_CATEGORY = 'registry';

/** When the decision was taken (the command's clock), else when it was stored. */
const decidedAt = (e: StoredEvent): Date =>
  typeof e.metadata.now === 'string' ? new Date(e.metadata.now) : e.recordedAt;

const upsertEndpoint = async (
  client: PoolClient,
  e: StoredEvent,
  d: Extract<RegistryEvent, { type: 'EndpointUpserted' }>['data'],
) => {
  const c = d.capabilities;
  await client.query(
    `INSERT INTO rm_registry_endpoints (lane, model, adapter, provider_model_id, base_url, display_name, family,
       release_date, description, chat, embeddings, responses, images, moderations, tools, streaming, reasoning,
       input_modalities, output_modalities, context_length, max_output_tokens, enabled, retired, managed_by,
       pricing_pinned, position, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
       false, $23, $24, $25, $26)
     ON CONFLICT (lane, model) DO UPDATE SET
       adapter = EXCLUDED.adapter, provider_model_id = EXCLUDED.provider_model_id, base_url = EXCLUDED.base_url,
       display_name = EXCLUDED.display_name, family = EXCLUDED.family, release_date = EXCLUDED.release_date,
       description = EXCLUDED.description, chat = EXCLUDED.chat, embeddings = EXCLUDED.embeddings,
       responses = EXCLUDED.responses, images = EXCLUDED.images, moderations = EXCLUDED.moderations,
       tools = EXCLUDED.tools, streaming = EXCLUDED.streaming, reasoning = EXCLUDED.reasoning,
       input_modalities = EXCLUDED.input_modalities, output_modalities = EXCLUDED.output_modalities,
       context_length = EXCLUDED.context_length, max_output_tokens = EXCLUDED.max_output_tokens,
       enabled = EXCLUDED.enabled, retired = false, managed_by = EXCLUDED.managed_by,
       pricing_pinned = EXCLUDED.pricing_pinned, position = EXCLUDED.position, updated_at = EXCLUDED.updated_at`,
    [
      d.lane,
      d.model,
      d.adapter,
      d.provider_model_id,
      d.base_url,
      d.display_name,
      d.family,
      d.release_date,
      d.description,
      c.chat,
      c.embeddings,
      c.responses,
      c.images,
      c.moderations,
      c.tools,
      c.streaming,
      c.reasoning,
      d.input_modalities,
      d.output_modalities,
      d.context_length,
      d.max_output_tokens,
      d.enabled,
      d.managed_by,
      d.pricing_pinned,
      e.globalPosition,
      decidedAt(e),
    ],
  );
};

const activateCard = async (
  client: PoolClient,
  e: StoredEvent,
  d: Extract<RegistryEvent, { type: 'RateCardActivated' }>['data'],
) => {
  await client.query(
    `INSERT INTO rm_registry_rate_cards (card_id, lane, model, revision, effective_from, effective_to,
       needs_approval, source, activated_at, position)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      d.card_id,
      d.lane,
      d.model,
      d.revision,
      d.effective_from,
      d.effective_to,
      d.needs_approval,
      d.source,
      decidedAt(e),
      e.globalPosition,
    ],
  );
  const r = d.rows;
  await client.query(
    `INSERT INTO rm_registry_rate_rows (card_id, row_id, tier, meter, modality, min_context, max_context,
       cache_ttl, tool_type, unit_price)
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
       $8::text[], $9::text[], $10::text[])`,
    [
      d.card_id,
      r.map((x) => x.row_id),
      r.map((x) => x.tier),
      r.map((x) => x.meter),
      r.map((x) => x.modality),
      r.map((x) => x.min_context),
      r.map((x) => x.max_context),
      r.map((x) => x.cache_ttl),
      r.map((x) => x.tool_type),
      r.map((x) => x.unit_price),
    ],
  );
};

const recordImport = async (
  client: PoolClient,
  e: StoredEvent,
  d: Extract<RegistryEvent, { type: 'ArtifactImported' }>['data'],
) => {
  await client.query(
    `INSERT INTO rm_registry_imports (position, lane, adapter, digest, catalog_file, rates_file, skip_unpriced,
       endpoints_added, endpoints_updated, endpoints_retired, endpoints_unchanged, cards_activated,
       cards_flagged, dropped, skipped_operator, actor, imported_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
    [
      e.globalPosition,
      d.lane,
      d.adapter,
      d.digest,
      d.catalog_file,
      d.rates_file,
      d.skip_unpriced,
      d.endpoints_added,
      d.endpoints_updated,
      d.endpoints_retired,
      d.endpoints_unchanged,
      d.cards_activated,
      d.cards_flagged,
      d.dropped,
      d.skipped_operator,
      typeof e.metadata.actor === 'string' ? e.metadata.actor : null,
      decidedAt(e),
    ],
  );
};

const applyOne = async (client: PoolClient, stored: StoredEvent): Promise<void> => {
  const e = { type: stored.type, data: stored.data } as RegistryEvent;
  switch (e.type) {
    case 'ArtifactImported':
      return recordImport(client, stored, e.data);
    case 'EndpointUpserted':
      return upsertEndpoint(client, stored, e.data);
    case 'EndpointRetired':
      await client.query(
        'UPDATE rm_registry_endpoints SET retired = true, position = $3, updated_at = $4 WHERE lane = $1 AND model = $2',
        [e.data.lane, e.data.model, stored.globalPosition, decidedAt(stored)],
      );
      return;
    case 'RateCardActivated':
      return activateCard(client, stored, e.data);
    case 'EndpointQuarantined':
    case 'EndpointUnquarantined':
      await client.query(
        'UPDATE rm_registry_endpoints SET quarantined = $3, position = $4, updated_at = $5 WHERE lane = $1 AND model = $2',
        [
          e.data.lane,
          e.data.model,
          e.type === 'EndpointQuarantined',
          stored.globalPosition,
          decidedAt(stored),
        ],
      );
      return;
    case 'RateCardApproved':
      await client.query(
        `UPDATE rm_registry_rate_cards SET needs_approval = false, approved_at = $2, approved_by = $3
         WHERE card_id = $1`,
        [
          e.data.card_id,
          decidedAt(stored),
          typeof stored.metadata.actor === 'string' ? stored.metadata.actor : null,
        ],
      );
      return;
    default:
      return assertNever(e);
  }
};

/** Endpoints, rate cards with their rows, and import history of every lane. */
export const registryProjection: Projection = {
  name: 'registry',
  version: 1,
  categories: [REGISTRY_CATEGORY],
  reset: async (client: PoolClient) => {
    await clearReadModel(client, [
      'rm_registry_rate_rows',
      'rm_registry_rate_cards',
      'rm_registry_endpoints',
      'rm_registry_imports',
    ]);
    // The revision only grows, so a snapshot taken before the rebuild is never mistaken for current.
    await client.query('UPDATE rm_registry_state SET revision = revision + 1, position = 0');
  },
  apply: async (client: PoolClient, events: readonly StoredEvent[]) => {
    if (events.length === 0) return;
    for (const e of events) await applyOne(client, e);
    await client.query('UPDATE rm_registry_state SET revision = revision + 1, position = $1', [
      events[events.length - 1]!.globalPosition,
    ]);
  },
};
