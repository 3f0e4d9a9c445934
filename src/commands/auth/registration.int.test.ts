import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { makeAuth } from '../../roles/auth.js';

// Registration codes under concurrent sign-ins: the uses are never exceeded, because
// each redemption appends with its expected version and re-decides after a conflict.

let db: TestDatabase;
let store: PostgresEventStore;

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 30 });
  store = new PostgresEventStore(db.pool, db.url);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('registration code redemption', () => {
  it('eight concurrent new users, three uses: exactly three are admitted', async () => {
    const auth = makeAuth(store, db.pool, Buffer.alloc(32, 7));
    const { code } = await auth.registration.createCode('test', { uses: 3, ttlMs: 3_600_000 });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        auth.registration.resolveUser(
          {
            provider: 'test',
            issuer: 'https://idp.example.com',
            subject: `sub-${i}`,
            email: `user${i}@example.com`,
            emailVerified: true,
          },
          'code',
          { inviteHash: null, registrationCodeHash: hashSecret(code) },
        ),
      ),
    );
    const admitted = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(admitted).toHaveLength(3);
    for (const r of refused) {
      expect(r.reason).toBeInstanceOf(ServiceError);
      expect((r.reason as ServiceError).message).toMatch(/no uses left/);
    }
    expect(await auth.reads.codeStatus(code, new Date())).toEqual({
      valid: false,
      expired: false,
      uses_remaining: 0,
    });
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM rm_users');
    expect(rows[0].n).toBe(3);
  });
});
