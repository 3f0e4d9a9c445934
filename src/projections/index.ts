import { authProjection } from './auth/projection.js';
import { controlPlaneProjection } from './control-plane/projection.js';
import { policyProjection } from './policy/projection.js';
import type { Projection } from './projection.js';
import { registryProjection } from './registry/projection.js';
import { streamCatalogProjection } from './streams/projection.js';
import { walletProjection } from './wallet/projection.js';

/** Every Postgres read model the projector role keeps and `svc replay` can rebuild. */
export const PROJECTIONS: readonly Projection[] = [
  streamCatalogProjection,
  controlPlaneProjection,
  registryProjection,
  authProjection,
  walletProjection,
  policyProjection,
];

export const findProjection = (name: string): Projection | undefined =>
  PROJECTIONS.find((p) => p.name === name);
