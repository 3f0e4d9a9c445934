export { type RegistryCacheOptions, RegistrySnapshotCache } from './cache.js';
export { loadRegistrySnapshot, registryRevision } from './load.js';
export {
  buildRegistrySnapshot,
  EMPTY_REGISTRY,
  type EndpointRecord,
  laneModelKey,
  type RegistrySnapshot,
  type RegistrySnapshotData,
} from './snapshot.js';
