/**
 * A real Chromium for dashboard tests (Debian's chromium driven by
 * playwright-core): $CHROMIUM_PATH, else /usr/bin/chromium (.ci/run installs it).
 *
 *   const browser = await launchChromium();
 *   const page = await browser.newPage();
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => Boolean(p));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`no chromium at ${candidates.join(', ')}: install Debian's chromium (.ci/run does) or set CHROMIUM_PATH`);
  return found;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** The page's answers under a loaded CI machine: well past expect.poll's default 1 s. */
export const POLL = { timeout: 10_000 };
