import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core for the console's browser tests. Headless, with the
 * flags this machine needs (no sandbox as root, no background networking on a closed network) and
 * a fresh profile each launch. Where no Chromium is installed the caller skips, unless
 * SVC_REQUIRE_BROWSER=1 (.ci/run sets it), where that is a failure.
 */
const CANDIDATES = [process.env.SVC_CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];

export const chromiumPath = (): string | null => {
  for (const c of CANDIDATES) if (c && existsSync(c)) return c;
  if (process.env.SVC_REQUIRE_BROWSER === '1')
    throw new Error("no Chromium found (install Debian's chromium, or set SVC_CHROMIUM_PATH)");
  return null;
};

export interface LaunchedBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/** Playwright gives each launch a fresh temporary profile (its own --user-data-dir) and removes it. */
export const launchChromium = async (executablePath: string): Promise<LaunchedBrowser> => {
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
  return {
    browser,
    close: () => browser.close(),
  };
};

/** Where a test's screenshots go (kept after the run; `test-artifacts/` is ignored by git). */
export const artifactDir = async (name: string): Promise<string> => {
  const dir = join(process.env.SVC_TEST_ARTIFACTS ?? join(process.cwd(), 'test-artifacts'), name);
  await mkdir(dir, { recursive: true });
  return dir;
};
