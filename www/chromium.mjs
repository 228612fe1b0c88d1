// The Chromium every browser test, benchmark and demo check uses: Debian's, headless, with
// the flags a root user in a container needs. playwright-core drives it (it never downloads a
// browser); it gives each launch a fresh user-data dir.
export const CHROMIUM_PATH = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
