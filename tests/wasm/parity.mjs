// Parity: the wasm engine's JSON equals the native engine's, `timings` aside (the rules are in
// compare.mjs). Responses are counted byte-identical or equal-within-rounding; anything else fails.
// With --exact every response must be byte-identical: the portable build (www/pkg/portable)
// against `docloupe search --kernels portable`, which run the same generic kernels.
// With --onnx NAME the wasm engine embeds with MODEL_DIR/NAME (default model.int8.onnx; the query
// tower's query.int8.onnx against `docloupe search --query-model docs`).
// Usage: node tests/wasm/parity.mjs [--exact] [--onnx NAME] PKG_DIR BUNDLE MODEL_DIR RERANKER_DIR REQUESTS.jsonl NATIVE.jsonl
// NATIVE.jsonl is `docloupe search --bundle BUNDLE --jsonl < REQUESTS.jsonl` with the same models.
import fs from 'node:fs';
import path from 'node:path';
import { compareResponses } from './compare.mjs';

const args = process.argv.slice(2);
let exact = false;
let onnx = 'model.int8.onnx';
while (args[0]?.startsWith('--')) {
  const flag = args.shift();
  if (flag === '--exact') exact = true;
  else if (flag === '--onnx') onnx = args.shift();
  else throw new Error(`parity: unknown flag ${flag}`);
}
const [pkg, bundlePath, modelDir, rerankerDir, requestsPath, nativePath] = args;
const m = await import(path.resolve(pkg, 'docloupe.js'));
m.initSync({ module: fs.readFileSync(path.join(pkg, 'docloupe_bg.wasm')) });

const engine = new m.Engine(fs.readFileSync(bundlePath));
const modelManifest = JSON.parse(fs.readFileSync(path.join(modelDir, 'manifest.json')));
engine.loadEmbedder(fs.readFileSync(path.join(modelDir, onnx)),
  fs.readFileSync(path.join(modelDir, 'tokenizer.json')));
engine.loadReranker(fs.readFileSync(path.join(rerankerDir, 'manifest.json')),
  fs.readFileSync(path.join(rerankerDir, 'model.int8.onnx')),
  fs.readFileSync(path.join(rerankerDir, 'tokenizer.json')));
// Both sides rerank without a time budget (run.sh passes the same to the native CLI): with the
// default 2 s a slow or busy machine turns a rerank into `rerank_budget_exceeded` on one side
// only, and the comparison would measure the machine, not the engine.
engine.setRerankBudgetMs(3_600_000);

const lines = (p) => fs.readFileSync(p, 'utf8').split('\n').filter((l) => l.trim() !== '');
const requests = lines(requestsPath);
const native = lines(nativePath);
if (requests.length !== native.length) {
  console.error(`parity: ${requests.length} requests but ${native.length} native answers`);
  process.exit(2);
}
const { same, close, worst, different } = compareResponses(requests.map((r) => engine.searchJson(r)), native, { exact });
console.log(`parity${exact ? ' (exact)' : ''}: ${requests.length} requests (model ${modelManifest.id}, ${onnx}, ` +
  `kernels ${engine.info().kernels}, timings excluded): ` +
  `${same} byte-identical, ${close} equal up to model rounding (max |Δ| ${worst.toExponential(2)}), ` +
  `${different.length} different`);
for (const d of different.slice(0, 3)) {
  let k = 0;
  while (k < d.ours.length && d.ours[k] === d.theirs[k]) k++;
  console.log(`  #${d.i} ${requests[d.i]} at ${d.where}\n    wasm:   …${d.ours.slice(Math.max(0, k - 80), k + 80)}\n    native: …${d.theirs.slice(Math.max(0, k - 80), k + 80)}`);
}
process.exit(different.length === 0 ? 0 : 1);
