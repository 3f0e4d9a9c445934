import type { Projection } from './projection.js';
import { streamCatalogProjection } from './streams/projection.js';

/** Every Postgres read model the projector role keeps and `svc replay` can rebuild. */
export const PROJECTIONS: readonly Projection[] = [streamCatalogProjection];

export const findProjection = (name: string): Projection | undefined =>
  PROJECTIONS.find((p) => p.name === name);
