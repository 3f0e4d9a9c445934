import type { Config } from '../config/config.js';
import { FsObjectStore, objectsPath } from './fs-store.js';
import type { ObjectStore } from './port.js';
import { S3ObjectStore } from './s3-store.js';

export type ObjectStoreConfig = Pick<
  Config,
  | 'SVC_OBJECT_STORE'
  | 'SVC_S3_ENDPOINT'
  | 'SVC_S3_BUCKET'
  | 'SVC_S3_REGION'
  | 'SVC_S3_ACCESS_KEY_ID'
  | 'SVC_S3_SECRET_ACCESS_KEY'
  | 'SVC_S3_PREFIX'
  | 'SVC_S3_ADDRESSING'
>;

const REQUIRED_FOR_S3 = [
  'SVC_S3_ENDPOINT',
  'SVC_S3_BUCKET',
  'SVC_S3_ACCESS_KEY_ID',
  'SVC_S3_SECRET_ACCESS_KEY',
] as const;

/**
 * The object store SVC_OBJECT_STORE names: `fs`, files under `<dataDir>/objects`; `s3`, the
 * SVC_S3_* bucket. Every process of a cluster must name the same one. An `s3` store without its
 * endpoint, bucket or key pair stops start-up with the missing variables named (their values are
 * never in the message).
 */
export const openObjectStore = (config: ObjectStoreConfig, dataDir: string): ObjectStore => {
  if (config.SVC_OBJECT_STORE === 'fs') return new FsObjectStore(objectsPath(dataDir));
  const missing = REQUIRED_FOR_S3.filter((name) => config[name] === undefined);
  if (missing.length > 0) throw new Error(`SVC_OBJECT_STORE=s3 needs ${missing.join(', ')} (unset or empty)`);
  return new S3ObjectStore({
    endpoint: config.SVC_S3_ENDPOINT!,
    bucket: config.SVC_S3_BUCKET!,
    region: config.SVC_S3_REGION,
    accessKeyId: config.SVC_S3_ACCESS_KEY_ID!,
    secretAccessKey: config.SVC_S3_SECRET_ACCESS_KEY!,
    prefix: config.SVC_S3_PREFIX ?? '',
    addressing: config.SVC_S3_ADDRESSING,
  });
};
