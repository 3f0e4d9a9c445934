import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/events/postgres/embedded.js';
import { TEST_DATABASE_URL } from './helpers/env.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

const reachable = async (url: string): Promise<boolean> => {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
};

/**
 * Tests use the machine's PostgreSQL (SVC_TEST_DATABASE_URL) when it answers, and otherwise one
 * embedded PostgreSQL for the whole run, started in a temporary directory and removed after.
 */
export default async function setup(project: TestProject) {
  if (await reachable(TEST_DATABASE_URL)) {
    project.provide('databaseUrl', TEST_DATABASE_URL);
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'svc-test-pg-'));
  const embedded = await startEmbeddedPostgres({ dataDir: dir, port: 0 });
  project.provide('databaseUrl', embedded.url);
  return async () => {
    await embedded.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
