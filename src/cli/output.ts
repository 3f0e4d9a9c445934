import { describeError } from '../lib/errors.js';

/** Thrown by commands for an expected failure: printed as one line, exit code 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Prints `data` as JSON with --json, otherwise the human rendering. */
export const emit = <T>(
  json: boolean | undefined,
  data: T,
  human: (data: T) => string,
  options: { compact?: boolean } = {},
): void => {
  const rendered = json ? JSON.stringify(data, null, options.compact ? undefined : 2) : human(data);
  process.stdout.write(`${rendered}\n`);
};

/** The one way a command ends in failure: `svc: <message>` on stderr, never a stack trace. */
export const fail = (err: unknown, json = false): never => {
  const message = describeError(err);
  if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
  process.stderr.write(`svc: ${message}\n`);
  process.exit(err instanceof CliError ? err.exitCode : 1);
};

export const table = (rows: Record<string, unknown>[], columns: string[]): string => {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(columns),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(columns.map((c) => String(r[c] ?? '')))),
  ].join('\n');
};
