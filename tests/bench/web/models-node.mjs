// The wasm engine's models in Node, in minutes (no browser, no cpp-docs bundle): for each model,
// the wasm memory once it is loaded over the fixtures' bundle, its load time and the engine's
// query embedding time (`timings.embedMs`, tokenizing included) over bench-web's 40 queries;
// onnxruntime-web (wasm, 1 thread, fp32) on MiniLM's same token ids in the same run.
//   node tests/bench/web/models-node.mjs PKG_DIR MODEL_DIR E5_DIR
// PKG_DIR is a full wasm package (www/pkg/full). Needs target/release/index-builder, the
// token_ids example and tests/bench/web's npm packages.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median, percentile } from './util.mjs';

const [pkg, minilm, e5] = process.argv.slice(2).map((p) => path.resolve(p));
if (!e5) throw new Error('usage: models-node.mjs PKG_DIR MODEL_DIR E5_DIR');
const ROOT = path.resolve(import.meta.dirname, '../../..');
const bin = (name) => path.join(ROOT, 'target/release', name);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'models-node-'));
const queries = fs.readFileSync(path.join(import.meta.dirname, 'queries.txt'), 'utf8').split('\n').map((q) => q.trim()).filter(Boolean);
const ROUNDS = 3;

const bundle = (modelDir, name) => {
  const out = path.join(work, `${name}.bundle`);
  execFileSync(bin('index-builder'), ['build', path.join(ROOT, 'tests/fixtures/docs'), '--out', out, '--model', modelDir, '--quiet'], { stdio: 'ignore' });
  return out;
};
const trimmed = path.join(work, 'e5-latin-cyrillic');
execFileSync(bin('index-builder'), ['trim-model', '--scripts', 'latin,cyrillic', '--out', trimmed, e5], { stdio: 'ignore' });
const runs = [
  ['all-MiniLM-L6-v2', minilm, bundle(minilm, 'minilm')],
  ['multilingual-e5-small', e5, bundle(e5, 'e5')],
  ['multilingual-e5-small, latin + cyrillic', trimmed, path.join(work, 'e5.bundle')],
];

/** One model in a fresh instance of the package: memory, load, embedding per query. */
async function ours(modelDir, bundlePath) {
  const glue = await import(`${pkg}/docloupe.js?${Math.random()}`);
  const wasm = await glue.default({ module_or_path: fs.readFileSync(path.join(pkg, 'docloupe_bg.wasm')) });
  const mib = () => wasm.memory.buffer.byteLength / 2 ** 20;
  const engine = new glue.Engine(fs.readFileSync(bundlePath));
  const before = mib();
  const t0 = performance.now();
  engine.loadEmbedder(fs.readFileSync(path.join(modelDir, 'model.int8.onnx')), fs.readFileSync(path.join(modelDir, 'tokenizer.json')));
  const loadMs = performance.now() - t0;
  const loaded = mib();
  const ms = [];
  // Each text once (the engine keeps the vectors of its last queries): a word per round.
  for (let round = 0; round < ROUNDS; round++) {
    for (const q of queries) ms.push(engine.search({ query: `${q} ${['now', 'again', 'once more'][round]}`, mode: 'semantic', limit: 3 }).timings.embedMs);
  }
  return { wasmMiB: { open: before, loaded, afterQueries: mib() }, loadMs, embedMs: { p50: median(ms), p95: percentile(ms, 95) } };
}

/** onnxruntime-web on MiniLM's fp32 graph, the same token ids, as bench-web's ort page does. */
async function ort(ids) {
  const dist = path.join(import.meta.dirname, 'node_modules/onnxruntime-web/dist/');
  const lib = await import(path.join(dist, 'ort.wasm.min.mjs'));
  lib.env.wasm.wasmPaths = dist;
  lib.env.wasm.numThreads = 1;
  const session = await lib.InferenceSession.create(fs.readFileSync(path.join(minilm, 'model.fp32.onnx')), { executionProviders: ['wasm'] });
  const feeds = (x) => {
    const shape = [1, x.length];
    return {
      input_ids: new lib.Tensor('int64', BigInt64Array.from(x, BigInt), shape),
      attention_mask: new lib.Tensor('int64', new BigInt64Array(x.length).fill(1n), shape),
      token_type_ids: new lib.Tensor('int64', new BigInt64Array(x.length), shape),
    };
  };
  for (const x of ids.slice(0, 5)) await session.run(feeds(x));
  const ms = [];
  for (const x of ids) {
    const t = performance.now();
    const out = await session.run(feeds(x));
    ms.push(performance.now() - t);
    for (const tensor of Object.values(out)) tensor.dispose();
  }
  await session.release();
  return { version: lib.env.versions.web, embedMs: { p50: median(ms), p95: percentile(ms, 95) } };
}

try {
  // MiniLM's ids for the queries as the engine tokenizes them (with the round's word).
  const texts = [];
  for (let round = 0; round < ROUNDS; round++) for (const q of queries) texts.push(`${q} ${['now', 'again', 'once more'][round]}`);
  const ids = execFileSync('cargo', ['run', '--quiet', '--release', '--example', 'token_ids', '--', minilm],
    { cwd: ROOT, input: `${texts.join('\n')}\n`, encoding: 'utf8', maxBuffer: 1 << 24 }).trim().split('\n').map((l) => JSON.parse(l));
  const results = {};
  for (const [name, dir, b] of runs) results[name] = await ours(dir, b);
  results.onnxruntimeWeb = await ort(ids);
  console.log(JSON.stringify(results, null, 1));
  const m = results['all-MiniLM-L6-v2'].embedMs.p50;
  console.log(`MiniLM query embedding p50 ${m.toFixed(1)} ms, onnxruntime-web ${results.onnxruntimeWeb.embedMs.p50.toFixed(1)} ms: ${(m / results.onnxruntimeWeb.embedMs.p50).toFixed(2)}×`);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
