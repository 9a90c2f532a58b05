/**
 * Headless Chromium for the console's browser test: Debian's package (`apt-get install
 * chromium`, which .ci/run does), driven by puppeteer-core; nothing is downloaded. The browser
 * reaches loopback only: every other host name resolves to nothing, and its background
 * services (updates, sync, metrics) are off.
 */
import { access, constants } from "node:fs/promises";
import puppeteer, { type Browser } from "puppeteer-core";

/** Where Chromium is: SANDPOOL_CHROMIUM, else Debian's path. */
export const CHROMIUM = process.env.SANDPOOL_CHROMIUM ?? "/usr/bin/chromium";

export async function chromiumInstalled(): Promise<boolean> {
  try {
    await access(CHROMIUM, constants.X_OK);
    return true;
  } catch {
    throw new Error(`no Chromium at ${CHROMIUM} (set SANDPOOL_CHROMIUM to another)`);
  }
}

export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      // CI runs as root, where Chromium's sandbox cannot start.
      "--no-sandbox",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--no-proxy-server",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-domain-reliability",
      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    ],
  });
}
