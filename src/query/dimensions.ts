import type { QueryParams } from '../analytics/port.js';
import type { Pool } from '../events/postgres/pool.js';
import { ServiceError } from '../lib/errors.js';

/**
 * Reporting dimensions (SPEC 2.10) live in the control plane's read model as end-dated assignments
 * of a value to an API key. A report row carries the value in force at each request's start, so
 * the assignments are bound into the analytics query as parallel arrays and matched per row there;
 * the grouping then happens in the engine with the label as one more key. No row is ever split
 * across two values, so the money column cannot double count.
 */

export const MAX_DIMENSION_KEYS = 8;
const FAR_FUTURE_MS = 253_402_300_799_000; // 9999-12-31T23:59:59Z

export interface DimensionBinding {
  keys: string[];
  /** One SQL expression per key, Nullable(String): the value at the row's started_at, else NULL. */
  expressions: string[];
  params: QueryParams;
}

export const parseDimensionKeys = (raw: string | undefined, param = 'dimension'): string[] => {
  if (!raw) return [];
  const keys = [
    ...new Set(
      raw
        .split(',')
        .map((k) => k.trim())
        .filter((k) => k !== ''),
    ),
  ];
  if (keys.length > MAX_DIMENSION_KEYS)
    throw new ServiceError('bad_request', `at most ${MAX_DIMENSION_KEYS} dimension keys may be requested`, {
      param,
    });
  return keys;
};

export const bindDimensions = async (
  pool: Pool,
  workspaceIds: readonly string[],
  keys: readonly string[],
  param = 'dimension',
): Promise<DimensionBinding> => {
  if (keys.length === 0) return { keys: [], expressions: [], params: {} };
  const defined = await pool.query<{ key: string }>(
    'SELECT DISTINCT key FROM rm_dimension_definitions WHERE workspace_id = ANY($1) AND key = ANY($2)',
    [workspaceIds, keys],
  );
  const known = new Set(defined.rows.map((r) => r.key));
  const unknown = keys.filter((k) => !known.has(k));
  if (unknown.length)
    throw new ServiceError('bad_request', `unknown reporting dimension: ${unknown.join(', ')}`, { param });
  const { rows } = await pool.query<{
    api_key_id: string;
    key: string;
    value: string;
    effective_from: Date;
    effective_to: Date | null;
  }>(
    `SELECT a.api_key_id, d.key, a.value, a.effective_from, a.effective_to
     FROM rm_dimension_assignments a JOIN rm_dimension_definitions d USING (definition_id)
     WHERE d.workspace_id = ANY($1) AND d.key = ANY($2)`,
    [workspaceIds, keys],
  );
  const index = new Map(keys.map((k, i) => [k, i + 1]));
  const params: QueryParams = {
    dim_k: rows.map((r) => index.get(r.key)!),
    dim_a: rows.map((r) => r.api_key_id),
    dim_f: rows.map((r) => r.effective_from.getTime()),
    dim_t: rows.map((r) => r.effective_to?.getTime() ?? FAR_FUTURE_MS),
    dim_v: rows.map((r) => r.value),
  };
  const expressions = keys.map((_, i) => {
    const found = `arrayFirstIndex((k, a, f, t) -> k = ${i + 1} AND a = api_key_id AND f <= toUnixTimestamp64Milli(started_at)
        AND toUnixTimestamp64Milli(started_at) < t, {dim_k:Array(UInt8)}, {dim_a:Array(String)}, {dim_f:Array(Int64)}, {dim_t:Array(Int64)})`;
    return `if(${found} = 0, CAST(NULL, 'Nullable(String)'), {dim_v:Array(String)}[${found}])`;
  });
  return { keys: [...keys], expressions, params };
};

/** The wide column a dimension key becomes in exports; prefixed so no key can shadow a fixed column. */
export const dimensionColumn = (key: string): string => `dim_${key}`;
