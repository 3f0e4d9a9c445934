import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { makeControlPlane } from '../../roles/control-plane.js';

// SPEC 2.10: an API key's dimension value by assignment. Two assignments in one instant (concurrent
// PUTs retried within a millisecond) must not stop the control-plane projection: it stopped on the
// second row with the same effective_from, and every later control-plane write then failed its
// read-your-writes with a 500.

let db: TestDatabase;
let store: PostgresEventStore;

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
}, 60_000);
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('dimension assignments in one instant', () => {
  it('the last one wins and the projection keeps going', async () => {
    const instant = new Date('2026-05-04T03:02:01.000Z');
    const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 3), () => instant);
    const actor = { id: 'admin' };
    const { workspace_id: ws } = await cp.createWorkspace(actor, 'Instant');
    const { org_id: org } = await cp.createOrganization(actor, ws, 'Instant org');
    const { project_id: project } = await cp.createProject(actor, org, 'Instant project');
    const { api_key_id: key } = await cp.createApiKey(actor, project, 'instant key');
    const { definition_id: team } = await cp.defineDimension(actor, ws, 'team', undefined);

    for (const value of ['red', 'blue', 'red', 'green']) await cp.assignDimension(actor, key, team, value);

    const now = await cp.reads.dimensionAssignments(key, instant.toISOString());
    expect(now.map((a) => [a.key, a.value, a.effective_to])).toEqual([['team', 'green', null]]);
    // The projection is not stuck: a later write reads its own change.
    await cp.setApiKeyTracing(actor, key, true);
    expect((await cp.reads.apiKey(key))?.tracing).toBe(true);
  });
});
