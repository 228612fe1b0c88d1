// Pagefind in headless Chromium: cold start (everything a first visitor downloads until the
// first query's top 10 results are shown) and warm queries (what each further query adds).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { startServer } from '../../../www/serve.mjs';
import { median, percentile, withTimeout } from './util.mjs';

const HERE = import.meta.dirname;
const PAGEFIND_BIN = path.join(HERE, 'node_modules/.bin/pagefind');
const INDEX_TIMEOUT_MS = 15 * 60_000;

async function pagefindVersion() {
  const pkg = JSON.parse(await fs.readFile(path.join(HERE, 'node_modules/pagefind/package.json'), 'utf8'));
  return pkg.version;
}

async function dirSize(dir) {
  let bytes = 0;
  let files = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || entry.name.startsWith('.')) continue;
    bytes += (await fs.stat(path.join(entry.parentPath, entry.name))).size;
    files += 1;
  }
  return { bytes, files };
}

/**
 * Indexes `htmlDir` into `outDir` with the Pagefind binary from node_modules, unless a
 * marker shows the same Pagefind version already indexed the same directory.
 * Returns the indexing time in ms, or null when the index was reused.
 */
async function buildIndex(htmlDir, outDir, version) {
  const marker = path.join(outDir, '.indexed');
  const stamp = `pagefind ${version}\n${path.resolve(htmlDir)}\n`;
  const previous = await fs.readFile(marker, 'utf8').catch(() => null);
  const hasBundle = await fs.access(path.join(outDir, 'pagefind.js')).then(() => true, () => false);
  if (previous === stamp && hasBundle) return null;

  await fs.rm(outDir, { recursive: true, force: true });
  const t0 = performance.now();
  const run = spawnSync(PAGEFIND_BIN, ['--site', htmlDir, '--output-path', outDir], {
    encoding: 'utf8',
    timeout: INDEX_TIMEOUT_MS,
  });
  const ms = performance.now() - t0;
  if (run.status !== 0) {
    throw new Error(`pagefind failed (${run.error ?? `exit ${run.status}`}):\n${run.stdout}\n${run.stderr}`);
  }
  await fs.writeFile(marker, stamp);
  return ms;
}

/**
 * Runs `queries` (the first one cold) against a Pagefind index of `htmlDir`, built into
 * `outDir` once. Latency is measured in the page (search() call → top 10 data loaded);
 * bytes and requests are counted by the server (response bodies, brotli where a CDN would).
 */
export async function benchPagefind({
  browser,
  htmlDir,
  outDir,
  queries,
  brotliCacheDir,
  timeoutMs = 60_000,
}) {
  if (queries.length < 2) throw new Error('benchPagefind needs a cold query and at least one warm one');
  const version = await pagefindVersion();
  const indexMs = await buildIndex(htmlDir, outDir, version);
  const index = await dirSize(outDir);

  const server = await startServer(
    { '/': htmlDir, '/pagefind/': outDir, '/bench/': path.join(HERE, 'pages') },
    { brotliCacheDir },
  );
  // A fresh context has an empty HTTP cache: the first visit is a cold start.
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(timeoutMs);
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));
    const query = (q) =>
      withTimeout(page.evaluate((q) => window.benchQuery(q), q), timeoutMs, `pagefind query "${q}"`);

    server.reset();
    await page.goto(`${server.url}/bench/pagefind.html`);
    await page.waitForFunction(() => typeof window.benchQuery === 'function');
    const first = await query(queries[0]);
    const cold = server.stats();

    const warm = [];
    for (const q of queries.slice(1)) {
      server.reset();
      const r = await query(q);
      const s = server.stats();
      warm.push({ query: q, ms: r.ms, bytes: s.bytes, requests: s.requests, hits: r.hits, top: r.top });
    }
    if (errors.length) throw new Error(`errors in the page:\n${errors.join('\n')}`);

    const ms = warm.map((w) => w.ms);
    return {
      engine: `pagefind ${version}`,
      indexMs,
      indexBytes: index.bytes,
      indexFiles: index.files,
      cold: {
        query: queries[0],
        bytes: cold.bytes,
        requests: cold.requests,
        importMs: first.importMs,
        firstQueryMs: first.ms,
        sinceNavigationMs: first.sinceNavigationMs,
        hits: first.hits,
        top: first.top,
        list: cold.list,
      },
      warm: {
        queries: warm.length,
        medianMs: median(ms),
        p95Ms: percentile(ms, 95),
        medianBytes: median(warm.map((w) => w.bytes)),
        medianRequests: median(warm.map((w) => w.requests)),
        totalBytes: warm.reduce((sum, w) => sum + w.bytes, 0),
        perQuery: warm,
      },
    };
  } finally {
    await context.close();
    await server.close();
  }
}
