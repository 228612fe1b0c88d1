// docloupe in headless Chromium through its JS API (Web Worker): a cold visitor's bytes,
// requests and time to the first fulltext result; warm fulltext; the models' load; hybrid and
// hybrid+rerank latency, on the simd128 and on the portable kernels. Latency is taken in the
// page around `await engine.search()` (worker round trip included); the engine's own
// `timings` come along.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startServer } from '../../../www/serve.mjs';
import { median, percentile, visitBenchPage } from './util.mjs';

const HERE = import.meta.dirname;
const WWW = path.resolve(HERE, '../../../www');

const summary = (xs) => ({ medianMs: median(xs), p95Ms: percentile(xs, 95) });

/**
 * The fetch rounds a split bundle's first query took after open: its files in request order,
 * grouped by kind (lexical shards, then fragments, then any other), as the engine's stages
 * ask for them.
 */
function dataRounds(list) {
  const kinds = list.map((r) => path.basename(r.url)).filter((f) => /^(lex|frag|voc)-|^docs\.bin$/.test(f)).map((f) => f.split(/[-.]/)[0]);
  return kinds.filter((k, i) => i === 0 || k !== kinds[i - 1]).length;
}

// `fulltextOnly`: steps 1 and 2 only (a bundle built with --no-embeddings is enough), plus a
// cold visit whose first query is misspelt (`typoQuery`), which reads the term dictionary.
export async function benchDocloupe({ browser, bundlePath, splitDir, modelDir, rerankerDir, queries, brotliCacheDir, fulltextOnly = false, typoQuery, timeoutMs = 900_000 }) {
  const server = await startServer(
    {
      '/bench/': path.join(HERE, 'pages'),
      '/www/': WWW,
      '/data/': path.dirname(bundlePath),
      '/split/': splitDir,
      // Served as they are, as for onnxruntime-web: int8 weights barely compress.
      ...(fulltextOnly ? {} : { '/models/': { dir: modelDir, compress: false }, '/reranker/': { dir: rerankerDir, compress: false } }),
    },
    { brotliCacheDir },
  );
  const bundle = `/data/${path.basename(bundlePath)}`;
  const models = {
    embedding: { onnx: '/models/model.int8.onnx', tokenizer: '/models/tokenizer.json' },
    reranker: { manifest: '/reranker/manifest.json', onnx: '/reranker/model.int8.onnx', tokenizer: '/reranker/tokenizer.json' },
  };
  const visit = () => visitBenchPage(browser, server, timeoutMs);
  const run = async (call, request) => {
    const out = [];
    for (const query of queries) out.push({ query, ...(await call('benchSearch', { query, ...request }, query)) });
    return out;
  };
  // The same, after an untimed pass that fetches the split files these requests read: the
  // figures are the engine's once its data is in (what each query costs cold, bytes and time,
  // is measured apart), as they were when the full build held the whole bundle.
  const runWarm = async (call, request) => {
    for (const query of queries) await call('benchSearch', { query, ...request }, `${query} (fetching its files)`);
    return run(call, request);
  };
  try {
    // The server brotli-compresses each file once (quality 11, cached on disk by content):
    // after a rebuild the full wasm alone takes ~40 s, which would land in the first visit
    // that loads it. Compress the big files before any visit, as a deployment would.
    // (node:http, not fetch: brotli 11 on a 127 MB bundle outlasts fetch's 5-minute header timeout.)
    // Every split file too: cold queries then time the fetch, not the server's compression.
    const splitFiles = fs.readdirSync(splitDir).map((f) => `/split/${f}`);
    for (const url of [bundle, ...splitFiles, ...['lexical', 'full', 'portable'].map((k) => `/www/pkg/${k}/docloupe_bg.wasm`)]) {
      await new Promise((resolve, reject) => {
        http
          .get(server.url + url, { headers: { 'accept-encoding': 'br' } }, (res) => res.resume().on('end', resolve).on('error', reject))
          .on('error', reject);
      });
    }
    server.reset();

    // 1. The whole bundle, fulltext only: what a first visit costs until the first result.
    const w = await visit();
    await w.call('benchOpen', { bundle, worker: true }, 'open');
    const wholeFirst = await w.call('benchSearch', { query: queries[0], mode: 'fulltext' }, 'first query');
    const wholeCold = server.stats();
    await w.context.close();

    // 2. The split bundle, fulltext only: the first result, then each query cold (fetching
    //    its own files), then all of them again warm (their files already in the engine).
    const a = await visit();
    const opened = await a.call('benchOpen', { bundle: '/split/', worker: true }, 'open');
    const first = await a.call('benchSearch', { query: queries[0], mode: 'fulltext' }, 'first query');
    const cold = server.stats();
    const perQueryBytes = [];
    const fulltextCold = [];
    for (const query of queries.slice(1)) {
      server.reset();
      fulltextCold.push({ query, ...(await a.call('benchSearch', { query, mode: 'fulltext' }, query)) });
      const s = server.stats();
      perQueryBytes.push({ bytes: s.bytes, requests: s.requests });
    }
    server.reset();
    const fulltext = await run(a.call, { mode: 'fulltext' });
    const warmBytes = server.stats().bytes;
    await a.context.close();

    // 2b. A cold visitor whose first query has typos: the words it does not find are looked
    //     up in the term dictionary's shards, which the exact query did not need.
    let typo = null;
    if (typoQuery) {
      const t = await visit();
      await t.call('benchOpen', { bundle: '/split/', worker: true }, 'open');
      const r = await t.call('benchSearch', { query: typoQuery, mode: 'fulltext' }, 'typo query');
      const s = server.stats();
      typo = { query: typoQuery, bytes: s.bytes, requests: s.requests, rounds: dataRounds(s.list), list: s.list, firstResultMs: r.sinceNavigationMs, hits: r.hits, top: r.top };
      await t.context.close();
    }
    const fulltextPart = {
      whole: { bytes: wholeCold.bytes, requests: wholeCold.requests, firstResultMs: wholeFirst.sinceNavigationMs },
      cold: { bytes: cold.bytes, requests: cold.requests, list: cold.list, rounds: dataRounds(cold.list), firstResultMs: first.sinceNavigationMs, openMs: opened.openMs },
      typo,
      later: {
        medianBytes: median(perQueryBytes.map((q) => q.bytes)),
        p95Bytes: percentile(perQueryBytes.map((q) => q.bytes), 95),
        medianRequests: median(perQueryBytes.map((q) => q.requests)),
        ...summary(fulltextCold.map((r) => r.ms)),
      },
      fulltext: { ...summary(fulltext.map((r) => r.ms)), engine: summary(fulltext.map((r) => r.timings.totalMs)), bytesWarm: warmBytes },
    };
    if (fulltextOnly) {
      if (a.errors.length) throw new Error(`errors in the page:\n${a.errors.join('\n')}`);
      return { thread: opened.thread, ...fulltextPart, perQuery: { fulltext } };
    }

    // 3. With the models: fulltext first, the models and the vector files in the background, then hybrid.
    const b = await visit();
    await b.call('benchOpen', { bundle: '/split/', models, worker: true }, 'open with models');
    const early = await b.call('benchSearch', { query: queries[0] }, 'hybrid while loading');
    const ready = await b.call('benchReady', null, 'models');
    const withModels = server.stats();
    const vectorRequests = withModels.list.filter((r) => /\/vec-\d+\.bin$/.test(r.url));
    if (ready.phase !== 'ready') throw new Error(`models failed: ${JSON.stringify(ready.error)}`);
    // Each hybrid query once with the vectors in but its own shards not yet (what a query
    // costs in bytes once the models are in), then all of them again warm.
    const hybridCold = [];
    for (const query of queries) {
      server.reset();
      const r = await b.call('benchSearch', { query, mode: 'hybrid', rerank: false }, query);
      const s = server.stats();
      hybridCold.push({ ms: r.ms, bytes: s.bytes, requests: s.requests });
    }
    for (const query of queries.slice(0, 3)) await b.call('benchSearch', { query, rerank: true, candidateLimit: 20 }, 'warm-up');
    server.reset();
    const hybrid = await run(b.call, { mode: 'hybrid', rerank: false });
    const hybridWarmBytes = server.stats().bytes;
    const reranked = await runWarm(b.call, { mode: 'hybrid', rerank: true, candidateLimit: 20 });
    await b.context.close();

    // 3b. The default second stage: the learned ranker over cheap features, which the engine
    //     uses when no cross-encoder is loaded, over the contract's default pool.
    const d = await visit();
    const { reranker: _crossEncoder, ...embeddingOnly } = models;
    await d.call('benchOpen', { bundle: '/split/', models: embeddingOnly, worker: true }, 'open with the embedding model only');
    const readyLearned = await d.call('benchReady', null, 'embedding model');
    if (readyLearned.phase !== 'ready') throw new Error(`models failed: ${JSON.stringify(readyLearned.error)}`);
    const warmUps = [];
    for (const query of queries.slice(0, 3)) warmUps.push(await d.call('benchSearch', { query, rerank: true }, 'warm-up'));
    const learned = await runWarm(d.call, { mode: 'hybrid', rerank: true });
    await d.context.close();

    // 4. The same on the portable kernels (pkg/portable: answers equal native --kernels
    //    portable byte for byte): what that exactness costs per query.
    const c = await visit();
    await c.call('benchOpen', { bundle: '/split/', models, worker: true, kernels: 'portable' }, 'open portable');
    const portableReady = await c.call('benchReady', null, 'portable models');
    if (portableReady.phase !== 'ready' || portableReady.kernels !== 'portable') {
      throw new Error(`portable models failed: ${JSON.stringify(portableReady)}`);
    }
    for (const query of queries.slice(0, 3)) await c.call('benchSearch', { query, rerank: true, candidateLimit: 20 }, 'warm-up');
    const portableHybrid = await runWarm(c.call, { mode: 'hybrid', rerank: false });
    const portableReranked = await runWarm(c.call, { mode: 'hybrid', rerank: true, candidateLimit: 20 });
    await c.context.close();
    const errors = [...a.errors, ...b.errors, ...c.errors, ...d.errors];
    if (errors.length) throw new Error(`errors in the page:\n${errors.join('\n')}`);

    return {
      thread: opened.thread,
      ...fulltextPart,
      models: {
        earlyHybrid: { fallbackApplied: early.fallbackApplied, degradedReason: early.degradedReason, ms: early.ms },
        readyMs: ready.sinceNavigationMs,
        modelsMs: ready.modelsMs,
        bytes: withModels.bytes,
        requests: withModels.requests,
        vectorBytes: vectorRequests.reduce((n, r) => n + r.bytes, 0),
        vectorFiles: vectorRequests.length,
      },
      // The engine with the embedding model only, as a site deploys it: its wasm memory once
      // the model and the vectors are in, and its first answer with them since navigation.
      loaded: {
        wasmMemoryBytes: readyLearned.wasmMemoryBytes,
        readyMs: readyLearned.sinceNavigationMs,
        firstHybridMs: warmUps[0].sinceNavigationMs,
        firstHybridFallback: warmUps[0].fallbackApplied,
      },
      hybridBytes: {
        medianCold: median(hybridCold.map((q) => q.bytes)),
        p95Cold: percentile(hybridCold.map((q) => q.bytes), 95),
        medianRequests: median(hybridCold.map((q) => q.requests)),
        warm: hybridWarmBytes,
        ...summary(hybridCold.map((q) => q.ms)),
      },
      hybrid: { ...summary(hybrid.map((r) => r.ms)), engine: summary(hybrid.map((r) => r.timings.totalMs)), embed: summary(hybrid.map((r) => r.timings.embedMs)) },
      reranked: { ...summary(reranked.map((r) => r.ms)), engine: summary(reranked.map((r) => r.timings.totalMs)), rerank: summary(reranked.map((r) => r.timings.rerankMs)), fallbacks: reranked.filter((r) => r.fallbackApplied).map((r) => r.degradedReason) },
      learned: { ...summary(learned.map((r) => r.ms)), engine: summary(learned.map((r) => r.timings.totalMs)), rerank: summary(learned.map((r) => r.timings.rerankMs)), fallbacks: learned.filter((r) => r.fallbackApplied).map((r) => r.degradedReason) },
      portable: {
        modelsMs: portableReady.modelsMs,
        hybrid: { ...summary(portableHybrid.map((r) => r.ms)), embed: summary(portableHybrid.map((r) => r.timings.embedMs)) },
        reranked: { ...summary(portableReranked.map((r) => r.ms)), rerank: summary(portableReranked.map((r) => r.timings.rerankMs)) },
      },
      perQuery: { fulltext, hybrid, reranked, learned },
    };
  } finally {
    await server.close();
  }
}
