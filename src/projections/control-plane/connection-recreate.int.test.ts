import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { makeControlPlane } from '../../roles/control-plane.js';

// SPEC 2.7: a connection's id comes from its scope and name. Deleted and created again, it is the
// same read-model row back; the projection must go on (it used to stop for every tenant).

const actor = { id: 'admin' };
let db: TestDatabase;
let store: PostgresEventStore;

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('a connection deleted and created again', () => {
  it('is live again with its new settings, and the control plane keeps working', async () => {
    const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 5));
    const { workspace_id: ws } = await cp.createWorkspace(actor, 'Recreate');
    const { org_id: org } = await cp.createOrganization(actor, ws, 'Recreate org');
    const { project_id: project } = await cp.createProject(actor, org, 'Recreate project');
    const create = (secret: string) =>
      cp.createConnection(actor, { projectId: project, provider: 'openai', name: 'primary', secret });
    const first = await create('sk-first');
    await cp.deleteConnection(actor, first.id);
    const again = await create('sk-second');
    expect(again.id).toBe(first.id);
    const row = await cp.reads.connection(again.id);
    expect(row).toMatchObject({ id: first.id, name: 'primary' });
    // Writes after it still project (a stuck projection made every later command fail).
    const { org_id: other } = await cp.createOrganization(actor, ws, 'After the recreate');
    expect(await cp.reads.organization(other)).toMatchObject({ org_id: other });
  });
});
