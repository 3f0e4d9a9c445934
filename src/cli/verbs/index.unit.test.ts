import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_MODULES, registerCommands } from './index.js';

const names = (program: Command) => program.commands.map((c) => c.name()).sort();
const everyName = COMMAND_MODULES.flatMap((m) => m.names).sort();

describe('svc command table (lazy loading)', () => {
  it('names exactly the top-level commands each module registers', async () => {
    for (const m of COMMAND_MODULES) {
      const program = new Command();
      (await m.load())(program);
      expect(names(program)).toEqual([...m.names].sort());
    }
  });

  it('gives every top-level name one owner', () => {
    expect(new Set(everyName).size).toBe(everyName.length);
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
    expect(names(help)).toEqual(everyName);
    for (const args of [['--help', 'serve'], ['-h', 'keys'], []]) {
      const leading = new Command();
      await registerCommands(leading, args);
      expect(names(leading)).toEqual(everyName);
    }
    const typo = new Command();
    await registerCommands(typo, ['serv']);
    expect(names(typo)).toHaveLength(everyName.length);
  });
});
