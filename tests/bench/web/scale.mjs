// The browser over a big split bundle (make bench-scale's `--browser`): headless Chromium
// through the JS API (Web Worker), the split folder served from 127.0.0.1 as it is (no
// compression: brotli at quality 11 over hundreds of MB of split files would take longer than
// the run). Reports the first fulltext answer (bytes, time), how long the embedding model and
// the vector files take to arrive (bytes, files), then per mode the latency around
// `await engine.search()` once a query's files are in (an untimed pass fetches them first):
// fulltext, hybrid, and hybrid with the default second stage (the learned ranker).
//   node tests/bench/web/scale.mjs --split DIR --model-dir DIR --queries FILE
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../../www/chromium.mjs';
import { startServer } from '../../../www/serve.mjs';
import { median, percentile, visitBenchPage } from './util.mjs';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  if (i < 0 || !process.argv[i + 1]) throw new Error(`${name} is required`);
  return path.resolve(process.argv[i + 1]);
};
const splitDir = arg('--split');
const modelDir = arg('--model-dir');
const queries = fs.readFileSync(arg('--queries'), 'utf8').split('\n').map((q) => q.trim()).filter(Boolean);
const TIMEOUT = 1_800_000;
const HERE = import.meta.dirname;

const server = await startServer({
  '/bench/': path.join(HERE, 'pages'),
  '/www/': path.resolve(HERE, '../../../www'),
  '/split/': { dir: splitDir, compress: false },
  '/models/': { dir: modelDir, compress: false },
});
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
const mb = (b) => `${(b / 1e6).toFixed(1)} MB`;
const line = (label, xs) =>
  console.log(`  ${label.padEnd(32)} p50 ${median(xs).toFixed(1)} ms, p95 ${percentile(xs, 95).toFixed(1)} ms (${xs.length} queries)`);
const visit = () => visitBenchPage(browser, server, TIMEOUT);
const errors = [];
try {
  console.log(`browser (headless Chromium, Web Worker) over ${splitDir}`);
  // 1. A cold visitor without the models: what the first fulltext answer costs.
  const a = await visit();
  await a.call('benchOpen', { bundle: '/split/', worker: true }, 'open');
  const first = await a.call('benchSearch', { query: queries[0], mode: 'fulltext' }, 'first query');
  const cold = server.stats();
  console.log(`  first fulltext answer, cold: ${(cold.bytes / 1000).toFixed(1)} KB in ${cold.requests} requests, ` +
    `${first.sinceNavigationMs.toFixed(0)} ms after navigation`);
  errors.push(...a.errors);
  await a.context.close();
  // 2. With the embedding model: the vector files come with it, then each mode warm.
  const { context, call, errors: pageErrors } = await visit();
  const models = { embedding: { onnx: '/models/model.int8.onnx', tokenizer: '/models/tokenizer.json' } };
  await call('benchOpen', { bundle: '/split/', models, worker: true }, 'open with the model');
  const ready = await call('benchReady', null, 'model');
  if (ready.phase !== 'ready') throw new Error(`models failed: ${JSON.stringify(ready.error ?? ready)}`);
  const loaded = server.stats();
  const vectors = loaded.list.filter((r) => /\/vec-\d+\.bin$/.test(r.url));
  console.log(`  model and vectors in ${(ready.sinceNavigationMs / 1000).toFixed(1)} s after navigation: ` +
    `${mb(loaded.bytes)} in all, vectors ${mb(vectors.reduce((n, r) => n + r.bytes, 0))} in ${vectors.length} files`);
  for (const [label, request] of [
    ['fulltext', { mode: 'fulltext' }],
    ['hybrid', { mode: 'hybrid', rerank: false }],
    ['hybrid + second stage (default)', { mode: 'hybrid' }],
  ]) {
    for (const query of queries) await call('benchSearch', { query, ...request }, `${query} (fetching its files)`);
    const runs = [];
    for (const query of queries) runs.push(await call('benchSearch', { query, ...request }, query));
    line(label, runs.map((r) => r.ms));
    // The engine's own stage timings (the worker round trip is the rest).
    const stages = ['embedMs', 'retrieveMs', 'rerankMs'].filter((k) => typeof runs[0].timings?.[k] === 'number');
    if (stages.length) {
      console.log(`    engine: ${stages.map((k) => `${k} p50 ${median(runs.map((r) => r.timings[k])).toFixed(1)}`).join(', ')}`);
    }
  }
  errors.push(...pageErrors);
  if (errors.length) throw new Error(`errors in the page:\n${errors.join('\n')}`);
  await context.close();
} finally {
  await browser.close();
  await server.close();
}
