// onnxruntime-web (wasm execution provider, 1 thread) in headless Chromium: the cost of the
// query embedding alone, for comparison with docloupe's own in-wasm model.
import path from 'node:path';
import { startServer } from '../../../www/serve.mjs';
import { median, percentile, withTimeout } from './util.mjs';

const HERE = import.meta.dirname;
const ORT_DIST = path.join(HERE, 'node_modules/onnxruntime-web/dist');

/**
 * Embeds each query of `tokenIds` (token id arrays, [CLS] … [SEP]) with the ONNX model at
 * `modelPath`: `warmup` runs first, then `reps` timed runs per query, keeping each query's
 * median. Times are taken in the page with performance.now().
 */
export async function benchOrt({
  browser,
  modelPath,
  tokenIds,
  warmup = 3,
  reps = 5,
  brotliCacheDir,
  timeoutMs = 300_000,
}) {
  const server = await startServer(
    {
      '/ort/': ORT_DIST,
      // fp32 weights: brotli 11 would take minutes for ~8% less; only latency is measured here.
      '/model/': { dir: path.dirname(modelPath), compress: false },
      '/bench/': path.join(HERE, 'pages'),
    },
    { brotliCacheDir },
  );
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(timeoutMs);
    await page.goto(`${server.url}/bench/ort.html`);
    await page.waitForFunction(() => typeof window.benchOrt === 'function');
    server.reset();
    const args = {
      distUrl: `${server.url}/ort/`,
      modelUrl: `${server.url}/model/${path.basename(modelPath)}`,
      tokenIds,
      warmup,
      reps,
    };
    const r = await withTimeout(page.evaluate((a) => window.benchOrt(a), args), timeoutMs, 'onnxruntime-web');
    const load = server.stats();
    const ms = r.perQuery.map((q) => q.ms);
    return {
      ortVersion: r.ortVersion,
      inputNames: r.inputNames,
      outputNames: r.outputNames,
      modelLoadMs: r.modelLoadMs,
      loadBytes: load.bytes,
      loadRequests: load.requests,
      loadList: load.list,
      medianMs: median(ms),
      p95Ms: percentile(ms, 95),
      perQuery: r.perQuery,
    };
  } finally {
    await context.close();
    await server.close();
  }
}
