#!/usr/bin/env bash
# The Cloudflare Worker (www/edge) on real workerd: wrangler dev in local mode (no login, no
# telemetry) on 127.0.0.1, driven over HTTP by tests/edge/edge.test.mjs. The fixture bundle is
# built with the real model (so hybrid requests exist to degrade) for a project, split, and the
# native CLI answers the parity requests (tests/parity/requests.jsonl, made fulltext: the
# Worker runs the lexical engine) for comparison.
# Extra arguments go to node --test (e.g. --test-name-pattern=plain).
# Needs `make wasm` (www/pkg/lexical), the release binaries and `npm ci` in www/edge.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL_DIR=${MODEL_DIR:?MODEL_DIR (the embedding model directory) is required}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

target/release/index-builder build tests/fixtures/docs --out "$work/fixtures.bundle" --model "$MODEL_DIR" \
  --project docloupe/fixtures --quiet >/dev/null
mkdir -p "$work/assets"
target/release/index-builder split "$work/fixtures.bundle" --out "$work/assets/docs" >/dev/null
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
  const seen = new Set();
  for (const line of lines) {
    let text = line;
    try {
      const r = JSON.parse(line);
      // Every request that names no mode or a valid one becomes fulltext; invalid ones stay.
      const valid = r?.mode === undefined || ["hybrid", "semantic", "fulltext"].includes(r.mode);
      if (r && typeof r === "object" && !Array.isArray(r) && valid) text = JSON.stringify({ ...r, mode: "fulltext" });
    } catch {}
    if (!seen.has(text)) { seen.add(text); console.log(text); }
  }' tests/parity/requests.jsonl > "$work/requests.jsonl"
target/release/docloupe search --bundle "$work/fixtures.bundle" --no-reranker --jsonl \
  < "$work/requests.jsonl" > "$work/native.jsonl"
# The same bundle with the embedding model beside it (MODELS_PATH): hybrid and semantic in the
# Worker, against the native engine's answers with the same model and the learned second stage.
mkdir -p "$work/assets-models/models"
cp -r "$work/assets/docs" "$work/assets-models/docs"
cp "$MODEL_DIR/model.int8.onnx" "$MODEL_DIR/tokenizer.json" "$work/assets-models/models/"
printf '%s\n' '{"query":"how big can the cache be"}' '{"query":"как настроить кэш","mode":"semantic"}' \
  '{"query":"cache size","mode":"hybrid","limit":3}' '{"query":"purge the cache","mode":"semantic","limit":2}' \
  > "$work/requests-models.jsonl"
env -u DOCLOUPE_RERANKER_DIR target/release/docloupe search --bundle "$work/fixtures.bundle" --models "$MODEL_DIR" \
  --jsonl < "$work/requests-models.jsonl" > "$work/native-models.jsonl"
echo "== the Worker on workerd (wrangler dev, local)"
DOCLOUPE_EDGE_WORK="$work" node --test --test-concurrency=1 "$@" tests/edge/edge.test.mjs
