import { KEYS_FORMAT, type PublishedKeys } from '../../audit/model.js';
import { generateSigningKey } from '../../audit/signing.js';
import { type Pool, type PoolClient, withTransaction } from '../../events/postgres/pool.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';

/** The key that signs now: its id and secret half (decrypted in memory only). */
export interface ActiveSigningKey {
  keyId: string;
  secretKey: Buffer;
}

const aadOf = (keyId: string) => `audit-signing-key:${keyId}`;

const insertKey = async (client: PoolClient | Pool, masterKey: Buffer): Promise<string> => {
  const key = generateSigningKey();
  await client.query(
    `INSERT INTO audit_signing_keys (key_id, public_key, secret_ciphertext) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING`,
    [key.keyId, key.publicKey, encryptSecret(masterKey, key.secretKey.toString('hex'), aadOf(key.keyId))],
  );
  return key.keyId;
};

/**
 * The active signing key, created on first use. Two processes starting at once may both try; the
 * partial unique index lets one key win and the other insert is dropped.
 */
export const activeSigningKey = async (
  db: Pool | PoolClient,
  masterKey: Buffer,
): Promise<ActiveSigningKey> => {
  for (let attempt = 0; attempt < 3; attempt++) {
    const { rows } = await db.query<{ key_id: string; secret_ciphertext: string }>(
      'SELECT key_id, secret_ciphertext FROM audit_signing_keys WHERE retired_at IS NULL',
    );
    const row = rows[0];
    if (row)
      return {
        keyId: row.key_id,
        secretKey: Buffer.from(decryptSecret(masterKey, row.secret_ciphertext, aadOf(row.key_id)), 'hex'),
      };
    await insertKey(db, masterKey).catch((err: { code?: string }) => {
      // 23505: another process created the active key between our read and insert.
      if (err.code !== '23505') throw err;
    });
  }
  throw new Error('no active audit signing key after three attempts');
};

/** Retires the active key and creates its successor; answers both ids. */
export const rotateSigningKey = (
  pool: Pool,
  masterKey: Buffer,
): Promise<{ retired: string | null; active: string }> =>
  withTransaction(pool, async (client) => {
    await client.query('LOCK TABLE audit_signing_keys IN SHARE ROW EXCLUSIVE MODE');
    const { rows } = await client.query<{ key_id: string }>(
      'UPDATE audit_signing_keys SET retired_at = now() WHERE retired_at IS NULL RETURNING key_id',
    );
    const active = await insertKey(client, masterKey);
    return { retired: rows[0]?.key_id ?? null, active };
  });

/** Every key that ever signed, public halves only (SPEC 1.8: auditors verify offline). */
export const publishedKeys = async (db: Pool | PoolClient): Promise<PublishedKeys> => {
  const { rows } = await db.query<{
    key_id: string;
    public_key: Buffer;
    created_at: Date;
    retired_at: Date | null;
  }>('SELECT key_id, public_key, created_at, retired_at FROM audit_signing_keys ORDER BY created_at, key_id');
  return {
    format: KEYS_FORMAT,
    keys: rows.map((r) => ({
      key_id: r.key_id,
      algorithm: 'ed25519',
      public_key: r.public_key.toString('hex'),
      created_at: r.created_at.toISOString(),
      retired_at: r.retired_at?.toISOString() ?? null,
    })),
  };
};
