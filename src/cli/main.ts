import { Command, CommanderError } from 'commander';
import { VERSION } from '../lib/version.js';
import { fail } from './output.js';
import { registerCommands } from './verbs/index.js';

const program = new Command('svc')
  .description('Model Gateway Service: one binary for every role and every operator command')
  .version(VERSION)
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

await registerCommands(program, process.argv.slice(2));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  fail(err, process.argv.includes('--json'));
}
