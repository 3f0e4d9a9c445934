/** Test-only settings: the machine's services, overridable by environment (README "Tests"). */
export const TEST_DATABASE_URL =
  process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TEST_NATS_URL = process.env.SVC_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** A short unique suffix for database, schema, stream and subject names of one test run. */
export const uniqueSuffix = (): string =>
  `${process.pid.toString(36)}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
