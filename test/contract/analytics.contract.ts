import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { migrateClickHouse } from '../../src/analytics/migrate.js';
import { AnalyticsError, type AnalyticsStore } from '../../src/analytics/port.js';
import { uniqueSuffix } from '../helpers/env.js';

/**
 * The analytics contract, run against every adapter so the embedded chdb
 * default and a ClickHouse server answer the same SQL the same way.
 */

export interface AnalyticsFixture {
  /** A store bound to `database`, which the fixture creates. */
  open(database: string): Promise<AnalyticsStore>;
  /** Drops `database` (from outside it). */
  drop(database: string): Promise<void>;
  /** Removes everything the run created. */
  cleanup(): Promise<void>;
}

export const HOSTILE_STRINGS = [
  "'); DROP TABLE events; --",
  "' OR 1=1 --",
  "\\'; DROP TABLE events; --",
  'back\\slash \\\\ double \\n not-a-newline \\',
  '"double" `back` \'single\'',
  'tab\there\nnewline\r\ncrlf',
  '\\N',
  '{other:String} {v:String}',
  'unicode: ☃ 𝄞 é (e + combining ́) עברית \u2028 \u{1F600}',
  '',
];

export const analyticsContract = (name: string, setup: () => Promise<AnalyticsFixture>) => {
  describe(`analytics contract: ${name}`, () => {
    let fixture: AnalyticsFixture;

    beforeAll(async () => {
      fixture = await setup();
    });
    afterAll(async () => {
      await fixture?.cleanup();
    });

    /** Every test gets its own database, dropped when the test ends whatever its outcome. */
    const freshStore = async (): Promise<AnalyticsStore> => {
      const database = `ct_${uniqueSuffix()}`;
      const store = await fixture.open(database);
      onTestFinished(async () => {
        await store.close();
        await fixture.drop(database);
      });
      return store;
    };

    it('collapses re-inserted rows to one per sorting key under FINAL (ReplacingMergeTree)', async () => {
      const store = await freshStore();
      await store.command(`
        CREATE TABLE requests (
          org_id LowCardinality(String), request_id String, version UInt32, cost String
        ) ENGINE = ReplacingMergeTree(version) ORDER BY (org_id, request_id)`);
      const batch = [
        { org_id: 'org_a', request_id: 'req_1', version: 1, cost: '0.10' },
        { org_id: 'org_a', request_id: 'req_2', version: 1, cost: '0.20' },
        { org_id: 'org_b', request_id: 'req_1', version: 1, cost: '0.30' },
      ];
      // Merges held back, so the duplicates are really stored and FINAL is what collapses them.
      await store.command('SYSTEM STOP MERGES requests');
      await store.insert('requests', batch);
      await store.insert('requests', batch); // a redelivered message inserts its rows again
      await store.insert('requests', [{ org_id: 'org_a', request_id: 'req_2', version: 2, cost: '0.25' }]);

      const rows = await store.query<{ org_id: string; request_id: string; cost: string }>(
        'SELECT org_id, request_id, cost FROM requests FINAL ORDER BY org_id, request_id',
      );
      expect(rows).toEqual([
        { org_id: 'org_a', request_id: 'req_1', cost: '0.10' },
        { org_id: 'org_a', request_id: 'req_2', cost: '0.25' },
        { org_id: 'org_b', request_id: 'req_1', cost: '0.30' },
      ]);
      expect(await store.query('SELECT count() AS n FROM requests')).toEqual([{ n: '7' }]);
      await store.command('SYSTEM START MERGES requests');
      await store.command('OPTIMIZE TABLE requests FINAL');
      expect(await store.query('SELECT count() AS n FROM requests')).toEqual([{ n: '3' }]);
    });

    it('binds hostile string parameters as values: they round-trip exactly and change no query', async () => {
      const store = await freshStore();
      await store.command('CREATE TABLE events (id UInt32, name String) ENGINE = MergeTree ORDER BY id');
      await store.insert(
        'events',
        HOSTILE_STRINGS.map((name, id) => ({ id, name })),
      );
      for (const [id, value] of HOSTILE_STRINGS.entries()) {
        const [echo] = await store.query<{ v: string; n: string }>(
          'SELECT {v:String} AS v, length({v:String}) AS n',
          {
            v: value,
          },
        );
        expect(echo).toEqual({ v: value, n: String(Buffer.byteLength(value)) });
        const matches = await store.query<{ id: number }>('SELECT id FROM events WHERE name = {v:String}', {
          v: value,
        });
        expect(matches).toEqual([{ id }]);
      }
      const hostileArray = await store.query<{ a: string[] }>('SELECT {a:Array(String)} AS a', {
        a: HOSTILE_STRINGS,
      });
      expect(hostileArray).toEqual([{ a: HOSTILE_STRINGS }]);
      // The table survived every attempt.
      expect(await store.query('SELECT count() AS n FROM events')).toEqual([
        { n: String(HOSTILE_STRINGS.length) },
      ]);
    });

    it('stores a lone surrogate as U+FFFD, with the rest of its batch (SPEC 6: no record poisons another)', async () => {
      const store = await freshStore();
      await store.command(
        'CREATE TABLE people (id UInt32, name String, tags Array(String)) ENGINE = MergeTree ORDER BY id',
      );
      await store.insert('people', [
        { id: 1, name: 'before', tags: [] },
        { id: 2, name: 'lone \ud800 high', tags: ['\udc00', 'ok'] },
        { id: 3, name: 'pair \ud83d\ude00 kept', tags: [] },
      ]);
      expect(await store.query('SELECT id, name, tags FROM people ORDER BY id')).toEqual([
        { id: 1, name: 'before', tags: [] },
        { id: 2, name: 'lone \ufffd high', tags: ['\ufffd', 'ok'] },
        { id: 3, name: 'pair \ud83d\ude00 kept', tags: [] },
      ]);
    });

    it('inserts 100,000 rows in batches and counts them', async () => {
      const store = await freshStore();
      await store.command(
        'CREATE TABLE usage (org_id LowCardinality(String), seq UInt64, tokens UInt32) ENGINE = MergeTree ORDER BY seq',
      );
      const total = 100_000;
      const batchSize = 10_000;
      for (let start = 0; start < total; start += batchSize) {
        const rows = Array.from({ length: batchSize }, (_, i) => ({
          org_id: `org_${(start + i) % 7}`,
          seq: start + i,
          tokens: (start + i) % 1000,
        }));
        await store.insert('usage', rows);
      }
      const [summary] = await store.query<{ n: string; seq_sum: string; orgs: string }>(
        'SELECT count() AS n, sum(seq) AS seq_sum, uniqExact(org_id) AS orgs FROM usage',
      );
      expect(summary).toEqual({ n: String(total), seq_sum: String((total * (total - 1)) / 2), orgs: '7' });
    });

    it('round-trips DateTime64, Decimal, 64-bit, LowCardinality, Nullable and Array columns exactly', async () => {
      const store = await freshStore();
      await store.command(`
        CREATE TABLE typed (
          id UInt32,
          at DateTime64(3, 'UTC'),
          at_micro DateTime64(6, 'UTC'),
          amount Decimal(38, 12),
          small Decimal(18, 6),
          big UInt64,
          negative Int64,
          provider LowCardinality(String),
          note Nullable(String),
          tags Array(LowCardinality(String))
        ) ENGINE = MergeTree ORDER BY id`);
      const at = new Date('2024-02-29T23:59:59.123Z');
      await store.insert('typed', [
        {
          id: 1,
          at,
          at_micro: '2024-02-29 23:59:59.123456',
          amount: '12345678901234567890.123456789012',
          small: '-0.000001',
          big: 18446744073709551615n,
          negative: '-9223372036854775808',
          provider: 'openai',
          note: null,
          tags: ['a', 'ü', "it's"],
        },
      ]);
      const rows = await store.query(
        'SELECT * FROM typed WHERE at = {at:DateTime64(3)} AND provider = {p:String}',
        {
          at,
          p: 'openai',
        },
      );
      expect(rows).toEqual([
        {
          id: 1,
          at: '2024-02-29 23:59:59.123',
          at_micro: '2024-02-29 23:59:59.123456',
          amount: '12345678901234567890.123456789012',
          small: '-0.000001',
          big: '18446744073709551615',
          negative: '-9223372036854775808',
          provider: 'openai',
          note: null,
          tags: ['a', 'ü', "it's"],
        },
      ]);
      const [types] = await store.query<{ t: string }>('SELECT toTypeName(provider) AS t FROM typed');
      expect(types).toEqual({ t: 'LowCardinality(String)' });
      const [decimal] = await store.query<{ d: string }>('SELECT {d:Decimal(38, 12)} * 2 AS d', {
        d: '0.000000000001',
      });
      expect(decimal).toEqual({ d: '0.000000000002' });
    });

    it('applies migrations in order, once, and records them', async () => {
      const store = await freshStore();
      const dir = await mkdtemp(join(tmpdir(), 'svc-ch-migrations-'));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      await writeFile(
        join(dir, '0001_first.sql'),
        '-- two statements in one file\nCREATE TABLE IF NOT EXISTS a (x UInt8) ENGINE = MergeTree ORDER BY x;\n' +
          'INSERT INTO a VALUES (1);\n',
      );
      await writeFile(
        join(dir, '0002_second.sql'),
        'CREATE TABLE IF NOT EXISTS b (y String) ENGINE = MergeTree ORDER BY y\n;\n',
      );
      await writeFile(join(dir, 'README.md'), 'not a migration');

      expect(await migrateClickHouse(store, dir)).toEqual({
        applied: ['0001_first.sql', '0002_second.sql'],
        alreadyApplied: 0,
      });
      expect(await migrateClickHouse(store, dir)).toEqual({ applied: [], alreadyApplied: 2 });
      expect(await store.query('SELECT count() AS n FROM a')).toEqual([{ n: '1' }]);

      await writeFile(
        join(dir, '0003_broken.sql'),
        'CREATE TABLE c (z UInt8) ENGINE = MergeTree ORDER BY z;\nSELEC 1;\n',
      );
      await expect(migrateClickHouse(store, dir)).rejects.toThrow(/0003_broken.sql statement 2/);
      await writeFile(
        join(dir, '0003_broken.sql'),
        'CREATE TABLE IF NOT EXISTS c (z UInt8) ENGINE = MergeTree ORDER BY z;\n',
      );
      expect(await migrateClickHouse(store, dir)).toEqual({
        applied: ['0003_broken.sql'],
        alreadyApplied: 2,
      });
      const recorded = await store.query<{ name: string }>(
        'SELECT name FROM svc_schema_migrations FINAL ORDER BY name',
      );
      expect(recorded.map((r) => r.name)).toEqual(['0001_first.sql', '0002_second.sql', '0003_broken.sql']);
    });

    it('reports failures as typed AnalyticsErrors', async () => {
      const store = await freshStore();
      const unknownTable = await store.query('SELECT * FROM missing_table').catch((e: unknown) => e);
      expect(unknownTable).toBeInstanceOf(AnalyticsError);
      expect(unknownTable).toMatchObject({ kind: 'server', clickhouseCode: 60, retryable: false });

      const syntax = await store.command('CREATE TABLE (').catch((e: unknown) => e);
      expect(syntax).toMatchObject({ kind: 'server', clickhouseCode: 62, retryable: false });

      await expect(store.insert('x; DROP TABLE y', [{ a: 1 }])).rejects.toMatchObject({ kind: 'invalid' });
      await expect(store.query('SELECT {v:String}', { 'bad name': 1 })).rejects.toMatchObject({
        kind: 'invalid',
      });

      expect(await store.health()).toMatchObject({ ok: true, adapter: store.adapter });
      await store.close();
      await expect(store.query('SELECT 1')).rejects.toMatchObject({ kind: 'closed' });
    });
  });
};
