#!/usr/bin/env bash
# The docs-site experience end to end: `index-builder site` renders tests/fixtures/site, its
# bundle is built with the real embedding model and split, precache.mjs writes the offline
# worker, and tests/web/site.test.mjs drives <docloupe-search> in headless Chromium (Debian's,
# through playwright-core). Screenshots go to target/test-output/web/.
# Needs `make wasm` and the release binaries; MODEL_DIR is the embedding model directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL_DIR=${MODEL_DIR:?MODEL_DIR (the embedding model directory) is required}
RERANKER_DIR=prebuild/reranker/model
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== <docloupe-search> on a site from index-builder site, in headless Chromium"
target/release/index-builder build tests/fixtures/site --out "$work/site.bundle" --model "$MODEL_DIR" --quiet >/dev/null
target/release/index-builder split "$work/site.bundle" --out "$work/site-bundle" >/dev/null
target/release/index-builder site tests/fixtures/site --out "$work/site" --title Harbor --head www/demo/head.html >/dev/null
DOCLOUPE_SITE="$work/site" DOCLOUPE_SITE_BUNDLE="$work/site-bundle" DOCLOUPE_MODEL_DIR="$MODEL_DIR" \
  DOCLOUPE_RERANKER_DIR="$RERANKER_DIR" node --test --test-concurrency=1 tests/web/site.test.mjs
