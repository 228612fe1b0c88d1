// docloupe.js in real headless Chromium: in a Web Worker by default, on the page's thread
// when workers are unavailable, and through either the same answers as native. Run by
// tests/wasm/run.sh (env: DOCLOUPE_BUNDLE, DOCLOUPE_MODEL_DIR, DOCLOUPE_RERANKER_DIR,
// DOCLOUPE_NATIVE: `docloupe search --jsonl` answers to tests/parity/requests.jsonl).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../www/serve.mjs';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../www/chromium.mjs';
import { compareResponses } from './compare.mjs';
import { env } from './env.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { chromium } = createRequire(path.join(ROOT, 'www/package.json'))('playwright-core');

let server, browser, page;
const site = fs.mkdtempSync(path.join(os.tmpdir(), 'docloupe-browser-'));

before(async () => {
  const bundle = env('DOCLOUPE_BUNDLE');
  fs.writeFileSync(path.join(site, 'index.html'), '<!doctype html><meta charset="utf-8"><title>docloupe test</title>');
  fs.copyFileSync(bundle, path.join(site, 'docs.bundle'));
  const flipped = fs.readFileSync(bundle);
  flipped[flipped.length - 5] ^= 0xff;
  fs.writeFileSync(path.join(site, 'corrupt.bundle'), flipped);
  fs.copyFileSync(path.join(ROOT, 'tests/parity/requests.jsonl'), path.join(site, 'requests.jsonl'));
  fs.cpSync(env('DOCLOUPE_SPLIT'), path.join(site, 'split'), { recursive: true });
  server = await startServer({
    '/': site,
    '/www/': { dir: path.join(ROOT, 'www'), compress: false },
    '/models/': { dir: env('DOCLOUPE_MODEL_DIR'), compress: false },
    '/reranker/': { dir: env('DOCLOUPE_RERANKER_DIR'), compress: false },
  });
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 60_000 });
});

after(async () => {
  await browser?.close();
  await server?.close();
  fs.rmSync(site, { recursive: true, force: true });
});

async function freshPage({ noWorker = false, brokenWorker = false } = {}) {
  const context = await browser.newContext();
  const p = await context.newPage();
  p.setDefaultTimeout(120_000);
  if (noWorker) await p.addInitScript(() => { delete globalThis.Worker; });
  // A worker that starts but dies before answering (as when its script cannot load).
  if (brokenWorker) {
    await p.addInitScript(() => {
      globalThis.Worker = class {
        constructor() { setTimeout(() => this.onerror?.({ message: 'script failed to load', preventDefault() {} }), 10); }
        postMessage() {}
        terminate() {}
      };
    });
  }
  await p.goto(`${server.url}/index.html`);
  return p;
}

const MODELS = {
  embedding: { onnx: '/models/model.int8.onnx', tokenizer: '/models/tokenizer.json' },
  reranker: { manifest: '/reranker/manifest.json', onnx: '/reranker/model.int8.onnx', tokenizer: '/reranker/tokenizer.json' },
};

test('in a Web Worker: fulltext at once, hybrid flagged while models load, then every parity request as native', async () => {
  page = await freshPage();
  const out = await page.evaluate(async (models) => {
    const { Docloupe } = await import('/www/docloupe.js');
    // No rerank time budget, as in the native answers (run.sh): the comparison is of answers.
    const engine = await Docloupe.open({ bundle: '/docs.bundle', models, rerankBudgetMs: 3_600_000 });
    const early = await engine.search({ query: 'how big can the cache be' });
    const ready = await engine.ready;
    const requests = (await (await fetch('/requests.jsonl')).text()).split('\n').filter((l) => l.trim());
    const answers = [];
    for (const line of requests) answers.push(await engine.search(JSON.parse(line)));
    const thread = engine.thread;
    engine.close();
    return { thread, early, ready, answers };
  }, MODELS);
  assert.equal(out.thread, 'worker');
  assert.equal(out.early.degradedReason, 'models_loading');
  assert.equal(out.early.fallbackApplied, true);
  assert.equal(out.ready.phase, 'ready', JSON.stringify(out.ready.error));
  assert.equal(out.ready.build, 'full');
  const native = fs.readFileSync(env('DOCLOUPE_NATIVE'), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  assert.equal(out.answers.length, native.length);
  const report = compareResponses(out.answers, native);
  assert.deepEqual(report.different.map((d) => `#${d.i} at ${d.where}`), []);
  console.log(`chromium worker: ${report.same} identical, ${report.close} equal up to model rounding (max |Δ| ${report.worst.toExponential(2)})`);
  await page.context().close();
});

test('a split bundle in a Worker: open reads core.bin, a query reads a few small files, answers equal the whole bundle', async () => {
  page = await freshPage();
  server.reset();
  const out = await page.evaluate(async () => {
    const { Docloupe } = await import('/www/docloupe.js');
    const split = await Docloupe.open({ bundle: '/split/' });
    const whole = await Docloupe.open({ bundle: '/docs.bundle' });
    const requests = (await (await fetch('/requests.jsonl')).text()).split('\n').filter((l) => l.trim()).map((l) => ({ ...JSON.parse(l), mode: 'fulltext' }));
    const strip = (r) => JSON.stringify({ ...r, timings: undefined });
    const differing = [];
    for (const r of requests) if (strip(await split.search(r)) !== strip(await whole.search(r))) differing.push(r);
    return { differing, thread: split.thread, count: requests.length };
  });
  assert.equal(out.thread, 'worker');
  assert.deepEqual(out.differing, []);
  assert.ok(out.count >= 100);
  const files = server.stats().list.map((f) => f.url).filter((u) => u.startsWith('/split/'));
  assert.ok(files.includes('/split/core.bin'));
  assert.ok(!files.some((f) => /\/vec-\d+\.bin$/.test(f)), 'fulltext reads no vectors');
  assert.equal(new Set(files).size, files.length, `a file was fetched twice: ${files}`);
  await page.context().close();
});

test('a split bundle with the models in a Worker: the vector files load with them, every parity request as native', async () => {
  page = await freshPage();
  server.reset();
  const out = await page.evaluate(async (models) => {
    const { Docloupe } = await import('/www/docloupe.js');
    const engine = await Docloupe.open({ bundle: '/split/', models, rerankBudgetMs: 3_600_000 });
    const ready = await engine.ready;
    const requests = (await (await fetch('/requests.jsonl')).text()).split('\n').filter((l) => l.trim());
    const answers = [];
    for (const line of requests) answers.push(await engine.search(JSON.parse(line)));
    engine.close();
    return { ready, answers };
  }, MODELS);
  assert.equal(out.ready.phase, 'ready', JSON.stringify(out.ready.error));
  assert.equal(out.ready.split, true);
  const native = fs.readFileSync(env('DOCLOUPE_NATIVE'), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  const report = compareResponses(out.answers, native);
  assert.deepEqual(report.different.map((d) => `#${d.i} at ${d.where}`), []);
  const vectors = fs.readdirSync(path.join(site, 'split')).filter((f) => f.startsWith('vec-')).map((f) => `/split/${f}`);
  const fetched = server.stats().list.map((f) => f.url).filter((u) => vectors.includes(u));
  assert.ok(vectors.length > 0);
  assert.deepEqual([...fetched].sort(), [...vectors].sort(), 'each vector file is fetched once');
  await page.context().close();
});

for (const [how, options] of [['without Worker support', { noWorker: true }], ['when the worker dies at start', { brokenWorker: true }]]) {
  test(`${how} it runs on the page thread and answers the same`, async () => {
    page = await freshPage(options);
    const out = await page.evaluate(async () => {
      const { Docloupe } = await import('/www/docloupe.js');
      const engine = await Docloupe.open({ bundle: '/docs.bundle' });
      const r = await engine.search({ query: 'cache size', mode: 'fulltext' });
      return { thread: engine.thread, top: r.results[0].documentPath, status: engine.status() };
    });
    assert.equal(out.thread, 'main-thread');
    assert.equal(out.top, 'en/caching.md');
    assert.equal(out.status.phase, 'ready');
    await page.context().close();
  });
}

test('bad inputs through the API are contract errors, in the worker too', async () => {
  page = await freshPage();
  const out = await page.evaluate(async () => {
    const { Docloupe } = await import('/www/docloupe.js');
    const opened = async (o) => Docloupe.open(o).then(() => 'opened', (e) => e);
    const engine = await Docloupe.open({ bundle: '/docs.bundle' });
    const searches = [];
    for (const req of [42, null, { query: 7 }, { query: 'x', limit: '3' }, ['cache'], { query: () => 1 }]) {
      searches.push(await engine.search(req));
    }
    engine.close();
    return {
      searches,
      missing: await opened({ bundle: '/no-such.bundle' }),
      corrupt: await opened({ bundle: '/corrupt.bundle' }),
      html: await opened({ bundle: '/index.html' }),
      noBundle: await opened({}),
      wrongModel: await (async () => {
        const e = await Docloupe.open({ bundle: '/docs.bundle', models: { embedding: { onnx: '/reranker/model.int8.onnx', tokenizer: '/models/tokenizer.json' } } });
        const s = await e.ready;
        const hybrid = await e.search({ query: 'cache' });
        e.close();
        return { status: s, hybrid };
      })(),
    };
  });
  for (const r of out.searches) assert.equal(r.errorCode, 'INVALID_REQUEST', JSON.stringify(r));
  assert.equal(out.missing.errorCode, 'DOCS_COLLECTION_UNAVAILABLE');
  assert.equal(out.missing.details.reason, 'fetch_failed');
  for (const e of [out.corrupt, out.html]) {
    assert.equal(e.errorCode, 'DOCS_COLLECTION_UNAVAILABLE', JSON.stringify(e));
  }
  assert.equal(out.noBundle.errorCode, 'INVALID_REQUEST');
  assert.equal(out.wrongModel.status.phase, 'failed');
  assert.equal(out.wrongModel.status.error.details.reason, 'EmbeddingModelMismatch');
  assert.equal(out.wrongModel.hybrid.errorCode, 'DOCS_RERANKING_UNAVAILABLE');
  await page.context().close();
});
