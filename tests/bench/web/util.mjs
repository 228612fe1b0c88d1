// Small helpers shared by the browser benchmarks.

/** Rejects when `promise` has not settled within `ms` (page.evaluate has no timeout of its own). */
export async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A cold visitor (a fresh context: empty HTTP cache) on pages/docloupe.html from `server`,
 * whose counters start over. Resolves to {context, call(fn, arg, what), errors}: `call` runs
 * the page's `window[fn](arg)` within `timeoutMs`; `errors` collects the page's uncaught ones.
 */
export async function visitBenchPage(browser, server, timeoutMs) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  server.reset();
  await page.goto(`${server.url}/bench/docloupe.html`);
  await page.waitForFunction(() => typeof window.benchSearch === 'function');
  const call = (fn, arg, what) => withTimeout(page.evaluate(([f, a]) => window[f](a), [fn, arg]), timeoutMs, what);
  return { context, call, errors };
}

const ascending = (values) => [...values].sort((a, b) => a - b);

export function median(values) {
  const s = ascending(values);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Nearest-rank percentile, `p` in (0, 100]. */
export function percentile(values, p) {
  const s = ascending(values);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
}
