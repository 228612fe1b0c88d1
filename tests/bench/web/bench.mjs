// make bench-web: docloupe in real headless Chromium on the cpp-docs corpus (≈10k pages), with
// onnxruntime-web (the same model in fp32) and Pagefind (the same pages as HTML) in the same
// run, on the same queries (queries.txt).
//   node tests/bench/web/bench.mjs --model-dir DIR --reranker-dir DIR
//   node tests/bench/web/bench.mjs --fulltext-only   (make bench-web-fulltext)
// One-time work is cached in $DOCLOUPE_CACHE/bench-web: the extracted corpus, its bundle
// (index-builder with embeddings, ~40 min on 2 cores), the HTML pages and Pagefind's index,
// and brotli-11 bodies of the big files. --fulltext-only measures what needs no model (the
// first fulltext result cold, a misspelt first query, warm fulltext, Pagefind) on a bundle
// built with --no-embeddings (≈ 20 s), whose split files the fulltext path reads are the
// ones a bundle with embeddings has (the vectors live in files of their own).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../../www/chromium.mjs';
import { INDEX_BUILDER, bundleWithEmbeddings, prepareCorpus, renderHtml, splitBundle } from './corpus.mjs';
import { benchDocloupe } from './docloupe.mjs';
import { benchOrt } from './ort.mjs';
import { benchPagefind } from './pagefind.mjs';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const fulltextOnly = process.argv.includes('--fulltext-only');
const arg = (name) => {
  const i = process.argv.indexOf(name);
  if (i < 0 || !process.argv[i + 1]) throw new Error(`${name} DIR is required`);
  return path.resolve(process.argv[i + 1]);
};
const modelDir = fulltextOnly ? null : arg('--model-dir');
const rerankerDir = fulltextOnly ? null : arg('--reranker-dir');
// Optional: multilingual-e5-small, for the wire bytes of it whole and trimmed to Latin + Cyrillic.
const e5Dir = !fulltextOnly && process.argv.includes('--e5-dir') ? arg('--e5-dir') : null;
// A cold first query with a typo in each of two words (in fulltext: found through the term dictionary).
const TYPO_QUERY = 'lamda capture by refrence';
const CACHE = process.env.DOCLOUPE_CACHE || path.join(os.homedir(), '.cache/docloupe');
const WORK = path.join(CACHE, 'bench-web');
const brotliCacheDir = path.join(WORK, 'brotli');
const queries = fs.readFileSync(path.join(import.meta.dirname, 'queries.txt'), 'utf8').split('\n').map((q) => q.trim()).filter(Boolean);

const kb = (b) => `${(b / 1000).toFixed(1)} KB`;
const mb = (b) => `${(b / 1e6).toFixed(2)} MB`;
const ms = (x) => `${x.toFixed(1)} ms`;
const step = async (label, fn) => {
  const t0 = performance.now();
  const r = await fn();
  console.error(`[bench-web] ${label}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return r;
};

const brotliBytes = (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;

function sizes(file) {
  const b = fs.readFileSync(file);
  return { raw: b.length, gzip: zlib.gzipSync(b, { level: 9 }).length, brotli: brotliBytes(b) };
}

/** The corpus's bundle: with embeddings, built once into the cache; without, built anew (≈ 20 s). */
function ensureBundle(mdDir) {
  if (!fulltextOnly) return bundleWithEmbeddings(WORK, mdDir, modelDir);
  const bundle = path.join(WORK, 'cpp-docs-lexical.bundle');
  execFileSync(INDEX_BUILDER,
    ['build', mdDir, '--out', bundle, '--no-embeddings', '--force-rebuild', '--project', 'microsoft/cpp-docs', '--quiet'],
    { stdio: ['ignore', 'ignore', 'inherit'] });
  return bundle;
}

const ensureSplit = (bundle) => splitBundle(bundle, path.join(WORK, fulltextOnly ? 'cpp-docs-lexical.split' : 'cpp-docs.split'));

/**
 * What each model costs on the wire: its ONNX file and tokenizer at brotli 11, as a site or a
 * Worker's assets serve them. Compressing E5 takes ~10 minutes: sizes are cached by file, size and
 * modification time in WORK/wire-sizes.json. E5 trimmed to Latin + Cyrillic (index-builder
 * trim-model, as a Russian-and-English site deploys it) is made once into WORK.
 */
function modelWireBytes() {
  const cacheFile = path.join(WORK, 'wire-sizes.json');
  const cache = fs.existsSync(cacheFile) ? JSON.parse(fs.readFileSync(cacheFile, 'utf8')) : {};
  const brotli = (file) => {
    const st = fs.statSync(file);
    const key = `${file}:${st.size}:${st.mtimeMs}`;
    cache[key] ??= brotliBytes(fs.readFileSync(file));
    return cache[key];
  };
  const models = [['all-MiniLM-L6-v2', modelDir]];
  if (e5Dir) {
    const trimmed = path.join(WORK, 'e5-latin-cyrillic');
    if (!fs.existsSync(path.join(trimmed, 'manifest.json'))) {
      execFileSync(INDEX_BUILDER, ['trim-model', '--scripts', 'latin,cyrillic', '--out', trimmed, e5Dir], { stdio: ['ignore', 'ignore', 'inherit'] });
    }
    models.push(['multilingual-e5-small', e5Dir], ['multilingual-e5-small, latin + cyrillic', trimmed]);
  }
  const out = models.map(([name, dir]) => {
    const files = ['model.int8.onnx', 'tokenizer.json'].map((f) => path.join(dir, f));
    return { name, raw: files.map((f) => fs.statSync(f).size), brotli: files.map(brotli) };
  });
  fs.writeFileSync(cacheFile, JSON.stringify(cache, null, 1));
  return out;
}

/** Our tokenizer's ids for each query, so onnxruntime-web embeds exactly what we embed. */
function tokenIds() {
  const run = spawnSync('cargo', ['run', '--quiet', '--release', '--example', 'token_ids', '--', modelDir],
    { cwd: ROOT, input: queries.join('\n') + '\n', encoding: 'utf8', maxBuffer: 1 << 24 });
  if (run.status !== 0) throw new Error(`token_ids failed: ${run.stderr}`);
  return run.stdout.trim().split('\n').map((l) => JSON.parse(l));
}

const { mdDir } = await step('corpus', () => prepareCorpus(WORK));
const htmlDir = path.join(WORK, 'html');
await step('html for pagefind', () => renderHtml(mdDir, htmlDir));
const bundlePath = await step('bundle', () => ensureBundle(mdDir));
const splitDir = await step('split bundle', () => ensureSplit(bundlePath));
const ids = fulltextOnly ? null : await step('token ids', tokenIds);
const wire = fulltextOnly ? null : await step('wire bytes per model', modelWireBytes);
const wasm = {
  lexical: sizes(path.join(ROOT, 'www/pkg/lexical/docloupe_bg.wasm')),
  full: sizes(path.join(ROOT, 'www/pkg/full/docloupe_bg.wasm')),
  portable: sizes(path.join(ROOT, 'www/pkg/portable/docloupe_bg.wasm')),
};

const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
let ours, ort, pf;
try {
  ours = await step('docloupe', () => benchDocloupe({ browser, bundlePath, splitDir, modelDir, rerankerDir, queries, brotliCacheDir, fulltextOnly, typoQuery: TYPO_QUERY }));
  if (!fulltextOnly) ort = await step('onnxruntime-web', () => benchOrt({ browser, modelPath: path.join(modelDir, 'model.fp32.onnx'), tokenIds: ids, brotliCacheDir }));
  pf = await step('pagefind', () => benchPagefind({ browser, htmlDir, outDir: path.join(WORK, 'pagefind'), queries, brotliCacheDir }));
} finally {
  await browser.close();
}

const bundleBytes = fs.statSync(bundlePath).size;
const tokens = fulltextOnly ? [] : ids.map((x) => x.length).sort((a, b) => a - b);
console.log(`\n== make bench-web${fulltextOnly ? ' --fulltext-only' : ''}: Chromium ${browser.version()} (headless), ${queries.length} queries${fulltextOnly ? '' : ` (${tokens[0]}–${tokens.at(-1)} tokens)`}, cpp-docs bundle ${mb(bundleBytes)}${fulltextOnly ? ' (no embeddings)' : ''}`);
console.log('\nwasm                raw         gzip        brotli');
for (const [k, s] of Object.entries(wasm)) console.log(`${k.padEnd(10)} ${mb(s.raw).padStart(12)} ${kb(s.gzip).padStart(12)} ${kb(s.brotli).padStart(12)}`);

console.log(`\ndocloupe (JS API in a ${ours.thread}):`);
const core = fs.statSync(path.join(splitDir, 'core.bin')).size;
console.log(`  whole bundle, cold: ${kb(ours.whole.bytes)} in ${ours.whole.requests} requests before the first fulltext result, at ${ms(ours.whole.firstResultMs)} since navigation`);
console.log(`  split bundle (${fs.readdirSync(splitDir).length} files, core.bin ${kb(core)} raw), cold, fulltext only: ${kb(ours.cold.bytes)} in ${ours.cold.requests} requests before the first result, ${ours.cold.rounds} data round(s) after core.bin, at ${ms(ours.cold.firstResultMs)} since navigation`);
for (const r of ours.cold.list) console.log(`    ${r.url.padEnd(40)} ${kb(r.bytes).padStart(12)}`);
console.log(`  each later query cold (its own files): median ${kb(ours.later.medianBytes)} in ${ours.later.medianRequests} requests, p95 ${kb(ours.later.p95Bytes)}; latency p50 ${ms(ours.later.medianMs)}, p95 ${ms(ours.later.p95Ms)}`);
console.log(`  the same ${queries.length} queries again (warm): ${ours.fulltext.bytesWarm} bytes fetched`);
const t = ours.typo;
console.log(`  a misspelt first query, cold ("${t.query}"): ${kb(t.bytes)} in ${t.requests} requests, ${t.rounds} data round(s) after core.bin, at ${ms(t.firstResultMs)} since navigation; ${t.hits} results, top: ${t.top.join(', ')}`);
for (const r of t.list) console.log(`    ${r.url.padEnd(40)} ${kb(r.bytes).padStart(12)}`);
if (fulltextOnly) {
  console.log('  mode                    p50 (page)  p95 (page)  p50 engine  p95 engine');
  const r = ours.fulltext;
  console.log(`  ${'fulltext (warm)'.padEnd(22)} ${ms(r.medianMs).padStart(11)} ${ms(r.p95Ms).padStart(11)} ${ms(r.engine.medianMs).padStart(11)} ${ms(r.engine.p95Ms).padStart(11)}`);
  console.log(`\n${pf.engine} on the same pages as HTML (index ${mb(pf.indexBytes)} in ${pf.indexFiles} files):`);
  console.log(`  cold: ${kb(pf.cold.bytes)} in ${pf.cold.requests} requests, first query ${ms(pf.cold.firstQueryMs)} (${ms(pf.cold.sinceNavigationMs)} since navigation)`);
  console.log(`  warm: p50 ${ms(pf.warm.medianMs)}, p95 ${ms(pf.warm.p95Ms)}, ${kb(pf.warm.medianBytes)} and ${pf.warm.medianRequests} requests per query (median)`);
  console.log('\ngoals:');
  const goal = (text, ok) => console.log(`  ${ok ? '✓' : '✗'} ${text}`);
  goal(`first fulltext result from ≤ 200 KB: ${kb(ours.cold.bytes)}`, ours.cold.bytes <= 200_000);
  goal(`misspelt first query from ≤ 200 KB: ${kb(t.bytes)}`, t.bytes <= 200_000);
  goal(`warm fulltext p95 ≤ 30 ms: ${ms(ours.fulltext.p95Ms)}`, ours.fulltext.p95Ms <= 30);
  fs.writeFileSync(path.join(WORK, 'last-run-fulltext.json'), JSON.stringify({ wasm, ours, pf, queries, bundleBytes }, null, 1));
  process.exit(0);
}
console.log(`  models: ready at ${ms(ours.models.readyMs)} since navigation (${ms(ours.models.modelsMs)} after open), ${mb(ours.models.bytes)} in ${ours.models.requests} requests in all; hybrid before then: fallbackApplied=${ours.models.earlyHybrid.fallbackApplied}, degradedReason=${ours.models.earlyHybrid.degradedReason}`);
console.log(`    of which the vectors: ${mb(ours.models.vectorBytes)} in ${ours.models.vectorFiles} vec-N.bin files (no file holds the whole bundle)`);
const ld = ours.loaded;
console.log(`  with the embedding model only (the default second stage): wasm memory ${(ld.wasmMemoryBytes / 1048576).toFixed(1)} MiB once loaded; first hybrid answer ${ms(ld.firstHybridMs)} since navigation (models ready at ${ms(ld.readyMs)}; fallbackApplied=${ld.firstHybridFallback})`);
const hb = ours.hybridBytes;
console.log(`  each hybrid query once the models are in, its shards cold: median ${kb(hb.medianCold)} (p95 ${kb(hb.p95Cold)}) in ${hb.medianRequests} requests, p50 ${ms(hb.medianMs)}, p95 ${ms(hb.p95Ms)}; the ${queries.length} again, warm: ${hb.warm} bytes`);
console.log('  mode                    p50 (page)  p95 (page)  p50 engine  p95 engine');
for (const [name, r] of [['fulltext', ours.fulltext], ['hybrid', ours.hybrid], ['hybrid+learned stage', ours.learned], ['hybrid+rerank of 20', ours.reranked]]) {
  console.log(`  ${name.padEnd(22)} ${ms(r.medianMs).padStart(11)} ${ms(r.p95Ms).padStart(11)} ${ms(r.engine.medianMs).padStart(11)} ${ms(r.engine.p95Ms).padStart(11)}`);
}
console.log(`  learned second stage alone: p50 ${ms(ours.learned.rerank.medianMs)}, p95 ${ms(ours.learned.rerank.p95Ms)}; fallbacks: ${ours.learned.fallbacks.length ? ours.learned.fallbacks.join(', ') : 'none'}`);
console.log(`  cross-encoder rerank stage alone: p50 ${ms(ours.reranked.rerank.medianMs)}, p95 ${ms(ours.reranked.rerank.p95Ms)}; fallbacks: ${ours.reranked.fallbacks.length ? ours.reranked.fallbacks.join(', ') : 'none'}`);
const p = ours.portable;
console.log(`  portable kernels (pkg/portable, answers equal native --kernels portable byte for byte): models in ${ms(p.modelsMs)} after open;`);
console.log(`    hybrid p50 ${ms(p.hybrid.medianMs)}, p95 ${ms(p.hybrid.p95Ms)} (embedding p50 ${ms(p.hybrid.embed.medianMs)}: ${(p.hybrid.embed.medianMs / ours.hybrid.embed.medianMs).toFixed(2)}× simd128); hybrid+rerank of 20 p50 ${ms(p.reranked.medianMs)}, p95 ${ms(p.reranked.p95Ms)} (rerank p50 ${ms(p.reranked.rerank.medianMs)}: ${(p.reranked.rerank.medianMs / ours.reranked.rerank.medianMs).toFixed(2)}× simd128)`);

console.log('\nmodels on the wire (brotli 11; ONNX + tokenizer):');
for (const m of wire) console.log(`  ${m.name.padEnd(40)} ${mb(m.brotli[0] + m.brotli[1]).padStart(10)} (${mb(m.brotli[0])} + ${mb(m.brotli[1])}; raw ${mb(m.raw[0] + m.raw[1])})`);

console.log(`\nquery embedding, same ${queries.length} queries, same token ids:`);
console.log(`  docloupe (bert.rs, int8 weights, wasm simd128; tokenizing included): p50 ${ms(ours.hybrid.embed.medianMs)}, p95 ${ms(ours.hybrid.embed.p95Ms)}`);
console.log(`  onnxruntime-web ${ort.ortVersion} (wasm, 1 thread, fp32): p50 ${ms(ort.medianMs)}, p95 ${ms(ort.p95Ms)}; load ${ms(ort.modelLoadMs)}, ${mb(ort.loadBytes)}`);
console.log(`  ratio ours/ORT-web (p50): ${(ours.hybrid.embed.medianMs / ort.medianMs).toFixed(2)}×  (goal ≤ 1.0×)`);

console.log(`\n${pf.engine} on the same pages as HTML (index ${mb(pf.indexBytes)} in ${pf.indexFiles} files):`);
console.log(`  cold: ${kb(pf.cold.bytes)} in ${pf.cold.requests} requests, first query ${ms(pf.cold.firstQueryMs)} (${ms(pf.cold.sinceNavigationMs)} since navigation)`);
console.log(`  warm: p50 ${ms(pf.warm.medianMs)}, p95 ${ms(pf.warm.p95Ms)}, ${kb(pf.warm.medianBytes)} and ${pf.warm.medianRequests} requests per query (median)`);

console.log('\ngoals:');
const goal = (text, ok) => console.log(`  ${ok ? '✓' : '✗'} ${text}`);
goal(`lexical wasm ≤ 100 KB brotli: ${kb(wasm.lexical.brotli)}`, wasm.lexical.brotli <= 100_000);
goal(`first fulltext result from ≤ 150 KB: ${kb(ours.cold.bytes)}`, ours.cold.bytes <= 150_000);
goal(`… in ≤ 2 dependent fetch rounds: ${1 + ours.cold.rounds} (core.bin, then ${ours.cold.rounds} for the query's files)`, 1 + ours.cold.rounds <= 2);
goal(`warm fulltext p95 ≤ 30 ms: ${ms(ours.fulltext.p95Ms)}`, ours.fulltext.p95Ms <= 30);
goal(`hybrid p95 ≤ 30 ms after models load: ${ms(ours.hybrid.p95Ms)}`, ours.hybrid.p95Ms <= 30);
goal(`hybrid + second stage (default, learned) p95 ≤ 300 ms: ${ms(ours.learned.p95Ms)}`, ours.learned.p95Ms <= 300);
goal(`hybrid + cross-encoder rerank of 20 p95 ≤ 300 ms: ${ms(ours.reranked.p95Ms)}`, ours.reranked.p95Ms <= 300);
goal(`embedding ≤ 1.0× ORT-web fp32: ${(ours.hybrid.embed.medianMs / ort.medianMs).toFixed(2)}×`, ours.hybrid.embed.medianMs <= ort.medianMs);
fs.writeFileSync(path.join(WORK, 'last-run.json'), JSON.stringify({ wasm, ours, ort, pf, wire, queries, bundleBytes }, null, 1));
