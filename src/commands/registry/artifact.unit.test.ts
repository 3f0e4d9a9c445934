import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type ArtifactFiles, readArtifact } from './artifact.js';
import { CATALOG_COLUMNS } from './catalog.js';
import { formatRefusal } from './csv.js';
import type { Artifact } from './events.js';
import { RATES_COLUMNS } from './rates.js';

// Import refusals quote FILE:LINE:COLUMN.

const fixture = (name: string) =>
  readFileSync(new URL(`../../../test/fixtures/registry/${name}`, import.meta.url), 'utf8');

const CATALOG_HEADER = CATALOG_COLUMNS.join(',');
const RATES_HEADER = RATES_COLUMNS.join(',');
const CATALOG_ROW = 'm1,m1-up,,M1,fam,2025-01-01,desc,true,,,,,true,true,,text,text,1000,100,true';

const files = (
  catalogRows: string[],
  ratesRows: string[],
  header = { catalog: CATALOG_HEADER, rates: RATES_HEADER },
) => ({
  catalogFile: 'catalog.csv',
  catalogText: [header.catalog, ...catalogRows].join('\n'),
  ratesFile: 'rates.csv',
  ratesText: [header.rates, ...ratesRows].join('\n'),
});

const ok = (input: ArtifactFiles): Artifact => {
  const r = readArtifact(input);
  if (!r.ok) throw new Error(formatRefusal(r.refusal));
  return r.value;
};

const refused = (input: ArtifactFiles): string => {
  const r = readArtifact(input);
  if (r.ok) throw new Error('expected a refusal');
  return formatRefusal(r.refusal);
};

describe('reading the fixture artifact', () => {
  const artifact = ok({
    catalogFile: 'openai.catalog.csv',
    catalogText: fixture('openai.catalog.csv'),
    ratesFile: 'openai.rates.csv',
    ratesText: fixture('openai.rates.csv'),
  });

  it('reads catalog rows: blank booleans false, unused base_url null, modalities in order', () => {
    const gpt4o = artifact.endpoints.find((e) => e.model === 'gpt-4o')!;
    expect(gpt4o).toMatchObject({
      provider_model_id: 'gpt-4o-2024-08-06',
      base_url: null,
      description: 'Flagship multimodal model, "omni"',
      input_modalities: ['text', 'image'],
      output_modalities: ['text'],
      context_length: 128000,
      max_output_tokens: 16384,
      enabled: true,
    });
    expect(gpt4o.capabilities).toEqual({
      chat: true,
      embeddings: false,
      responses: true,
      images: false,
      moderations: false,
      tools: true,
      streaming: true,
      reasoning: false,
    });
    expect(
      artifact.endpoints.find((e) => e.model === 'text-embedding-3-small')?.max_output_tokens,
    ).toBeNull();
  });

  it('converts per-million token prices to exact per-token strings; last bands are unbounded', () => {
    const o3 = artifact.cards.find((c) => c.model === 'o3')!;
    expect(o3.effective_from).toBe('2025-04-16T00:00:00.000Z');
    expect(o3.effective_to).toBeNull();
    const input = o3.rows.filter((r) => r.meter === 'input_token' && r.tier === 'standard');
    expect(input.map((r) => [r.min_context, r.max_context, r.unit_price])).toEqual([
      [0, 100000, '0.000002'],
      [100000, null, '0.000004'],
    ]);
    const mini = artifact.cards.find((c) => c.model === 'gpt-4o-mini')!;
    expect(mini.rows.find((r) => r.meter === 'cache_read_token')?.unit_price).toBe('0.000000075');
    const gpt4o = artifact.cards.find((c) => c.model === 'gpt-4o')!;
    expect(gpt4o.rows.every((r) => r.modality === 'text' && r.max_context === null)).toBe(true);
  });

  it('has a stable digest over the bytes', () => {
    expect(artifact.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const again = ok({
      catalogFile: 'elsewhere.csv',
      catalogText: fixture('openai.catalog.csv'),
      ratesFile: 'r.csv',
      ratesText: fixture('openai.rates.csv'),
    });
    expect(again.digest).toBe(artifact.digest);
  });
});

describe('refusals quote FILE:LINE:COLUMN', () => {
  const rate = (price: string, over: Partial<Record<'min' | 'max' | 'model' | 'meter', string>> = {}) =>
    `${over.model ?? 'm1'},standard,${over.meter ?? 'input_token'},text,${over.min ?? '0'},${over.max ?? 'unbounded'},,,${price},2025-01-01,`;

  it.each([
    ['a blank price', [rate('')], 'rates.csv:2:44: price is blank'],
    ['a blank min_context', [rate('1', { min: '' })], 'rates.csv:2:30: min_context is blank'],
    ['a blank max_context', [rate('1', { max: '' })], 'rates.csv:2:32: max_context is blank'],
    [
      'a price with no exact per-token value',
      [rate('0.0000000000001')],
      'rates.csv:2:44: price: 0.0000000000001 USD per million tokens has more than 12 decimal places; its per-token price would not be exact',
    ],
    [
      'a price in exponent form',
      [rate('3e-6')],
      'rates.csv:2:44: price: "3e-6" is not a plain decimal (digits with an optional point and leading minus; no exponent)',
    ],
    [
      'an unknown meter',
      [rate('1', { meter: 'input_tokens' })],
      'rates.csv:2:13: unknown meter "input_tokens"',
    ],
    [
      'unbounded before the last band',
      [rate('1', { max: 'unbounded' }), rate('2', { min: '500' })],
      'rates.csv:2:32: only the last band of input_token may be unbounded; line 3 starts a higher band',
    ],
    [
      'overlapping bands',
      [rate('1', { max: '600' }), rate('2', { min: '500' })],
      'rates.csv:3:30: band overlaps the band on line 2 (which ends at 600)',
    ],
    [
      'a duplicated band',
      [rate('1', { max: '600' }), rate('2')],
      'rates.csv:3:30: duplicates the band on line 2',
    ],
    [
      'a price for a model without a catalog row',
      [rate('1'), rate('1', { model: 'ghost' })],
      'rates.csv:3:1: price for model ghost, which has no row in catalog.csv',
    ],
  ])('%s', (_, rates, message) => {
    expect(refused(files([CATALOG_ROW], rates))).toBe(message);
  });

  it('refuses overlapping effective intervals of one model', () => {
    const a = 'm1,standard,input_token,text,0,unbounded,,,1,2025-01-01,2025-06-01';
    const b = 'm1,standard,input_token,text,0,unbounded,,,2,2025-03-01,';
    expect(refused(files([CATALOG_ROW], [a, b]))).toMatch(
      /^rates\.csv:3:46: m1: effective interval from 2025-03-01T00:00:00.000Z overlaps the one from 2025-01-01T00:00:00.000Z \(line 2\)/,
    );
  });

  it('refuses an effective_to not after effective_from', () => {
    const a = 'm1,standard,input_token,text,0,unbounded,,,1,2025-01-01,2025-01-01';
    expect(refused(files([CATALOG_ROW], [a]))).toBe(
      'rates.csv:2:57: effective_to must be after effective_from',
    );
  });

  it('refuses an impossible or zone-less effective instant', () => {
    const row = (from: string) => `m1,standard,input_token,text,0,unbounded,,,1,${from},`;
    expect(refused(files([CATALOG_ROW], [row('2025-02-30')]))).toBe(
      'rates.csv:2:46: effective_from must be an ISO-8601 date or instant, got "2025-02-30"',
    );
    expect(refused(files([CATALOG_ROW], [row('2025-01-01T10:00')]))).toBe(
      'rates.csv:2:46: effective_from must be an ISO-8601 date or instant, got "2025-01-01T10:00"',
    );
    const offset = ok(files([CATALOG_ROW], [row('2025-01-01T02:00:00+02:00')]));
    expect(offset.cards[0]!.effective_from).toBe('2025-01-01T00:00:00.000Z');
  });

  it('refuses unknown columns by name and line in either file', () => {
    expect(
      refused(files([CATALOG_ROW], [], { catalog: `${CATALOG_HEADER},colour`, rates: RATES_HEADER })),
    ).toBe(`catalog.csv:1:${CATALOG_HEADER.length + 2}: unknown column "colour"`);
    expect(
      refused(files([CATALOG_ROW], [], { catalog: CATALOG_HEADER, rates: `currency,${RATES_HEADER}` })),
    ).toBe('rates.csv:1:1: unknown column "currency"');
  });

  it.each([
    [
      'a blank context_length',
      CATALOG_ROW.replace(',1000,100,', ',,100,'),
      'catalog.csv:2:64: context_length is blank',
    ],
    [
      'a boolean that is not one',
      CATALOG_ROW.replace(',true,,,,,', ',maybe,,,,,'),
      'catalog.csv:2:34: chat must be true or false, got "maybe"',
    ],
    [
      'an unknown modality',
      CATALOG_ROW.replace(',text,text,', ',text|video,text,'),
      'catalog.csv:2:54: input_modalities: unknown modality "video" (known: text, audio, image)',
    ],
    ['a blank model', CATALOG_ROW.replace('m1,', ','), 'catalog.csv:2:1: model is blank'],
    [
      'a base_url with a path',
      CATALOG_ROW.replace('m1-up,,', 'm1-up,https://h.example/v1,'),
      'catalog.csv:2:10: base_url must not contain a path',
    ],
    [
      'plain http to a remote host',
      CATALOG_ROW.replace('m1-up,,', 'm1-up,http://h.example,'),
      'catalog.csv:2:10: base_url must use https; http is accepted only for a loopback host',
    ],
    [
      'a bad release date',
      CATALOG_ROW.replace('2025-01-01', '2025-02-30'),
      'catalog.csv:2:18: release_date must be a date YYYY-MM-DD, got "2025-02-30"',
    ],
    [
      'a release date with month 13',
      CATALOG_ROW.replace('2025-01-01', '2025-13-01'),
      'catalog.csv:2:18: release_date must be a date YYYY-MM-DD, got "2025-13-01"',
    ],
  ])('refuses %s in the catalog', (_, row, message) => {
    expect(refused(files([row], []))).toBe(message);
  });

  it('refuses a model listed twice at its second row', () => {
    expect(refused(files([CATALOG_ROW, CATALOG_ROW], []))).toBe(
      'catalog.csv:3:1: model m1 is already listed on line 2',
    );
  });

  it('accepts a loopback http base_url and a blank modality as text', () => {
    const row = CATALOG_ROW.replace('m1-up,,', 'm1-up,http://127.0.0.1:9999/,').replace(',text,text,', ',,,');
    const a = ok(files([row], ['m1,standard,request,,0,0,,,0.01,2025-01-01,']));
    expect(a.endpoints[0]).toMatchObject({ base_url: 'http://127.0.0.1:9999', input_modalities: ['text'] });
    // Per-request prices are not divided: they are per request already.
    expect(a.cards[0]!.rows[0]).toMatchObject({ meter: 'request', unit_price: '0.01', max_context: null });
  });
});
