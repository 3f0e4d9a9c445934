import type { BenchRow } from '../lib/report.js';
import type { BulkResult, Timings, VerifyResult } from './bulk.js';
import type { BusPhaseResult } from './e2e.js';
import { describeCpu } from './meter.js';

/** The tables' rows; targets are the issue's (20,000 events/s sealed, an inclusion proof under 5 ms). */

export const SEALED_TARGET = 20_000;
export const PROOF_TARGET_MS = 5;

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const rate = (count: number, seconds: number) => `${n(count / seconds)}/s`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const ms = (t: Timings) =>
  `${t.p50.toFixed(2)} / ${t.p95.toFixed(2)} / ${t.p99.toFixed(2)} ms (max ${t.max.toFixed(1)}, n ${t.count})`;

export const busRows = (r: BusPhaseResult, live: boolean): BenchRow[] => {
  const c = r.check;
  const sealedRate = r.sealedSeconds === null ? null : r.events / r.sealedSeconds;
  const lostOrDuplicated = c.lost + c.duplicated + c.unsealed + c.breaks;
  return [
    {
      metric: `${r.label}: events, tenants, bytes each`,
      measured: `${n(r.events)}, ${r.tenants}, ${n(r.eventBytes)} B`,
    },
    {
      metric: `${r.label}: publish${live ? ' (beside the consumer)' : ' (before the clock)'}`,
      measured: `${r.publishSeconds.toFixed(1)} s, ${rate(r.events, r.publishSeconds)}`,
    },
    {
      metric: `${r.label}: events stored/s end to end`,
      measured:
        r.storedSeconds === null
          ? 'not all within the timeout'
          : `${rate(r.events, r.storedSeconds)} (${r.storedSeconds.toFixed(1)} s)`,
    },
    {
      metric: `${r.label}: events sealed/s end to end`,
      measured:
        sealedRate === null
          ? 'not all within the timeout'
          : `${n(sealedRate)}/s (${r.sealedSeconds!.toFixed(1)} s)`,
      target: `>= ${n(SEALED_TARGET)}/s`,
      met: sealedRate !== null && sealedRate >= SEALED_TARGET,
    },
    {
      metric: `${r.label}: batches, events a batch, archive a batch`,
      measured: `${r.batches}, ${n(r.events / Math.max(1, r.batches))}, ${kb(r.archiveBytes / Math.max(1, r.batches))} gzip`,
    },
    {
      metric: `${r.label}: CPU a event, bench process${live ? ' (publisher in it)' : ''} + PG backends`,
      measured: describeCpu(r.cpu, r.events),
    },
    {
      metric: `${r.label}: stored once and sealed (tables)`,
      measured:
        `${n(c.stored)} stored (${n(c.publishedFound)} of ${n(c.published)} ids found), ${n(c.sealed)} sealed; ` +
        `${c.lost} lost, ${c.duplicated} duplicated, ${c.unsealed} unsealed, ${c.breaks} breaks`,
      target: '0 lost, 0 duplicated',
      met: lostOrDuplicated === 0 && c.publishedFound === c.published && c.inBatches === c.published,
    },
    {
      metric: `${r.label}: redelivered (deduped), dead letters, consumer / sealer errors`,
      measured: `${r.redelivered}, ${r.deadLetters}, ${r.consumerErrors.length} / ${r.sealerErrors.length}${
        [...r.consumerErrors, ...r.sealerErrors][0]
          ? ` (first: ${[...r.consumerErrors, ...r.sealerErrors][0]})`
          : ''
      }`,
    },
    { metric: `${r.label}: archives through verifyEvidence`, measured: c.evidence },
  ];
};

export const bulkRows = (b: BulkResult, v: VerifyResult | null): BenchRow[] => {
  const sealedRate = b.events / b.sealSeconds;
  const archiveBytes = b.batches.reduce((s, x) => s + x.archiveBytes, 0);
  const proofs =
    b.inclusionCold.count + b.inclusionDefault.count + b.inclusionLatest.count + b.consistency.count;
  return [
    {
      metric: 'append (appendAuditEvents): events/s',
      measured: `${rate(b.events, b.appendSeconds)} (${b.appendSeconds.toFixed(1)} s)`,
    },
    {
      metric: 'append: CPU a event, bench process (generating the events too) + PG backends',
      measured: describeCpu(b.appendCpu, b.events),
    },
    {
      metric: 'seal (sealNextBatch): events sealed/s',
      measured: `${n(sealedRate)}/s (${b.sealSeconds.toFixed(1)} s)`,
      target: `>= ${n(SEALED_TARGET)}/s`,
      met: sealedRate >= SEALED_TARGET,
    },
    { metric: 'seal: CPU a event, bench process + PG backends', measured: describeCpu(b.sealCpu, b.events) },
    {
      metric: 'seal: batches, batch archive size (gzip; JSON)',
      measured:
        `${b.batches.length}, ${kb(archiveBytes / b.batches.length)} (${n(archiveBytes / b.events)} B an event)` +
        (v ? `; ${kb(v.jsonBytes / b.batches.length)} (${n(v.jsonBytes / b.events)} B an event)` : ''),
    },
    {
      metric: `before ANALYZE (audit_events ${b.statistics}): inclusion proof, p50 / p95 / p99`,
      measured: ms(b.inclusionCold),
      target: `p99 < ${PROOF_TARGET_MS} ms`,
      met: b.inclusionCold.p99 < PROOF_TARGET_MS,
    },
    {
      metric: `after ANALYZE (${b.analyzeSeconds.toFixed(1)} s): inclusion proof at the sealing batch's size, p50 / p95 / p99`,
      measured: ms(b.inclusionDefault),
      target: `p99 < ${PROOF_TARGET_MS} ms`,
      met: b.inclusionDefault.p99 < PROOF_TARGET_MS,
    },
    {
      metric: `inclusion proof at the latest size (${n(b.events)}), p50 / p95 / p99`,
      measured: ms(b.inclusionLatest),
      target: `p99 < ${PROOF_TARGET_MS} ms`,
      met: b.inclusionLatest.p99 < PROOF_TARGET_MS,
    },
    { metric: 'consistency proof between random heads, p50 / p95 / p99', measured: ms(b.consistency) },
    {
      metric: "roots and proofs checked against the bench's own tree",
      measured: `${b.batches.length} roots, ${proofs} proofs: ${b.wrong.length} wrong`,
      target: '0 wrong',
      met: b.wrong.length === 0,
    },
    ...(b.profileFile ? [{ metric: 'CPU profile of the sealing', measured: b.profileFile }] : []),
  ];
};

export const verifyRows = (v: VerifyResult, b: BulkResult): BenchRow[] => [
  {
    metric: 'verifyEvidence: events/s',
    measured: `${rate(b.events, v.seconds)} (${v.seconds.toFixed(1)} s; files read before, ${v.readSeconds.toFixed(1)} s)`,
  },
  { metric: 'verifyEvidence: CPU a event, bench process', measured: describeCpu(v.cpu, b.events) },
  {
    metric: 'evidence: archives, gzip / JSON',
    measured: `${v.archives}, ${(v.gzipBytes / 2 ** 20).toFixed(1)} / ${(v.jsonBytes / 2 ** 20).toFixed(1)} MiB`,
  },
  { metric: 'bench process peak RSS (VmHWM) after verifying', measured: `${n(v.peakRssMb)} MB` },
  { metric: 'outcome', measured: v.outcome, target: 'ok', met: v.ok },
];
