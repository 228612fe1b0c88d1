// docloupe.js (the JS API) in Node, where there is no Web Worker: it runs on the calling
// thread, opens the bundle with the lexical build, answers at once, loads the models in the
// background and switches to the full build. The same API in Chromium, in a Worker, is
// tests/wasm/browser.mjs. Run by tests/wasm/run.sh (env: DOCLOUPE_BUNDLE, DOCLOUPE_MODEL_DIR,
// DOCLOUPE_RERANKER_DIR, DOCLOUPE_SPLIT, DOCLOUPE_NATIVE_PORTABLE).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Docloupe } from '../../www/docloupe.js';
import { Host } from '../../www/host.js';
import { env } from './env.mjs';
import { stripTimings } from './compare.mjs';

const bundlePath = env('DOCLOUPE_BUNDLE');
const modelDir = env('DOCLOUPE_MODEL_DIR');
const rerankerDir = env('DOCLOUPE_RERANKER_DIR');
const file = (dir, name) => pathToFileURL(path.resolve(dir, name)).href;
const models = {
  embedding: { onnx: file(modelDir, 'model.int8.onnx'), tokenizer: file(modelDir, 'tokenizer.json') },
  reranker: {
    manifest: file(rerankerDir, 'manifest.json'),
    onnx: file(rerankerDir, 'model.int8.onnx'),
    tokenizer: file(rerankerDir, 'tokenizer.json'),
  },
};
const rejection = async (promise) => {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected a rejection');
};

test('fulltext answers at once; hybrid is flagged until the models are in, then reranked', async () => {
  const phases = [];
  const engine = await Docloupe.open({ bundle: pathToFileURL(bundlePath), models, onStatus: (s) => phases.push(s.phase) });
  assert.equal(engine.thread, 'main-thread');
  assert.equal(engine.status().phase, 'loading-models');
  assert.equal(engine.status().build, 'lexical');
  const early = await engine.search({ query: 'how big can the cache be' });
  assert.equal(early.fallbackApplied, true);
  assert.equal(early.degradedReason, 'models_loading');
  assert.equal(early.results[0].documentPath, 'en/caching.md');

  const ready = await engine.ready;
  assert.equal(ready.phase, 'ready', JSON.stringify(ready.error));
  assert.equal(ready.build, 'full');
  assert.ok(ready.semanticReady && ready.rerankerReady);
  assert.ok(ready.modelsMs >= ready.openMs);
  assert.deepEqual(phases, ['loading-models', 'ready']);
  const late = await engine.search({ query: 'how big can the cache be' });
  assert.equal(late.fallbackApplied, false);
  assert.equal(late.degradedReason, undefined);
  assert.ok(late.results.every((r) => r.rankingSignals.rerank > 0));
  engine.close();
  assert.equal((await engine.search({ query: 'cache' })).errorCode, 'INTERNAL_ERROR');
});

test('without models only fulltext is served, and says so', async () => {
  const engine = await Docloupe.open({ bundle: fs.readFileSync(bundlePath) });
  assert.equal(engine.status().phase, 'ready');
  assert.equal(engine.status().semanticReady, false);
  assert.equal((await engine.search({ query: 'cache size', mode: 'fulltext' })).results[0].documentPath, 'en/caching.md');
  assert.equal((await engine.search({ query: 'cache size', mode: 'semantic' })).errorCode, 'DOCS_COLLECTION_UNAVAILABLE');
  engine.close();
});

test('bad requests resolve to contract errors; search never rejects', async () => {
  const engine = await Docloupe.open({ bundle: fs.readFileSync(bundlePath) });
  for (const req of [undefined, null, 42, 'cache', {}, { query: 7 }, { query: 'x', limit: -1 }, { query: 'x', nope: 1 }, { query: 'x', filters: [] }]) {
    const r = await engine.search(req);
    assert.equal(r.errorCode, 'INVALID_REQUEST', JSON.stringify(req));
  }
  assert.equal((await engine.search({ query: ' ' })).errorCode, 'SEARCH_QUERY_EMPTY');
  engine.close();
});

test('a missing, corrupt or foreign bundle rejects open() with DOCS_COLLECTION_UNAVAILABLE', async () => {
  const good = fs.readFileSync(bundlePath);
  const flipped = Uint8Array.from(good);
  flipped[100] ^= 0x01;
  for (const bundle of [pathToFileURL('/nonexistent/docs.bundle'), new Uint8Array(0), good.subarray(0, 1000), flipped,
    new TextEncoder().encode('<html>404</html>')]) {
    const e = await rejection(Docloupe.open({ bundle }));
    assert.equal(e.errorCode, 'DOCS_COLLECTION_UNAVAILABLE', JSON.stringify(e));
    assert.ok(e.details.reason);
  }
  for (const bundle of [undefined, 42, { url: 'x' }]) {
    const e = await rejection(Docloupe.open({ bundle }));
    assert.equal(e.errorCode, 'INVALID_REQUEST', JSON.stringify(e));
    assert.equal(e.details.field, 'bundle');
  }
});

test('a model of the wrong kind fails loading, typed; fulltext keeps working and hybrid is refused', async () => {
  const wrong = { embedding: { onnx: models.reranker.onnx, tokenizer: models.embedding.tokenizer } };
  const engine = await Docloupe.open({ bundle: fs.readFileSync(bundlePath), models: wrong });
  const status = await engine.ready;
  assert.equal(status.phase, 'failed');
  assert.equal(status.error.errorCode, 'DOCS_COLLECTION_UNAVAILABLE');
  assert.equal(status.error.details.reason, 'EmbeddingModelMismatch');
  assert.equal((await engine.search({ query: 'cache size', mode: 'fulltext' })).results[0].documentPath, 'en/caching.md');
  assert.equal((await engine.search({ query: 'cache size' })).errorCode, 'DOCS_RERANKING_UNAVAILABLE');
  engine.close();
});

test('kernels: "portable" loads the build whose answers equal native --kernels portable byte for byte', async () => {
  for (const kernels of ['Portable', 'simd', 42, null]) {
    const e = await rejection(Docloupe.open({ bundle: fs.readFileSync(bundlePath), models, kernels }));
    assert.equal(e.errorCode, 'INVALID_REQUEST', JSON.stringify(e));
    assert.equal(e.details.field, 'kernels');
  }
  for (const rerankBudgetMs of [-1, 1.5, '2000', Infinity]) {
    const e = await rejection(Docloupe.open({ bundle: fs.readFileSync(bundlePath), models, rerankBudgetMs }));
    assert.equal(e.details.field, 'rerankBudgetMs', JSON.stringify(e));
  }
  // No rerank time budget, as in the native answers (run.sh): the comparison is of answers.
  const engine = await Docloupe.open({ bundle: fs.readFileSync(bundlePath), models, kernels: 'portable', rerankBudgetMs: 3_600_000 });
  const ready = await engine.ready;
  assert.equal(ready.phase, 'ready', JSON.stringify(ready.error));
  assert.equal(ready.kernels, 'portable');
  // Every request of the parity set that runs a model (semantic, hybrid, reranked).
  const lines = fs.readFileSync(path.resolve('tests/parity/requests.jsonl'), 'utf8').split('\n').filter((l) => l.trim());
  const native = fs.readFileSync(env('DOCLOUPE_NATIVE_PORTABLE'), 'utf8').split('\n').filter((l) => l.trim());
  let modelled = 0;
  for (const [i, line] of lines.entries()) {
    const req = JSON.parse(line);
    if ((req.mode ?? 'hybrid') === 'fulltext') continue;
    modelled++;
    // The API hands out parsed objects, whose numbers are JS numbers (native's `0.0` is `0`):
    // the native line goes through JSON.parse too, so every value is compared exactly.
    assert.equal(stripTimings(JSON.stringify(await engine.search(req))), stripTimings(JSON.stringify(JSON.parse(native[i]))), line);
  }
  assert.ok(modelled >= 50, `${modelled} model requests`);
  engine.close();

  const fast = await Docloupe.open({ bundle: fs.readFileSync(bundlePath), models });
  assert.equal((await fast.ready).kernels, 'fast');
  fast.close();
});

test('a split bundle answers every request exactly as the whole bundle, fetching files as needed', async () => {
  const split = pathToFileURL(env('DOCLOUPE_SPLIT') + '/');
  const whole = await Docloupe.open({ bundle: fs.readFileSync(bundlePath) });
  const engine = await Docloupe.open({ bundle: split });
  assert.equal(engine.status().split, true);
  assert.equal(engine.status().documents, whole.status().documents);
  const lines = fs.readFileSync(path.resolve('tests/parity/requests.jsonl'), 'utf8').split('\n').filter((l) => l.trim());
  // The parity set, plus each of its queries as fulltext and the paths it does not cover.
  const requests = lines.map((l) => JSON.parse(l));
  requests.push(...requests.map((r) => ({ ...r, mode: 'fulltext' })));
  requests.push(
    { query: 'cache', mode: 'fulltext', filters: { tags: ['cache'] } },
    { query: 'cahce', mode: 'fulltext' },
    { query: 'кэш', mode: 'fulltext', workspacePath: 'ru' },
  );
  const strip = (r) => JSON.stringify({ ...r, timings: undefined });
  for (const r of requests) {
    assert.equal(strip(await engine.search(r)), strip(await whole.search(r)), JSON.stringify(r));
  }
  whole.close();
  engine.close();
});

test('a split file two searches need at once is fetched once, or by each with shareFetches: false (what the Worker uses)', async () => {
  const dir = env('DOCLOUPE_SPLIT');
  const origin = 'https://bundle.test/docs/';
  const run = async (options) => {
    const fetched = [];
    const host = new Host(undefined, {
      ...options,
      fetch: async (url) => {
        const name = new URL(url).pathname.replace('/docs/', '');
        fetched.push(name);
        // Slow enough that the second search asks while the first one's fetch is in flight.
        await new Promise((r) => setTimeout(r, 20));
        return new Response(fs.readFileSync(path.join(dir, name)));
      },
    });
    await host.open({ bundle: origin });
    const request = { query: 'cache size', mode: 'fulltext' };
    const [a, b] = await Promise.all([host.search(request), host.search(request)]);
    assert.ok(a.results?.length > 0, JSON.stringify(a));
    assert.equal(JSON.stringify({ ...a, timings: 0 }), JSON.stringify({ ...b, timings: 0 }));
    const count = (n) => fetched.filter((f) => f === n).length;
    return { count, files: [...new Set(fetched)].filter((f) => f !== 'core.bin') };
  };
  const shared = await run({});
  assert.ok(shared.files.length > 0);
  for (const f of shared.files) assert.equal(shared.count(f), 1, f);
  // workerd cancels a request waiting on a fetch another request started, as hung.
  const own = await run({ shareFetches: false });
  assert.deepEqual(own.files, shared.files);
  for (const f of own.files) assert.equal(own.count(f), 2, f);
});

// Regression: with a memory budget a search could be left without its files forever. A new
// search over budget started the engine over, dropping the files a search between its fetch
// rounds had just added; that one fetched them again, the next search dropped them again, and
// after six rounds it answered INTERNAL_ERROR (a 500 in the Worker, 200 searches at once).
test('searches started while others are between fetch rounds, on a 1-byte budget, all answer as with no budget', async () => {
  const dir = env('DOCLOUPE_SPLIT');
  const origin = 'https://bundle.test/docs/';
  const open = async (maxFileBytes) => {
    const host = new Host(undefined, {
      maxFileBytes,
      shareFetches: false,
      fetch: async (url) => {
        const name = new URL(url).pathname.replace('/docs/', '');
        if (name !== 'core.bin') await new Promise((r) => setTimeout(r, 15));
        return new Response(fs.readFileSync(path.join(dir, name)));
      },
    });
    await host.open({ bundle: origin });
    return host;
  };
  const queries = ['cache size', 'cahce eviction', 'configur', 'кэш', 'remove old entries', 'install', 'ttl', 'expire keys'];
  const requests = queries.flatMap((query) => [
    { query, mode: 'fulltext' },
    { query, mode: 'fulltext', filters: { sourcePrefix: 'en/' } },
  ]);
  const unbounded = await open(Infinity);
  const expected = [];
  for (const r of requests) expected.push(await unbounded.search(r));
  unbounded.close();
  const host = await open(1);
  // A new search every 4 ms, while the ones before it wait 15 ms on each file.
  const answers = await Promise.all(
    requests.flatMap((r, i) => [0, 1, 2].map(async (k) => {
      await new Promise((done) => setTimeout(done, 4 * (i * 3 + k)));
      return [i, await host.search(r)];
    })),
  );
  const strip = (r) => JSON.stringify({ ...r, timings: undefined });
  for (const [i, a] of answers) assert.equal(strip(a), strip(expected[i]), JSON.stringify(requests[i]));
  assert.ok(expected.some((a) => a.results?.length > 0));
  host.close();
});

test('a split bundle loads its vector files with the models and answers as the whole bundle; a missing or corrupt file is a contract error', async () => {
  const dir = env('DOCLOUPE_SPLIT');
  const names = fs.readdirSync(dir);
  assert.ok(!names.includes('bundle.bin'), 'no file holds the whole bundle');
  assert.ok(names.some((f) => f.startsWith('vec-')), names.join(' '));
  const engine = await Docloupe.open({ bundle: pathToFileURL(dir + '/'), models });
  const ready = await engine.ready;
  assert.equal(ready.phase, 'ready', JSON.stringify(ready.error));
  assert.equal(ready.split, true); // the full instance reads the split files too
  const whole = await Docloupe.open({ bundle: fs.readFileSync(bundlePath), models });
  await whole.ready;
  const strip = (r) => JSON.stringify({ ...r, timings: undefined });
  for (const r of [
    { query: 'how big can the cache be' },
    { query: 'how big can the cache be', rerank: false },
    { query: 'remove old entries', mode: 'semantic', filters: { sourcePrefix: 'en/' } },
    { query: 'кэш', workspacePath: 'ru' },
  ]) {
    assert.equal(strip(await engine.search(r)), strip(await whole.search(r)), JSON.stringify(r));
  }
  assert.ok((await engine.search({ query: 'how big can the cache be' })).results.every((r) => r.rankingSignals.rerank > 0));
  engine.close();
  whole.close();

  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'docloupe-split-'));
  for (const f of fs.readdirSync(dir)) fs.copyFileSync(path.join(dir, f), path.join(copy, f));
  // A corrupt vector file: the models stage fails with the reason, fulltext keeps answering.
  const vec = path.join(copy, 'vec-0.bin');
  const good = fs.readFileSync(vec);
  fs.writeFileSync(vec, Buffer.concat([good.subarray(0, good.length - 1), Buffer.from([good[good.length - 1] ^ 1])]));
  const badVectors = await Docloupe.open({ bundle: pathToFileURL(copy + '/'), models });
  const failed = await badVectors.ready.catch((e) => e);
  assert.equal(badVectors.status().phase, 'failed', JSON.stringify(failed));
  assert.equal(badVectors.status().error.details?.reason, 'ChecksumMismatch', JSON.stringify(badVectors.status().error));
  assert.equal((await badVectors.search({ query: 'cache', mode: 'fulltext' })).results[0].documentPath, 'en/caching.md');
  badVectors.close();
  fs.writeFileSync(vec, good);
  const lex = fs.readdirSync(copy).filter((f) => f.startsWith('lex-'));
  for (const f of lex) fs.rmSync(path.join(copy, f));
  const frag = fs.readdirSync(copy).filter((f) => f.startsWith('frag-'));
  for (const f of frag) {
    const b = fs.readFileSync(path.join(copy, f));
    b[b.length - 1] ^= 0x01;
    fs.writeFileSync(path.join(copy, f), b);
  }
  const broken = await Docloupe.open({ bundle: pathToFileURL(copy + '/') });
  const missing = await broken.search({ query: 'cache', mode: 'fulltext' });
  assert.equal(missing.errorCode, 'DOCS_COLLECTION_UNAVAILABLE', JSON.stringify(missing));
  assert.equal(missing.details.reason, 'fetch_failed');
  for (const f of lex) fs.copyFileSync(path.join(dir, f), path.join(copy, f));
  const corrupt = await broken.search({ query: 'cache', mode: 'fulltext' });
  assert.equal(corrupt.errorCode, 'DOCS_COLLECTION_UNAVAILABLE', JSON.stringify(corrupt));
  assert.equal(corrupt.details.reason, 'ChecksumMismatch');
  for (const f of frag) fs.copyFileSync(path.join(dir, f), path.join(copy, f));
  assert.equal((await broken.search({ query: 'cache', mode: 'fulltext' })).results[0].documentPath, 'en/caching.md');
  broken.close();
  fs.rmSync(copy, { recursive: true, force: true });
  const e = await rejection(Docloupe.open({ bundle: pathToFileURL('/nonexistent/split/') }));
  assert.equal(e.errorCode, 'DOCS_COLLECTION_UNAVAILABLE');
});
