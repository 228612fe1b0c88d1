// Parity: the wasm engine's JSON equals the native engine's, `timings` aside.
//
// Everything the engine computes itself (BM25, filters, facets, snippets, highlights,
// suggestions, errors, the order of results) must be byte-identical. The numbers that come out
// of a model (`score` and `rankingSignals.semantic` / `.rerank` of semantic and hybrid results)
// may differ in the last bits: tract runs different SIMD kernels on x86-64 (FMA) and wasm32
// (simd128), which round differently; they must agree to 1e-5 and leave the order unchanged.
// Responses are counted byte-identical or equal-within-rounding; anything else fails.
// Usage: node tests/wasm/parity.mjs PKG_DIR BUNDLE MODEL_DIR RERANKER_DIR REQUESTS.jsonl NATIVE.jsonl
// NATIVE.jsonl is `docloupe search --bundle BUNDLE --jsonl < REQUESTS.jsonl` with the same models.
import fs from 'node:fs';
import path from 'node:path';

const [pkg, bundlePath, modelDir, rerankerDir, requestsPath, nativePath] = process.argv.slice(2);
const m = await import(path.resolve(pkg, 'docloupe.js'));
m.initSync({ module: fs.readFileSync(path.join(pkg, 'docloupe_bg.wasm')) });

const engine = new m.Engine(fs.readFileSync(bundlePath));
const modelManifest = JSON.parse(fs.readFileSync(path.join(modelDir, 'manifest.json')));
engine.loadEmbedder(fs.readFileSync(path.join(modelDir, 'model.int8.onnx')),
  fs.readFileSync(path.join(modelDir, 'tokenizer.json')));
engine.loadReranker(fs.readFileSync(path.join(rerankerDir, 'manifest.json')),
  fs.readFileSync(path.join(rerankerDir, 'model.int8.onnx')),
  fs.readFileSync(path.join(rerankerDir, 'tokenizer.json')));

// Drop `timings` (the one non-deterministic part) from a response line, keeping every other byte.
const strip = (line) => line.replace(/,"timings":\{[^}]*\}/, '');

const lines = (p) => fs.readFileSync(p, 'utf8').split('\n').filter((l) => l.trim() !== '');
const requests = lines(requestsPath);
const native = lines(nativePath);
if (requests.length !== native.length) {
  console.error(`parity: ${requests.length} requests but ${native.length} native answers`);
  process.exit(2);
}
// Structural equality; model-derived numbers within 1e-5. Returns the first difference's path.
const MODEL_NUMBERS = new Set(['score', 'semantic', 'rerank']);
let worst = 0;
function differ(a, b, at, key) {
  if (typeof a === 'number' && typeof b === 'number' && MODEL_NUMBERS.has(key)) {
    const d = Math.abs(a - b);
    worst = Math.max(worst, d);
    return d <= 1e-5 * Math.max(1, Math.abs(b)) ? null : at;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return at;
    for (let i = 0; i < a.length; i++) {
      const d = differ(a[i], b[i], `${at}[${i}]`, key);
      if (d) return d;
    }
    return null;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a), kb = Object.keys(b);
    if (ka.join() !== kb.join()) return `${at} {keys}`;
    for (const k of ka) {
      const d = differ(a[k], b[k], `${at}.${k}`, k);
      if (d) return d;
    }
    return null;
  }
  return a === b ? null : at;
}

let same = 0, close = 0;
const diffs = [];
for (let i = 0; i < requests.length; i++) {
  const a = strip(engine.searchJson(requests[i]));
  const b = strip(native[i]);
  if (a === b) { same++; continue; }
  const where = differ(JSON.parse(a), JSON.parse(b), '$', '');
  if (!where) { close++; continue; }
  diffs.push({ i, request: requests[i], wasm: a, native: b, where });
}
console.log(`parity: ${requests.length} requests (model ${modelManifest.id}, timings excluded): ` +
  `${same} byte-identical, ${close} equal up to model rounding (max |Δ| ${worst.toExponential(2)}), ` +
  `${diffs.length} different`);
for (const d of diffs.slice(0, 3)) {
  let k = 0;
  while (k < d.wasm.length && d.wasm[k] === d.native[k]) k++;
  console.log(`  #${d.i} ${d.request} at ${d.where}\n    wasm:   …${d.wasm.slice(Math.max(0, k - 80), k + 80)}\n    native: …${d.native.slice(Math.max(0, k - 80), k + 80)}`);
}
process.exit(diffs.length === 0 ? 0 : 1);
