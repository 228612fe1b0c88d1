#!/usr/bin/env bash
# Every wasm suite, in Node and in headless Chromium:
#   1. tests/wasm_engine.rs, compiled to wasm32 and run by wasm-bindgen-test-runner in Node,
#      then in Chromium through chromedriver (flags in webdriver.json);
#   2. the wasm packages' JS surface (api.test.mjs) and the JS API docloupe.js (js_api.test.mjs)
#      in Node, and docloupe.js in a Web Worker and on the page thread in Chromium
#      (browser.test.mjs, also a native/wasm parity run);
#   3. native/wasm parity over tests/parity/requests.jsonl (parity.mjs): the simd128 build
#      against native's fast kernels within model rounding (also on a bundle with compact
#      vector codes, 40 requests, with MiniLM's docs-tuned query tower on both sides, 40
#      requests, and with the multilingual E5 model, 20 English and 20
#      Russian requests, also with E5 trimmed to Latin and Cyrillic against the full model's
#      native answers), the portable build against native's portable kernels byte for byte.
# Needs `make wasm` and the release binaries; models from the cache (MODEL_DIR) and the
# committed reranker.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL_DIR=${MODEL_DIR:?MODEL_DIR (the embedding model directory) is required}
E5_DIR=${E5_DIR:?E5_DIR (the multilingual model directory) is required}
RERANKER_DIR=prebuild/reranker/model
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== wasm-bindgen-test: Node"
cargo test --target wasm32-unknown-unknown --no-default-features --test wasm_engine
echo "== wasm-bindgen-test: headless Chromium"
WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver} \
  cargo test --target wasm32-unknown-unknown --no-default-features --test wasm_engine

target/release/index-builder build tests/fixtures/docs --out "$work/fixtures.bundle" \
  --model "$MODEL_DIR" --quiet >/dev/null
target/release/index-builder split "$work/fixtures.bundle" --out "$work/fixtures.split" >/dev/null
# The same documents with compact first-pass codes (what collections from 10,000 chunks get),
# so the wasm engine decodes and searches them too; the first 40 requests (20 hybrid, 10
# semantic).
target/release/index-builder build tests/fixtures/docs --out "$work/coded.bundle" \
  --model "$MODEL_DIR" --compact-threshold 1 --quiet >/dev/null
head -40 tests/parity/requests.jsonl > "$work/requests-40.jsonl"
target/release/docloupe search --bundle "$work/coded.bundle" --models "$MODEL_DIR" \
  --reranker "$RERANKER_DIR" --rerank-budget-ms 3600000 --jsonl < "$work/requests-40.jsonl" > "$work/native-coded.jsonl"
# The same documents embedded by the multilingual model (E5), which the wasm host loads because
# the bundle names it: 20 English and 20 Russian requests.
target/release/index-builder build tests/fixtures/docs --out "$work/e5.bundle" \
  --model "$E5_DIR" --quiet >/dev/null
sed -n 21,60p tests/parity/requests.jsonl > "$work/requests-e5.jsonl"
target/release/docloupe search --bundle "$work/e5.bundle" --models "$E5_DIR" \
  --reranker "$RERANKER_DIR" --rerank-budget-ms 3600000 --jsonl < "$work/requests-e5.jsonl" > "$work/native-e5.jsonl"
target/release/docloupe search --bundle "$work/fixtures.bundle" --models "$MODEL_DIR" \
  --reranker "$RERANKER_DIR" --rerank-budget-ms 3600000 --jsonl < tests/parity/requests.jsonl > "$work/native.jsonl"
# The questions embedded by MiniLM's docs-tuned query tower (query.int8.onnx), on both sides.
target/release/docloupe search --bundle "$work/fixtures.bundle" --models "$MODEL_DIR" --query-model docs \
  --reranker "$RERANKER_DIR" --rerank-budget-ms 3600000 --jsonl < "$work/requests-40.jsonl" > "$work/native-tower.jsonl"
target/release/docloupe search --kernels portable --bundle "$work/fixtures.bundle" --models "$MODEL_DIR" \
  --reranker "$RERANKER_DIR" --rerank-budget-ms 3600000 --jsonl < tests/parity/requests.jsonl > "$work/native-portable.jsonl"
echo "== JS suites: Node and headless Chromium"
DOCLOUPE_PKG=www/pkg DOCLOUPE_BUNDLE="$work/fixtures.bundle" DOCLOUPE_SPLIT="$work/fixtures.split" \
  DOCLOUPE_MODEL_DIR="$MODEL_DIR" \
  DOCLOUPE_RERANKER_DIR="$RERANKER_DIR" DOCLOUPE_NATIVE="$work/native.jsonl" \
  DOCLOUPE_NATIVE_PORTABLE="$work/native-portable.jsonl" \
  node --test --test-concurrency=1 tests/wasm/api.test.mjs tests/wasm/js_api.test.mjs tests/wasm/browser.test.mjs
echo "== parity: native vs wasm (Node), fast kernels: equal up to model rounding"
node tests/wasm/parity.mjs www/pkg/full "$work/fixtures.bundle" "$MODEL_DIR" "$RERANKER_DIR" \
  tests/parity/requests.jsonl "$work/native.jsonl"
echo "== parity: native vs wasm (Node) on a bundle with compact vector codes, fast kernels"
node tests/wasm/parity.mjs www/pkg/full "$work/coded.bundle" "$MODEL_DIR" "$RERANKER_DIR" \
  "$work/requests-40.jsonl" "$work/native-coded.jsonl"
echo "== parity: native vs wasm (Node) with MiniLM's docs-tuned query tower, fast kernels"
node tests/wasm/parity.mjs --onnx query.int8.onnx www/pkg/full "$work/fixtures.bundle" "$MODEL_DIR" "$RERANKER_DIR" \
  "$work/requests-40.jsonl" "$work/native-tower.jsonl"
echo "== parity: native vs wasm (Node) with the multilingual model (E5), fast kernels"
node tests/wasm/parity.mjs www/pkg/full "$work/e5.bundle" "$E5_DIR" "$RERANKER_DIR" \
  "$work/requests-e5.jsonl" "$work/native-e5.jsonl"
echo "== parity: native with E5 vs wasm (Node) with E5 trimmed to Latin and Cyrillic"
target/release/index-builder trim-model "$E5_DIR" --scripts latin,cyrillic --out "$work/e5-trimmed" >/dev/null
node tests/wasm/parity.mjs www/pkg/full "$work/e5.bundle" "$work/e5-trimmed" "$RERANKER_DIR" \
  "$work/requests-e5.jsonl" "$work/native-e5.jsonl"
echo "== parity: native vs wasm (Node), portable kernels: byte for byte"
node tests/wasm/parity.mjs --exact www/pkg/portable "$work/fixtures.bundle" "$MODEL_DIR" "$RERANKER_DIR" \
  tests/parity/requests.jsonl "$work/native-portable.jsonl"
