import { categoryOf, type StoredEvent } from '../../events/event-store.js';
import type { PoolClient } from '../../events/postgres/pool.js';
import { clearReadModel, type Projection } from '../projection.js';

interface StreamSummary {
  streamId: string;
  version: number;
  count: number;
  lastType: string;
  lastPosition: number;
  updatedAt: Date;
}

/** Folds a batch per stream first, so a batch costs one upsert whatever its size. */
const summarise = (events: readonly StoredEvent[]): StreamSummary[] => {
  const byStream = new Map<string, StreamSummary>();
  for (const e of events) {
    const s = byStream.get(e.streamId);
    if (s) {
      s.version = e.streamVersion;
      s.count += 1;
      s.lastType = e.type;
      s.lastPosition = e.globalPosition;
      s.updatedAt = e.recordedAt;
    } else {
      byStream.set(e.streamId, {
        streamId: e.streamId,
        version: e.streamVersion,
        count: 1,
        lastType: e.type,
        lastPosition: e.globalPosition,
        updatedAt: e.recordedAt,
      });
    }
  }
  return [...byStream.values()];
};

export const streamCatalogProjection: Projection = {
  name: 'streams',
  version: 1,
  reset: async (client: PoolClient) => {
    await clearReadModel(client, ['rm_streams']);
  },
  apply: async (client: PoolClient, events: readonly StoredEvent[]) => {
    const rows = summarise(events);
    await client.query(
      `INSERT INTO rm_streams (stream_id, category, version, event_count, last_type, last_position, updated_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[],
                            $7::timestamptz[])
       ON CONFLICT (stream_id) DO UPDATE SET
         version = EXCLUDED.version,
         event_count = rm_streams.event_count + EXCLUDED.event_count,
         last_type = EXCLUDED.last_type,
         last_position = EXCLUDED.last_position,
         updated_at = EXCLUDED.updated_at`,
      [
        rows.map((r) => r.streamId),
        rows.map((r) => categoryOf(r.streamId)),
        rows.map((r) => r.version),
        rows.map((r) => r.count),
        rows.map((r) => r.lastType),
        rows.map((r) => r.lastPosition),
        rows.map((r) => r.updatedAt),
      ],
    );
  },
};
