import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { leafHash, MerkleTree, verifyConsistency, verifyInclusion } from '../../src/audit/merkle.js';
import { archiveKey, manifestKey } from '../../src/audit/model.js';
import { verifyEvidence } from '../../src/audit/verify.js';
import type { Pool } from '../../src/events/postgres/pool.js';
import type { ObjectStore } from '../../src/objects/port.js';
import { publishedKeys } from '../../src/projections/audit/keys.js';
import { appendAuditEvents, type IncomingAuditEvent } from '../../src/projections/audit/log.js';
import {
  AuditReads,
  type ConsistencyProofView,
  type InclusionProofView,
} from '../../src/projections/audit/reads.js';
import { type SealDeps, type SealedBatch, sealNextBatch } from '../../src/projections/audit/sealer.js';
import type { AuditEventFactory } from './events.js';
import type { CpuMeter, CpuWindow } from './meter.js';

/**
 * Phase 2: one tenant's log at scale. Appends (appendAuditEvents, in chunks), then seals every
 * event (sealNextBatch, one batch after another), then times inclusion and consistency proofs
 * through AuditReads. Every root and proof is checked against a MerkleTree the bench builds itself
 * from the event bytes it generated, so a fast wrong answer fails the run instead of being timed.
 */

export interface BulkOptions {
  pool: Pool;
  objects: ObjectStore;
  masterKey: Buffer;
  /** Where batches are built: the audit role's seal thread, as `svc serve` runs it. */
  builder: SealDeps['builder'];
  tenant: string;
  events: number;
  chunk: number;
  maxEvents: number;
  proofs: number;
  consistencyProofs: number;
  warmup: number;
  /** Inclusion proofs timed before the bench runs ANALYZE, in whatever statistics state it finds. */
  coldProofs: number;
  random: () => number;
  makeEvent: AuditEventFactory;
  meter: CpuMeter;
  say: (text: string) => void;
  /** Starts a CPU profile of the sealing phase when asked for; resolves to its file, or null. */
  profile: (label: string) => () => Promise<string | null>;
}

export interface Timings {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

export interface BulkResult {
  events: number;
  appendSeconds: number;
  appendCpu: CpuWindow;
  sealSeconds: number;
  sealCpu: CpuWindow;
  batches: SealedBatch[];
  profileFile: string | null;
  /** Before ANALYZE: whether autovacuum had analyzed audit_events by then, and the proofs timed. */
  statistics: string;
  inclusionCold: Timings;
  analyzeSeconds: number;
  inclusionDefault: Timings;
  inclusionLatest: Timings;
  consistency: Timings;
  /** Everything checked against the bench's own tree; a non-empty list fails the run. */
  wrong: string[];
  tree: MerkleTree;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export const summarise = (ms: number[]): Timings => {
  const sorted = ms.toSorted((a, b) => a - b);
  return {
    count: ms.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? 0,
    mean: ms.reduce((a, b) => a + b, 0) / Math.max(1, ms.length),
  };
};

const every = (total: number, parts: number) => Math.max(1, Math.ceil(total / parts));

const append = async (o: BulkOptions, leaves: Buffer) => {
  const cpuBefore = await o.meter.start();
  const started = performance.now();
  const step = every(o.events, 10);
  for (let from = 0; from < o.events; from += o.chunk) {
    const events: IncomingAuditEvent[] = [];
    for (let i = from; i < Math.min(o.events, from + o.chunk); i++) {
      const e = o.makeEvent(o.tenant, i);
      leafHash(e.bytes).copy(leaves, i * 32);
      events.push(e);
    }
    const r = await appendAuditEvents(o.pool, events);
    if (r.appended !== events.length)
      throw new Error(
        `append at ${from}: ${r.appended} stored, ${r.duplicates} duplicates of ${events.length}`,
      );
    const done = from + events.length;
    if (Math.floor(done / step) > Math.floor(from / step) || done === o.events)
      o.say(
        `append: ${done.toLocaleString('en-US')} / ${o.events.toLocaleString('en-US')} (${Math.round(done / ((performance.now() - started) / 1000)).toLocaleString('en-US')}/s)\n`,
      );
  }
  return { seconds: (performance.now() - started) / 1000, cpu: await o.meter.since(cpuBefore) };
};

const seal = async (o: BulkOptions) => {
  const deps = { pool: o.pool, objects: o.objects, masterKey: o.masterKey, builder: o.builder };
  const batches: SealedBatch[] = [];
  const stopProfile = o.profile('seal');
  const cpuBefore = await o.meter.start();
  const started = performance.now();
  let lastSay = started;
  let sealedAtSay = 0;
  for (;;) {
    const b = await sealNextBatch(deps, o.tenant, { maxEvents: o.maxEvents, maxAgeMs: 0 });
    if (!b) break;
    batches.push(b);
    const now = performance.now();
    if (now - lastSay >= 5_000 || b.treeSize === o.events) {
      const recent = Math.round((b.treeSize - sealedAtSay) / ((now - lastSay) / 1000));
      o.say(
        `seal: ${b.treeSize.toLocaleString('en-US')} / ${o.events.toLocaleString('en-US')} in ${batches.length} batches (${Math.round(b.treeSize / ((now - started) / 1000)).toLocaleString('en-US')}/s, lately ${recent.toLocaleString('en-US')}/s)\n`,
      );
      lastSay = now;
      sealedAtSay = b.treeSize;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = await o.meter.since(cpuBefore);
  const profileFile = await stopProfile();
  return { batches, seconds, cpu, profileFile };
};

const hex = (b: Buffer) => b.toString('hex');
const fromHex = (h: string) => Buffer.from(h, 'hex');

interface Call<T> {
  run: () => Promise<T>;
  check: (value: T) => string | null;
}

/** Timed calls one after another, after `warmup` untimed ones; preparing and checking are not timed. */
const timeCalls = async <T>(n: number, warmup: number, prepare: () => Call<T>, wrong: string[]) => {
  const ms: number[] = [];
  for (let k = 0; k < warmup + n; k++) {
    const { run, check } = prepare();
    const started = performance.now();
    const value = await run();
    const elapsed = performance.now() - started;
    if (k >= warmup) ms.push(elapsed);
    const problem = check(value);
    if (problem) wrong.push(problem);
  }
  return ms;
};

const statisticsOf = async (pool: Pool): Promise<string> => {
  const { rows } = await pool.query<{ analyzed: Date | null; modified: number }>(
    `SELECT greatest(last_analyze, last_autoanalyze) AS analyzed, n_mod_since_analyze::bigint AS modified
       FROM pg_stat_user_tables WHERE relname = 'audit_events'`,
  );
  const r = rows[0];
  if (!r?.analyzed) return 'never analyzed';
  const ago = Math.round((Date.now() - r.analyzed.getTime()) / 1000);
  return `analyzed by autovacuum ${ago} s before, ${r.modified.toLocaleString('en-US')} rows changed since`;
};

export const runBulk = async (o: BulkOptions): Promise<BulkResult> => {
  const leaves = Buffer.alloc(o.events * 32);
  o.say(
    `append: ${o.events.toLocaleString('en-US')} events for tenant ${o.tenant} in chunks of ${o.chunk}\n`,
  );
  const appended = await append(o, leaves);
  // Leaves are cut from the one buffer when asked for: a million views held through the timed
  // proofs were a million more objects for every full GC of this process to mark.
  const leafAt = (i: number) => leaves.subarray(i * 32, i * 32 + 32);
  const tree = new MerkleTree(Array.from({ length: o.events }, (_, i) => leafAt(i)));

  o.say(`seal: batches of up to ${o.maxEvents}\n`);
  const sealed = await seal(o);
  const wrong: string[] = [];
  let expectedFirst = 0;
  for (const b of sealed.batches) {
    if (b.firstIndex !== expectedFirst)
      wrong.push(`batch ${b.batchNo} starts at ${b.firstIndex}, not ${expectedFirst}`);
    if (b.root !== hex(tree.root(b.treeSize)))
      wrong.push(`batch ${b.batchNo}: root ${b.root} is not the bench's MTH of ${b.treeSize} leaves`);
    expectedFirst = b.treeSize;
  }
  if (expectedFirst !== o.events) wrong.push(`sealed ${expectedFirst} of ${o.events} events`);
  const sizes = sealed.batches.map((b) => b.treeSize);
  const sealingSize = (i: number) => sizes.find((s) => s > i)!;

  const reads = new AuditReads(o.pool, o.objects);
  const pick = () => Math.floor(o.random() * o.events);
  const inclusion = (treeSize: number | undefined) => () => {
    const i = pick();
    const eventId = o.makeEvent(o.tenant, i).eventId;
    return {
      run: () => reads.inclusionProof(o.tenant, eventId, treeSize),
      check: (p: InclusionProofView) => {
        const size = treeSize ?? sealingSize(i);
        const ok =
          p.index === i &&
          p.tree_size === size &&
          p.leaf === hex(leafAt(i)) &&
          p.root === hex(tree.root(size)) &&
          verifyInclusion(i, size, leafAt(i), p.proof.map(fromHex), tree.root(size));
        return ok ? null : `inclusion proof of event ${i} in tree size ${size} does not verify`;
      },
    };
  };
  const latest = sizes.at(-1) ?? 0;
  // A freshly filled table has no statistics until autovacuum's analyze comes round (a minute's
  // naptime, then 10% growth), and some proof queries plan differently without them: a few proofs
  // as found, then ANALYZE, as a table in steady state has been.
  const statistics = await statisticsOf(o.pool);
  o.say(`proofs: ${o.coldProofs} before ANALYZE (audit_events ${statistics})\n`);
  const inclusionCold = await timeCalls(o.coldProofs, Math.min(o.warmup, 2), inclusion(undefined), wrong);
  const analyzeStarted = performance.now();
  await o.pool.query('ANALYZE audit_events, audit_nodes, audit_batches, audit_logs');
  const analyzeSeconds = (performance.now() - analyzeStarted) / 1000;
  o.say(
    `proofs: ${o.proofs} inclusion proofs at the sealing batch's tree size, ${o.proofs} at the latest (${latest.toLocaleString('en-US')}), ${o.consistencyProofs} consistency proofs (${o.warmup} untimed first each)\n`,
  );
  const inclusionDefault = await timeCalls(o.proofs, o.warmup, inclusion(undefined), wrong);
  const inclusionLatest = await timeCalls(o.proofs, o.warmup, inclusion(latest), wrong);
  const consistency = await timeCalls(
    o.consistencyProofs,
    o.warmup,
    () => {
      let a = sizes[Math.floor(o.random() * sizes.length)]!;
      let b = sizes[Math.floor(o.random() * sizes.length)]!;
      if (a > b) [a, b] = [b, a];
      if (a === b && sizes.length > 1) a = sizes[0]!;
      return {
        run: () => reads.consistencyProof(o.tenant, a, b),
        check: (p: ConsistencyProofView) =>
          p.from.root === hex(tree.root(a)) &&
          p.to.root === hex(tree.root(b)) &&
          verifyConsistency(a, b, tree.root(a), tree.root(b), p.proof.map(fromHex))
            ? null
            : `consistency proof from ${a} to ${b} does not verify`,
      };
    },
    wrong,
  );
  o.say(`proofs: done, ${wrong.length === 0 ? 'every one verified' : `${wrong.length} WRONG`}\n`);
  return {
    events: o.events,
    appendSeconds: appended.seconds,
    appendCpu: appended.cpu,
    sealSeconds: sealed.seconds,
    sealCpu: sealed.cpu,
    batches: sealed.batches,
    profileFile: sealed.profileFile,
    statistics,
    inclusionCold: summarise(inclusionCold),
    analyzeSeconds,
    inclusionDefault: summarise(inclusionDefault),
    inclusionLatest: summarise(inclusionLatest),
    consistency: summarise(consistency),
    wrong,
    tree,
  };
};

export interface VerifyResult {
  archives: number;
  gzipBytes: number;
  jsonBytes: number;
  readSeconds: number;
  seconds: number;
  cpu: CpuWindow;
  /** VmHWM of this process after the verification, MB: the verifier holds every archive parsed. */
  peakRssMb: number;
  outcome: string;
  ok: boolean;
}

/**
 * Phase 3: `svc audit verify` over the tenant's evidence (src/cli/verbs/audit.ts reads every file
 * and calls verifyEvidence once); the files are read first, not timed.
 */
export const runVerify = async (o: BulkOptions, bulk: BulkResult): Promise<VerifyResult> => {
  o.say(`verify: reading ${bulk.batches.length} archives and manifests... `);
  const readStarted = performance.now();
  const archives = [];
  const manifests = [];
  let gzipBytes = 0;
  let jsonBytes = 0;
  for (const b of bulk.batches) {
    const bytes = await o.objects.get(o.tenant, archiveKey(b.batchNo));
    gzipBytes += bytes.length;
    jsonBytes += gunzipSync(bytes).length;
    archives.push({ name: archiveKey(b.batchNo), bytes });
    manifests.push({
      name: manifestKey(b.batchNo),
      bytes: await o.objects.get(o.tenant, manifestKey(b.batchNo)),
    });
  }
  const keys = await publishedKeys(o.pool);
  const readSeconds = (performance.now() - readStarted) / 1000;
  o.say(`${readSeconds.toFixed(1)} s; verifying ${bulk.events.toLocaleString('en-US')} events... `);
  const cpuBefore = await o.meter.start();
  const started = performance.now();
  const report = verifyEvidence({ keys, archives, manifests });
  const seconds = (performance.now() - started) / 1000;
  const cpu = await o.meter.since(cpuBefore);
  const root = bulk.tree.root().toString('hex');
  const summary = report.ok ? report.tenants.find((t) => t.tenant_id === o.tenant) : undefined;
  const ok =
    report.ok &&
    summary?.events === bulk.events &&
    summary.tree_size === bulk.events &&
    summary.root === root;
  const outcome = !report.ok
    ? `FAILED: ${report.file}: ${report.reason}`
    : ok
      ? `ok, ${summary!.batches} batches, ${summary!.events.toLocaleString('en-US')} events, root as the bench's`
      : `WRONG summary: ${JSON.stringify(summary)}`;
  o.say(`${seconds.toFixed(1)} s: ${outcome}\n`);
  return {
    archives: archives.length,
    gzipBytes,
    jsonBytes,
    readSeconds,
    seconds,
    cpu,
    peakRssMb: await peakRssMb(),
    outcome,
    ok,
  };
};

const peakRssMb = async (): Promise<number> => {
  const status = await readFile('/proc/self/status', 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024;
};
