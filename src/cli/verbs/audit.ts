import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { KEYS_FORMAT, MANIFEST_FORMAT, type PublishedKeys, type SignedManifest } from '../../audit/model.js';
import { type EvidenceFile, type VerifyReport, verifyEvidence } from '../../audit/verify.js';
import type { BatchView } from '../../projections/audit/reads.js';
import { type ApiTarget, apiTarget, callApi } from '../http-client.js';
import { CliError, emit, table } from '../output.js';
import { progress } from '../progress.js';
import { registerAuditTokenVerbs } from './audit-tokens.js';

/**
 * `svc audit` (SPEC 1.8, 4.8, 5): what an auditor runs. `export` fetches a tenant's published keys,
 * batch archives and manifests through the audit read facade; `verify` checks them offline, with
 * nothing but the files. Tokens (`svc audit tokens`) are minted by the operator or a workspace
 * manager; `keys` lists the published signing keys and rotates the active one (operator).
 */

interface ClientFlags {
  url?: string;
  token?: string;
  tenant?: string;
  json?: boolean;
}

/** What `export` records of the tenant's log when it wrote the folder (export.json). */
const EXPORT_FORMAT = 'svc.audit.export.v1';
interface ExportRecord {
  format: typeof EXPORT_FORMAT;
  tenant_id: string;
  batches: number;
  tree_size: number;
  root: string;
}

/** Exit status of `verify` when the evidence does not hold (2), apart from a usage error (1). */
export const VERIFY_FAILED_EXIT = 2;

const target = (flags: ClientFlags): ApiTarget =>
  apiTarget(flags, {
    url: process.env.SVC_AUDIT_URL,
    token: process.env.SVC_AUDIT_TOKEN,
    missingToken: 'no credential: pass --token <audit token> or set SVC_AUDIT_TOKEN',
  });

/** The admin token reads one tenant named by --tenant; an audit token reads its own workspace. */
const tenantQuery = (flags: ClientFlags, extra: Record<string, string> = {}) => {
  const q = new URLSearchParams(extra);
  if (flags.tenant) q.set('tenant_id', flags.tenant);
  const s = q.toString();
  return s ? `?${s}` : '';
};

const withClient = (cmd: Command) =>
  cmd
    .option('--url <url>', 'gateway base URL (default SVC_AUDIT_URL, else this deployment on 127.0.0.1)')
    .option(
      '--token <token>',
      'an audit token with audit:read (default SVC_AUDIT_TOKEN, else the admin token)',
    )
    .option(
      '--tenant <workspace_id>',
      'with the admin token: the tenant to read (a workspace id, or platform)',
    )
    .option('--json', 'print JSON');

const pad = (n: number) => String(n).padStart(12, '0');
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Evidence files under `paths`: archives (*.json.gz), manifests and key files (*.json, by format). */
export const collectEvidence = (
  paths: readonly string[],
): {
  archives: EvidenceFile[];
  manifests: EvidenceFile[];
  keys: PublishedKeys[];
  exports: { name: string; value: ExportRecord }[];
} => {
  const archives: EvidenceFile[] = [];
  const manifests: EvidenceFile[] = [];
  const keys: PublishedKeys[] = [];
  const exports: { name: string; value: ExportRecord }[] = [];
  const visit = (path: string) => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) throw new CliError(`${path}: no such file or folder`);
    if (stat.isDirectory()) {
      for (const name of readdirSync(path).sort()) visit(join(path, name));
      return;
    }
    if (path.endsWith('.json.gz')) {
      archives.push({ name: path, bytes: readFileSync(path) });
      return;
    }
    if (!path.endsWith('.json')) return;
    const bytes = readFileSync(path);
    let parsed: { format?: unknown; manifest?: { format?: unknown } } | null = null;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch {
      // Not JSON: a manifest of ours never is, so it is left for verify to ignore.
    }
    if (parsed?.format === KEYS_FORMAT) keys.push(parsed as unknown as PublishedKeys);
    else if (parsed?.format === EXPORT_FORMAT)
      exports.push({ name: path, value: parsed as unknown as ExportRecord });
    else if (parsed?.manifest?.format === MANIFEST_FORMAT || path.includes('manifests'))
      manifests.push({ name: path, bytes });
  };
  for (const p of paths) visit(p);
  return { archives, manifests, keys, exports };
};

const readKeys = (path: string): PublishedKeys => {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as PublishedKeys;
    if (parsed.format !== KEYS_FORMAT || !Array.isArray(parsed.keys)) throw new Error(`not ${KEYS_FORMAT}`);
    return parsed;
  } catch (err) {
    throw new CliError(
      `${path} is not a published key file: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
};

/** Control characters and bidirectional overrides of evidence are shown escaped, never interpreted by the terminal. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it escapes
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const visible = (text: string): string =>
  text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

const describeFailure = (r: Extract<VerifyReport, { ok: false }>): string =>
  visible(
    [
      'evidence does NOT verify:',
      r.tenant_id !== null ? `tenant ${r.tenant_id}` : null,
      r.batch_no !== null ? `batch ${r.batch_no}` : null,
      r.event_index !== null
        ? `event ${r.event_index}${r.event_id ? ` (${JSON.stringify(r.event_id)})` : ''}`
        : null,
      `in ${r.file}:`,
      r.reason,
    ]
      .filter(Boolean)
      .join(' '),
  );

export interface VerifyOptions {
  keysPath?: string;
  /** Evidence that starts after batch 1 (a later range) is accepted; by default it is a failure. */
  partial?: boolean;
  /** Archives without their manifests are accepted (manifests cover arrival times and archive digests). */
  archivesOnly?: boolean;
  /**
   * A signed head the auditor holds from elsewhere (an earlier export, a report): the evidence must
   * hold the head of this tree size, with this root. Cutting batches off the end is found this way
   * even without the export's own record.
   */
  expect?: { treeSize: number; root: string };
}

const fail = (reason: string, tenantId: string | null = null, file = ''): VerifyReport => ({
  ok: false,
  tenant_id: tenantId,
  batch_no: null,
  event_index: null,
  event_id: null,
  file,
  reason,
});

/**
 * verifyEvidence, and what only the whole set can show: every tenant's evidence starts at batch 1
 * (else batches were left out), manifests are there, and an export's own record (export.json) names
 * the tree size and root the evidence ends at, so batches cut off the end are found too.
 */
export const runVerify = (paths: readonly string[], options: VerifyOptions = {}): VerifyReport => {
  const found = collectEvidence(paths);
  const keySets = options.keysPath ? [readKeys(options.keysPath)] : found.keys;
  if (keySets.length === 0)
    throw new CliError(
      'no published keys: pass --keys <keys.json> (GET /api/audit/keys) or verify an export folder',
    );
  if (found.archives.length === 0)
    throw new CliError(`no batch archives (*.json.gz) under ${paths.join(', ')}`);
  if (found.manifests.length === 0 && !options.archivesOnly)
    return fail(
      'no manifests found beside the archives: without them arrival times and archive digests are unchecked (--archives-only to accept that)',
    );
  const keys: PublishedKeys = { format: KEYS_FORMAT, keys: keySets.flatMap((k) => k.keys) };
  const report = verifyEvidence({ keys, archives: found.archives, manifests: found.manifests });
  if (!report.ok) return report;
  for (const t of report.tenants) {
    if (t.events !== t.tree_size && !options.partial)
      return fail(
        `the evidence starts at index ${t.tree_size - t.events}, not at batch 1: earlier batches are missing (--partial to verify a later range)`,
        t.tenant_id,
      );
  }
  for (const record of found.exports) {
    const t = report.tenants.find((x) => x.tenant_id === record.value.tenant_id);
    if (!t || t.tree_size !== record.value.tree_size || t.root !== record.value.root)
      return fail(
        `${record.name} records tree size ${record.value.tree_size} and root ${record.value.root}; the evidence ends at ${t ? `tree size ${t.tree_size}, root ${t.root}` : 'nothing of that tenant'}: batches are missing`,
        record.value.tenant_id,
        record.name,
      );
  }
  if (options.expect) {
    const { treeSize, root } = options.expect;
    const heads = found.manifests.flatMap((m) => {
      try {
        const head = (JSON.parse(m.bytes.toString('utf8')) as SignedManifest).manifest.head;
        return [{ head, file: m.name }];
      } catch {
        return [];
      }
    });
    const held = heads.find((h) => h.head.tree_size === treeSize);
    if (!held) return fail(`no signed head of tree size ${treeSize} in the evidence: batches are missing`);
    if (held.head.root !== root.toLowerCase())
      return fail(
        `the head of tree size ${treeSize} has root ${held.head.root}, not the expected ${root}: the log was rewritten`,
        held.head.tenant_id,
        held.file,
      );
  }
  return report;
};

const printVerify = (report: VerifyReport, json: boolean | undefined) => {
  emit(json, report, (r) =>
    r.ok
      ? [
          'evidence verifies: signatures, every root, every inclusion and consistency proof, the chain of batches and of manifests, from batch 1',
          table(r.tenants as unknown as Record<string, unknown>[], [
            'tenant_id',
            'batches',
            'events',
            'tree_size',
            'root',
          ]),
        ].join('\n')
      : describeFailure(r),
  );
  if (!report.ok) process.exitCode = VERIFY_FAILED_EXIT;
};

interface ExportSummary {
  tenant_id: string | null;
  batches: number;
  events: number;
  tree_size: number;
  root: string | null;
  written: number;
  reused: number;
  out: string;
  verified: VerifyReport | null;
}

/** Fetches keys, archives and manifests into `out`; files already there with the right digest are kept. */
const runExport = async (flags: ClientFlags & { out: string; verify: boolean }): Promise<ExportSummary> => {
  const t = target(flags);
  mkdirSync(join(flags.out, 'batches'), { recursive: true });
  mkdirSync(join(flags.out, 'manifests'), { recursive: true });
  const keys = await callApi<PublishedKeys>(t, 'the audit API', 'GET', '/api/audit/keys');
  writeFileSync(join(flags.out, 'keys.json'), `${JSON.stringify(keys, null, 2)}\n`);
  const batches: BatchView[] = [];
  for (let after = 0; ; ) {
    const page = await callApi<{ data: BatchView[]; next_after: number | null }>(
      t,
      'the audit API',
      'GET',
      `/api/audit/batches${tenantQuery(flags, { after: String(after), limit: '1000' })}`,
    );
    batches.push(...page.data);
    if (page.next_after === null) break;
    after = page.next_after;
  }
  const bar = progress('export batches', { quiet: flags.json });
  let written = 0;
  let reused = 0;
  const fetchFile = async (path: string, digest: string, route: string) => {
    if (existsSync(path) && sha256(readFileSync(path)) === digest) {
      reused++;
      return;
    }
    const bytes = await callApi(t, 'the audit API', 'GET', `${route}${tenantQuery(flags)}`, { raw: true });
    writeFileSync(path, bytes);
    written++;
  };
  try {
    for (const [i, b] of batches.entries()) {
      await fetchFile(
        join(flags.out, 'batches', `${pad(b.batch_no)}.json.gz`),
        b.archive_sha256,
        `/api/audit/batches/${b.batch_no}/archive`,
      );
      await fetchFile(
        join(flags.out, 'manifests', `${pad(b.batch_no)}.json`),
        b.manifest_sha256,
        `/api/audit/batches/${b.batch_no}/manifest`,
      );
      bar.update(i + 1, batches.length);
    }
  } finally {
    bar.stop();
  }
  const last = batches[batches.length - 1];
  const summary: ExportSummary = {
    tenant_id: last?.head.tenant_id ?? flags.tenant ?? null,
    batches: batches.length,
    events: last ? last.tree_size - (batches[0]?.first_index ?? 0) : 0,
    tree_size: last?.tree_size ?? 0,
    root: last?.root ?? null,
    written,
    reused,
    out: flags.out,
    verified: null,
  };
  if (last) {
    const record: ExportRecord = {
      format: EXPORT_FORMAT,
      tenant_id: last.head.tenant_id,
      batches: batches.length,
      tree_size: last.tree_size,
      root: last.root,
    };
    writeFileSync(join(flags.out, 'export.json'), `${JSON.stringify(record, null, 2)}\n`);
  }
  if (flags.verify && batches.length > 0) summary.verified = runVerify([flags.out]);
  return summary;
};

export const registerAuditCommands = (program: Command): void => {
  const audit = program
    .command('audit')
    .description("audit evidence: export a tenant's signed batches, verify them offline, tokens and keys");

  audit
    .command('verify')
    .description(
      'check batch archives offline: signatures against the published keys, every root, inclusion and ' +
        'consistency proof, and the manifest chain; exits 2 naming the first batch and event that fail',
    )
    .argument('<paths...>', 'archive files (*.json.gz) or folders of them (an export folder holds keys.json)')
    .option(
      '--keys <file>',
      'the published keys (GET /api/audit/keys); default keys.json found in the folders',
    )
    .option('--partial', 'accept evidence that starts after batch 1 (a later range of the log)')
    .option('--archives-only', 'accept archives without their manifests')
    .option(
      '--expect-tree-size <n>',
      'a signed head you hold: the evidence must have the head of this tree size',
    )
    .option('--expect-root <hex>', 'with --expect-tree-size: and that head must have this root')
    .option('--json', 'print JSON')
    .action(
      (
        paths: string[],
        flags: {
          keys?: string;
          partial?: boolean;
          archivesOnly?: boolean;
          expectTreeSize?: string;
          expectRoot?: string;
          json?: boolean;
        },
      ) => {
        if ((flags.expectTreeSize === undefined) !== (flags.expectRoot === undefined))
          throw new CliError('give --expect-tree-size and --expect-root together');
        const treeSize = Number(flags.expectTreeSize);
        if (flags.expectTreeSize !== undefined && !(Number.isSafeInteger(treeSize) && treeSize > 0))
          throw new CliError('--expect-tree-size must be a whole number above 0');
        if (flags.expectRoot !== undefined && !/^[0-9a-fA-F]{64}$/.test(flags.expectRoot))
          throw new CliError('--expect-root must be 64 hex digits');
        printVerify(
          runVerify(paths, {
            keysPath: flags.keys,
            partial: flags.partial,
            archivesOnly: flags.archivesOnly,
            expect: flags.expectRoot === undefined ? undefined : { treeSize, root: flags.expectRoot },
          }),
          flags.json,
        );
      },
    );

  withClient(
    audit
      .command('export')
      .description(
        'write what an auditor takes away: keys.json, every batch archive and manifest of the tenant, ' +
          'then verify them (files already there with the right digest are kept, so a rerun resumes)',
      )
      .requiredOption('--out <folder>', 'folder to write into (created if absent)')
      .option('--no-verify', 'skip the offline verification after the export'),
  ).action(async (flags: ClientFlags & { out: string; verify: boolean }) => {
    const summary = await runExport(flags);
    emit(flags.json, summary, (s) =>
      [
        `exported ${s.batches} batches (${s.written} files written, ${s.reused} already there) of tenant ${s.tenant_id ?? '?'} to ${s.out}`,
        `tree size ${s.tree_size}, root ${s.root ?? '-'}`,
        s.verified ? (s.verified.ok ? 'evidence verifies' : describeFailure(s.verified)) : 'not verified',
      ].join('\n'),
    );
    if (summary.verified && !summary.verified.ok) process.exitCode = VERIFY_FAILED_EXIT;
  });

  withClient(
    audit.command('status').description('events stored and sealed, and batches, of the tenant'),
  ).action(async (flags: ClientFlags) => {
    const status = await callApi<Record<string, unknown>>(
      target(flags),
      'the audit API',
      'GET',
      `/api/audit${tenantQuery(flags)}`,
    );
    emit(flags.json, status, (s) => table([s], ['tenant_id', 'events', 'sealed_events', 'batches']));
  });

  const keys = audit.command('keys').description('the audit signing keys');
  withClient(keys.command('list').description('the published signing keys (public halves)')).action(
    async (flags: ClientFlags) => {
      const published = await callApi<PublishedKeys>(
        target(flags),
        'the audit API',
        'GET',
        '/api/audit/keys',
      );
      emit(flags.json, published, (p) =>
        table(p.keys as unknown as Record<string, unknown>[], [
          'key_id',
          'algorithm',
          'created_at',
          'retired_at',
          'public_key',
        ]),
      );
    },
  );
  withClient(
    keys.command('rotate').description('retire the active signing key and make a new one (admin token)'),
  ).action(async (flags: ClientFlags) => {
    const rotated = await callApi<{ retired: string | null; active: string }>(
      target(flags),
      'the audit API',
      'POST',
      '/api/audit/keys/rotate',
    );
    emit(
      flags.json,
      rotated,
      (r) => `signing key ${r.active} is active${r.retired ? `; ${r.retired} retired` : ''}`,
    );
  });

  registerAuditTokenVerbs(audit);
};
