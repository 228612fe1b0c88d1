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
echo "== the Worker on workerd (wrangler dev, local)"
DOCLOUPE_EDGE_WORK="$work" node --test --test-concurrency=1 "$@" tests/edge/edge.test.mjs
