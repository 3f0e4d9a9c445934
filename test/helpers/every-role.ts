import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningService, startService } from '../../src/cli/service.js';
import { loadConfig } from '../../src/config/config.js';
import { ROLE_NAMES } from '../../src/roles/role.js';
import { createTestDatabase } from './postgres.js';

/**
 * Every role in one process (`SVC_SERVE_DATA_PROCESS=inline`) on a database and data dir of its
 * own, for tests that hold something to the whole set of routes; `stop` removes them again.
 */
export const startEveryRole = async (
  name: string,
): Promise<{ service: RunningService; stop: () => Promise<void> }> => {
  const db = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), `svc-${name}-`));
  let service: RunningService | null = null;
  const stop = async () => {
    await service?.stop();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const config = loadConfig({
      SVC_DATABASE_URL: db.url,
      SVC_DATA_DIR: dataDir,
      SVC_HTTP_HOST: '127.0.0.1',
      SVC_HTTP_PORT: '0',
      SVC_GRPC_PORT: '0',
      SVC_SERVE_DATA_PROCESS: 'inline',
      SVC_LOG_LEVEL: 'warn',
      SVC_ADMIN_TOKEN: `admin-${name}-test-token`,
    });
    service = await startService(config, { roles: [...ROLE_NAMES] });
    return { service, stop };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
};
