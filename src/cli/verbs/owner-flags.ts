import type { Command } from 'commander';
import type { OwnerScope } from '../../commands/ports.js';
import { CliError } from '../output.js';

/** `--org`, `--project`, `--api-key`: what a spend cap or a policy is set on. */
export interface OwnerFlags {
  org?: string;
  project?: string;
  apiKey?: string;
}

/** Exactly one of --org, --project, --api-key names the organization, project or key. */
export const ownerOf = (o: OwnerFlags): { scope: OwnerScope; id: string } => {
  const given = [
    ['org', o.org],
    ['project', o.project],
    ['api_key', o.apiKey],
  ].filter((t): t is [OwnerScope, string] => typeof t[1] === 'string');
  if (given.length !== 1) throw new CliError('name exactly one of --org, --project or --api-key');
  return { scope: given[0]![0], id: given[0]![1] };
};

/** The three options, each described as `<what> an organization` and so on, and --json. */
export const withOwnerFlags = (cmd: Command, what: string) =>
  cmd
    .option('--org <org_id>', `${what} an organization`)
    .option('--project <project_id>', `${what} a project`)
    .option('--api-key <api_key_id>', `${what} a service API key`)
    .option('--json', 'print JSON');
