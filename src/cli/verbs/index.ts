import type { Command } from 'commander';

/**
 * Every command module, with the top-level command names it registers. `svc <name>` loads only
 * the module that owns <name>, so `svc serve` does not load the wallet's payment client, the
 * catalog collectors or the job runner only to leave them unused (about 20 MB of a gateway's
 * start-up RSS); anything else (`svc --help`, a typo) loads them all.
 * `index.unit.test.ts` holds each entry to what its module really registers.
 */
export const COMMAND_MODULES: readonly {
  names: readonly string[];
  load: () => Promise<(program: Command) => void>;
}[] = [
  { names: ['serve'], load: async () => (await import('./serve.js')).registerServe },
  {
    names: ['config', 'migrate', 'projections', 'replay'],
    load: async () => (await import('./database.js')).registerDatabaseCommands,
  },
  { names: ['dlq'], load: async () => (await import('./dlq.js')).registerDlqCommands },
  {
    names: ['registry', 'models'],
    load: async () => (await import('./registry.js')).registerRegistryCommands,
  },
  { names: ['catalog'], load: async () => (await import('./catalog.js')).registerCatalogCommands },
  {
    names: ['bootstrap', 'keys', 'connections', 'users', 'sessions'],
    load: async () => (await import('./tenancy.js')).registerTenancyCommands,
  },
  { names: ['spend-caps'], load: async () => (await import('./spend-caps.js')).registerSpendCapCommands },
  { names: ['policy'], load: async () => (await import('./policy.js')).registerPolicyCommands },
  { names: ['wallet', 'ledger'], load: async () => (await import('./wallet.js')).registerWalletCommands },
  { names: ['registration', 'console'], load: async () => (await import('./auth.js')).registerAuthCommands },
  { names: ['traces'], load: async () => (await import('./traces.js')).registerTraceCommands },
  { names: ['audit'], load: async () => (await import('./audit.js')).registerAuditCommands },
  { names: ['demo'], load: async () => (await import('./demo.js')).registerDemoCommands },
];

/**
 * Registers the module owning the command `args` starts with (process.argv after node and the
 * script), or every module: after a leading option (`svc --help serve`) the top-level help must
 * list them all.
 */
export const registerCommands = async (program: Command, args: readonly string[]): Promise<void> => {
  const name = args[0];
  const owner = COMMAND_MODULES.find((m) => name !== undefined && m.names.includes(name));
  for (const m of owner ? [owner] : COMMAND_MODULES) (await m.load())(program);
};
