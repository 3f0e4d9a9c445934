import cliProgress from 'cli-progress';

export interface Progress {
  update(done: number, total: number): void;
  stop(): void;
}

/**
 * A progress bar on a terminal (stderr); elsewhere, at most one line every few seconds, so logs of
 * long operations in CI still show they move.
 */
export const progress = (label: string, options: { quiet?: boolean } = {}): Progress => {
  if (options.quiet) return { update: () => {}, stop: () => {} };
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label} [{bar}] {percentage}% {value}/{total} eta {eta}s`,
        stream: process.stderr,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      update: (done, total) => {
        if (!started) {
          bar.start(total, done);
          started = true;
        }
        bar.setTotal(total);
        bar.update(done);
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  let last = 0;
  return {
    update: (done, total) => {
      const now = Date.now();
      if (now - last < 5_000 && done < total) return;
      last = now;
      process.stderr.write(`${label}: ${done}/${total}\n`);
    },
    stop: () => {},
  };
};
