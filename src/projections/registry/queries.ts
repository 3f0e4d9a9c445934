import type { LiveEndpoints } from '../../commands/connections/ports.js';
import type { SharedFactsSource } from '../../commands/registry/handler.js';
import type { Pool } from '../../events/postgres/pool.js';
import type { Meter, Modality } from '../../pricing/index.js';
import { isAdapter, unpricedMeters } from '../../providers/endpoint.js';
import { runBatch } from '../runner.js';
import { registryProjection } from './projection.js';

/**
 * Brings the registry read model to the event store's head from the calling process. Operator
 * commands call it after writing, so what they print (and the next command reads) is current
 * whether or not a projector role is running; the checkpoint lock keeps two runners apart.
 */
export const catchUpRegistry = async (pool: Pool, onProgress?: (position: number) => void): Promise<void> => {
  for (;;) {
    const r = await runBatch(pool, registryProjection);
    onProgress?.(r.position);
    if (r.applied === 0) return;
  }
};

/** Model-level facts of non-retired endpoints on other lanes (SPEC 2.8 shared capabilities). */
export const sharedFactsFrom =
  (pool: Pool): SharedFactsSource =>
  async (models, exceptLane) => {
    if (models.length === 0) return [];
    const { rows } = await pool.query<{
      lane: string;
      model: string;
      reasoning: boolean;
      input_modalities: Modality[];
      output_modalities: Modality[];
    }>(
      `SELECT lane, model, reasoning, input_modalities, output_modalities FROM rm_registry_endpoints
       WHERE model = ANY($1) AND lane <> $2 AND NOT retired ORDER BY model, lane`,
      [models, exceptLane],
    );
    return rows;
  };

export interface EndpointListing {
  lane: string;
  adapter: string;
  model: string;
  provider_model_id: string;
  enabled: boolean;
  retired: boolean;
  quarantined: boolean;
  managed_by: string;
  pricing_pinned: boolean;
  /** Latest revision's card, whatever its interval; null when the endpoint has no price at all. */
  card_id: string | null;
  revision: number | null;
  needs_approval: boolean;
  /**
   * Meters the adapter's replies report that the latest card does not price: each such reply fails
   * billing (missing_price) and billing health quarantines the endpoint (SPEC 3).
   */
  unpriced_meters: Meter[];
}

export const listEndpoints = async (pool: Pool, lane?: string): Promise<EndpointListing[]> => {
  const { rows } = await pool.query<Omit<EndpointListing, 'unpriced_meters'> & { priced: string[] }>(
    `SELECT e.lane, e.adapter, e.model, e.provider_model_id, e.enabled, e.retired, e.quarantined, e.managed_by,
            e.pricing_pinned, c.card_id, c.revision,
            EXISTS (SELECT 1 FROM rm_registry_rate_cards f
                    WHERE f.lane = e.lane AND f.model = e.model AND f.needs_approval) AS needs_approval,
            ARRAY(SELECT DISTINCT meter FROM rm_registry_rate_rows r WHERE r.card_id = c.card_id) AS priced
       FROM rm_registry_endpoints e
       LEFT JOIN LATERAL (SELECT card_id, revision FROM rm_registry_rate_cards r
                           WHERE r.lane = e.lane AND r.model = e.model
                           ORDER BY revision DESC LIMIT 1) c ON true
      WHERE $1::text IS NULL OR e.lane = $1
      ORDER BY e.lane, e.model`,
    [lane ?? null],
  );
  return rows.map(({ priced, ...row }) => ({
    ...row,
    unpriced_meters: isAdapter(row.adapter) ? unpricedMeters(row.adapter, priced) : [],
  }));
};

/**
 * Enabled, live endpoints of one adapter: what deployment discovery classifies against (SPEC 4.6);
 * and which adapter serves a lane, what a credential naming the lane is checked against (SPEC 4.7).
 */
export const liveEndpointsFrom = (pool: Pool): LiveEndpoints => ({
  liveEndpoints: async (adapter) =>
    (
      await pool.query<{ lane: string; model: string; provider_model_id: string; base_url: string | null }>(
        `SELECT lane, model, provider_model_id, base_url FROM rm_registry_endpoints
         WHERE adapter = $1 AND enabled AND NOT retired ORDER BY lane, model`,
        [adapter],
      )
    ).rows,
  laneAdapter: async (lane) =>
    (
      await pool.query<{ adapter: string }>(
        'SELECT adapter FROM rm_registry_endpoints WHERE lane = $1 LIMIT 1',
        [lane],
      )
    ).rows[0]?.adapter ?? null,
});
