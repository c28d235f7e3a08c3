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
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (p): p is string => Boolean(p),
  );
  const found = candidates.find((p) => existsSync(p));
  if (!found)
    throw new Error(
      `no chromium at ${candidates.join(', ')}: install Debian's chromium (.ci/run does) or set CHROMIUM_PATH`,
    );
  return found;
}

/**
 * Headless (playwright's default), without a sandbox (containers), and quiet on the
 * network: nothing but the pages a test opens (tests reach only 127.0.0.1).
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-dev-shm-usage',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
}

/** The page's answers under a loaded CI machine: well past expect.poll's default 1 s. */
export const POLL = { timeout: 10_000 };
