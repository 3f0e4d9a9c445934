import { Command, CommanderError } from 'commander';
import { VERSION } from '../lib/version.js';
import { registerAuthCommands } from './commands/auth.js';
import { registerCatalogCommands } from './commands/catalog.js';
import { registerDatabaseCommands } from './commands/database.js';
import { registerDlqCommands } from './commands/dlq.js';
import { registerRegistryCommands } from './commands/registry.js';
import { registerServe } from './commands/serve.js';
import { registerSpendCapCommands } from './commands/spend-caps.js';
import { registerTenancyCommands } from './commands/tenancy.js';
import { registerWalletCommands } from './commands/wallet.js';
import { fail } from './output.js';

const program = new Command('svc')
  .description('Model Gateway Service: one binary for every role and every operator command')
  .version(VERSION)
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

registerServe(program);
registerDatabaseCommands(program);
registerDlqCommands(program);
registerRegistryCommands(program);
registerCatalogCommands(program);
registerTenancyCommands(program);
registerSpendCapCommands(program);
registerWalletCommands(program);
registerAuthCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  fail(err, process.argv.includes('--json'));
}
