import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import {
  POLICY_LAYERS,
  POLICY_SCHEMA_VERSION,
  type PolicyLayer,
  type PolicyScope,
} from '../../policy/document.js';
import { CliError, emit, table } from '../output.js';
import { type OwnerFlags, ownerOf, withOwnerFlags } from './owner-flags.js';
import { withControlPlane } from './tenancy.js';

const cli = { id: 'cli' };

interface TargetFlags extends OwnerFlags {
  layer?: string;
}

const layerOf = (o: TargetFlags): PolicyLayer => {
  const layer = o.layer ?? 'workspace';
  if (!(POLICY_LAYERS as readonly string[]).includes(layer))
    throw new CliError(`--layer must be one of ${POLICY_LAYERS.join(', ')}`);
  return layer as PolicyLayer;
};

/** Exactly one of --org, --project, --api-key names the scope; --layer the layer. */
const targetOf = (o: TargetFlags): { layer: PolicyLayer; scope: PolicyScope; id: string } => ({
  layer: layerOf(o),
  ...ownerOf(o),
});

const withTarget = (cmd: Command) =>
  withOwnerFlags(cmd, 'the policy of').option(
    '--layer <layer>',
    "operator (binds the workspace; only the operator changes it) or workspace (its managers')",
    'workspace',
  );

const revisionOf = (raw: string | undefined): { expectedRevision?: number } => {
  if (raw === undefined) return {};
  if (!/^\d{1,9}$/.test(raw)) throw new CliError('--expected-revision must be a whole number');
  return { expectedRevision: Number(raw) };
};

/** The document from --file (`-` for standard input) or --document. */
const documentOf = async (o: { file?: string; document?: string }): Promise<unknown> => {
  if ((o.file === undefined) === (o.document === undefined))
    throw new CliError('give the policy with exactly one of --file <path> or --document <json>');
  const text =
    o.document ??
    (o.file === '-'
      ? await new Promise<string>((resolve, reject) => {
          let s = '';
          process.stdin.setEncoding('utf8');
          process.stdin.on('data', (d: string) => {
            s += d;
          });
          process.stdin.on('end', () => resolve(s));
          process.stdin.on('error', reject);
        })
      : await readFile(o.file!, 'utf8').catch((err: NodeJS.ErrnoException) => {
          throw new CliError(`cannot read ${o.file}: ${err.code ?? err.message}`);
        }));
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`the policy is not JSON: ${(err as Error).message}`);
  }
};

const EXAMPLE = `{"schema_version":${POLICY_SCHEMA_VERSION},"providers":{"deny":["bedrock*"]},"routes":{"deny":["/v1/images/*"]},"max_tokens":4096,"payload_capture":false,"rate_limits":{"requests_per_minute":600,"tokens_per_minute":200000}}`;

export const registerPolicyCommands = (program: Command): void => {
  const policy = program
    .command('policy')
    .description(
      'policies of organizations, projects and API keys (SPEC 1.9): allowed and denied providers, models and routes, a max_tokens ceiling, payload capture and per-key rate limits; rule by rule the narrowest scope wins',
    );
  withTarget(
    policy
      .command('set')
      .description(`set a scope's whole policy document, e.g. ${EXAMPLE}`)
      .option('--file <path>', 'read the JSON document from a file (- for standard input)')
      .option('--document <json>', 'the JSON document inline')
      .option('--expected-revision <n>', 'refuse unless the policy is still at this revision'),
  ).action(
    async (
      opts: TargetFlags & { file?: string; document?: string; expectedRevision?: string; json?: boolean },
    ) => {
      const target = targetOf(opts);
      const document = await documentOf(opts);
      const row = await withControlPlane(async (cp) => {
        await cp.setPolicy(cli, target, document, revisionOf(opts.expectedRevision));
        return cp.reads.policy(target.layer, target.scope, target.id);
      });
      emit(
        opts.json,
        row,
        (r) => `${target.scope} ${target.id}: ${target.layer} policy at revision ${r?.revision}`,
      );
    },
  );
  withTarget(
    policy
      .command('clear')
      .description("remove a scope's policy (the broader scopes' rules apply again)")
      .option('--expected-revision <n>', 'refuse unless the policy is still at this revision'),
  ).action(async (opts: TargetFlags & { expectedRevision?: string; json?: boolean }) => {
    const target = targetOf(opts);
    const { revision } = await withControlPlane((cp) =>
      cp.clearPolicy(cli, target, revisionOf(opts.expectedRevision)),
    );
    emit(
      opts.json,
      { layer: target.layer, scope: target.scope, target_id: target.id, cleared: true, revision },
      () => `${target.scope} ${target.id}: ${target.layer} policy cleared (revision ${revision})`,
    );
  });
  withTarget(policy.command('show').description("print a scope's policy in force")).action(
    async (opts: TargetFlags & { json?: boolean }) => {
      const target = targetOf(opts);
      const row = await withControlPlane((cp) => cp.reads.policy(target.layer, target.scope, target.id));
      if (!row?.document)
        throw new CliError(`no ${target.layer} policy is set on ${target.scope} ${target.id}`);
      emit(
        opts.json,
        row,
        (r) =>
          `revision ${r.revision}, set ${r.updated_at} by ${r.updated_by ?? '-'}\n${JSON.stringify(r.document, null, 2)}`,
      );
    },
  );
  withOwnerFlags(
    policy.command('history').description("every revision of a scope's policies, oldest first"),
    'the policies of',
  )
    .option('--layer <layer>', 'only this layer (default: both)')
    .action(async (opts: TargetFlags & { json?: boolean }) => {
      const only = opts.layer === undefined ? null : layerOf(opts);
      const target = { ...ownerOf(opts) };
      const all = await withControlPlane((cp) => cp.policyHistory(target));
      const history = only ? all.filter((h) => h.layer === only) : all;
      emit(opts.json, { data: history }, (h) =>
        h.data.length === 0
          ? `no policy was ever set on ${target.scope} ${target.id}`
          : table(
              h.data.map((r) => ({ ...r, document: r.document === null ? '-' : JSON.stringify(r.document) })),
              ['revision', 'layer', 'change', 'at', 'by', 'document'],
            ),
      );
    });
  policy
    .command('list')
    .description('the policies in force, all of them or those of one organization')
    .option('--org <org_id>', 'only this organization (its own policy and those of its projects and keys)')
    .option('--json', 'print JSON')
    .action(async (opts: { org?: string; json?: boolean }) => {
      const rows = await withControlPlane((cp) => cp.reads.policies(opts.org ? { orgId: opts.org } : {}));
      emit(opts.json, { data: rows }, (r) =>
        r.data.length === 0
          ? 'no policies'
          : table(r.data as unknown as Record<string, unknown>[], [
              'layer',
              'scope',
              'target_id',
              'org_id',
              'revision',
              'updated_at',
              'updated_by',
            ]),
      );
    });
};
