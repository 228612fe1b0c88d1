#!/usr/bin/env bash
# The wasm suites in Node: the JS API (tests/wasm/api.test.mjs) and native/wasm parity
# (tests/wasm/parity.mjs over tests/parity/requests.jsonl). Needs `make wasm` and the release
# binaries; models from the cache (MODEL_DIR) and the committed reranker.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL_DIR=${MODEL_DIR:?MODEL_DIR (the embedding model directory) is required}
RERANKER_DIR=prebuild/reranker/model
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/index-builder build tests/fixtures/docs --out "$work/fixtures.bundle" \
  --model "$MODEL_DIR" --quiet >/dev/null
target/release/docloupe search --bundle "$work/fixtures.bundle" --models "$MODEL_DIR" \
  --reranker "$RERANKER_DIR" --jsonl < tests/parity/requests.jsonl > "$work/native.jsonl"
DOCLOUPE_PKG=www/pkg DOCLOUPE_BUNDLE="$work/fixtures.bundle" DOCLOUPE_MODEL_DIR="$MODEL_DIR" \
  DOCLOUPE_RERANKER_DIR="$RERANKER_DIR" node --test tests/wasm/api.test.mjs
node tests/wasm/parity.mjs www/pkg/full "$work/fixtures.bundle" "$MODEL_DIR" "$RERANKER_DIR" \
  tests/parity/requests.jsonl "$work/native.jsonl"
