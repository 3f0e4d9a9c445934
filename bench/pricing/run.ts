import { priceUsage } from '../../src/pricing/engine.js';
import type { EscrowShape } from '../../src/pricing/escrow-estimate.js';
import { escrowEstimate } from '../../src/pricing/escrow-estimate.js';
import type { CompiledRateCard } from '../../src/pricing/rate-card.js';
import type { PricingUsage } from '../../src/pricing/types.js';
import { AUDIO_CARD, REQUEST_CARD } from '../../test/fixtures/pricing/pricing.fixtures.js';
import { perSecond, printTable } from '../lib/report.js';

// npm run bench:pricing — target: at least 200,000 cost lines priced per second on one
// core. The engine is synchronous, so this loop on the main thread is exactly one core.

const TARGET_LINES_PER_SECOND = 200_000;
const WARMUP_MS = 1_000;
const MEASURE_MS = 3_000;

/** A mix shaped like gateway traffic: mostly plain chat, some caching, some audio, a few tools. */
const MIX: readonly [CompiledRateCard, PricingUsage][] = [
  [AUDIO_CARD, { operation: 'chat', prompt_tokens: 1_234, completion_tokens: 567, reasoning_tokens: 120 }],
  [AUDIO_CARD, { operation: 'chat', prompt_tokens: 250_000, completion_tokens: 2_048 }],
  [
    AUDIO_CARD,
    { operation: 'responses', prompt_tokens: 12_000, completion_tokens: 800, cache_read_tokens: 9_000 },
  ],
  [
    AUDIO_CARD,
    {
      operation: 'messages',
      prompt_tokens: 30_000,
      completion_tokens: 1_000,
      cache_read_tokens: 20_000,
      cache_write_tokens: { '5m': 6_000, '1h': 2_000 },
    },
  ],
  [
    AUDIO_CARD,
    {
      operation: 'chat',
      prompt_tokens: 4_000,
      completion_tokens: 3_000,
      cache_read_tokens: 1_000,
      audio_input_tokens: 2_500,
      audio_output_tokens: 2_000,
      audio_requested: { input: true, output: true },
    },
  ],
  [
    AUDIO_CARD,
    { operation: 'responses', prompt_tokens: 900, completion_tokens: 300, tool_calls: { web_search: 2 } },
  ],
  [REQUEST_CARD, { operation: 'embeddings', prompt_tokens: 8_000, completion_tokens: 0, request_count: 4 }],
  [AUDIO_CARD, { operation: 'chat', prompt_tokens: 777, completion_tokens: 333 }],
];

const ESCROW_MIX: readonly [CompiledRateCard, EscrowShape][] = [
  [AUDIO_CARD, { operation: 'chat', prompt_tokens: 1_234, max_output_tokens: 4_096 }],
  [AUDIO_CARD, { operation: 'chat', prompt_tokens: 250_000, max_output_tokens: 8_192 }],
  [REQUEST_CARD, { operation: 'embeddings', prompt_tokens: 8_000, max_output_tokens: 0 }],
];

/** Runs `fn` over the mix until the clock runs out; returns calls, units counted and seconds. */
const run = <T>(mix: readonly T[], fn: (item: T) => number, ms: number) => {
  let calls = 0;
  let units = 0;
  const started = performance.now();
  let now = started;
  while (now - started < ms) {
    for (let i = 0; i < 1_000; i++) units += fn(mix[(calls + i) % mix.length] as T);
    calls += 1_000;
    now = performance.now();
  }
  return { calls, units, seconds: (now - started) / 1_000 };
};

const price = ([card, usage]: readonly [CompiledRateCard, PricingUsage]) => {
  const result = priceUsage(card, usage);
  if (result.billing_status !== 'priced') throw new Error(`bench usage failed: ${result.billing_detail}`);
  return result.lines.length;
};
const hold = ([card, shape]: readonly [CompiledRateCard, EscrowShape]) =>
  escrowEstimate(card, shape).status === 'reserved' ? 1 : 0;

run(MIX, price, WARMUP_MS);
const pricing = run(MIX, price, MEASURE_MS);
run(ESCROW_MIX, hold, WARMUP_MS / 2);
const escrow = run(ESCROW_MIX, hold, MEASURE_MS / 2);

const linesPerSecond = pricing.units / pricing.seconds;
printTable('bench/pricing (one core, synchronous engine)', [
  {
    metric: 'cost lines priced',
    measured: perSecond(pricing.units, pricing.seconds),
    target: `>= ${TARGET_LINES_PER_SECOND.toLocaleString('en-US')}/s`,
    met: linesPerSecond >= TARGET_LINES_PER_SECOND,
  },
  { metric: 'requests priced', measured: perSecond(pricing.calls, pricing.seconds) },
  {
    metric: 'lines per request (mix)',
    measured: (pricing.units / pricing.calls).toFixed(2),
  },
  { metric: 'escrow estimates', measured: perSecond(escrow.calls, escrow.seconds) },
]);
if (linesPerSecond < TARGET_LINES_PER_SECOND) process.exitCode = 1;
