import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_MODULES, registerCommands } from './index.js';

const names = (program: Command) => program.commands.map((c) => c.name()).sort();

describe('svc command table (lazy loading, issue 6)', () => {
  it('names exactly the top-level commands each module registers', async () => {
    for (const m of COMMAND_MODULES) {
      const program = new Command();
      (await m.load())(program);
      expect(names(program)).toEqual([...m.names].sort());
    }
  });

  it('gives every top-level name one owner', () => {
    const all = COMMAND_MODULES.flatMap((m) => m.names);
    expect(new Set(all).size).toBe(all.length);
  });

  it('loads only the owning module for a known command, and every module otherwise', async () => {
    const serve = new Command();
    await registerCommands(serve, ['serve', '--roles', 'gateway']);
    expect(names(serve)).toEqual(['serve']);
    const ledger = new Command();
    await registerCommands(ledger, ['ledger', 'replay', '--json']);
    expect(names(ledger)).toEqual(['ledger', 'wallet']);
    const help = new Command();
    await registerCommands(help, ['--help']);
    expect(names(help)).toEqual(COMMAND_MODULES.flatMap((m) => m.names).sort());
    for (const args of [['--help', 'serve'], ['-h', 'keys'], []]) {
      const leading = new Command();
      await registerCommands(leading, args);
      expect(names(leading)).toEqual(COMMAND_MODULES.flatMap((m) => m.names).sort());
    }
    const typo = new Command();
    await registerCommands(typo, ['serv']);
    expect(names(typo)).toHaveLength(COMMAND_MODULES.flatMap((m) => m.names).length);
  });
});
