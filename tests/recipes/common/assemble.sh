#!/usr/bin/env bash
# assemble.sh OUT_DIR DOCS_DIR [DUMP_FILE]
# Puts everything <docloupe-search> needs into OUT_DIR (a generator's static dir): the
# component and engine from www/, the lexical and full wasm packages from www/pkg/, a split
# bundle of DOCS_DIR in OUT_DIR/docs/, and the models (OUT_DIR/models/, OUT_DIR/reranker/).
# DUMP_FILE gets `index-builder dump` (every chunk's documentPath and anchor).
# Env: INDEX_BUILDER (default target/release/index-builder).
set -euo pipefail
out=$1 docs=$2 dump=${3:-}
source "$(dirname "$0")/env.sh"
ib=${INDEX_BUILDER:-$ROOT/target/release/index-builder}
emb=$CACHE/models/all-MiniLM-L6-v2
rer=$ROOT/prebuild/reranker/model
# Hard links keep 57 MB of models and wasm per site cheap; a copy where they cannot be made.
link() { cp -l "$1" "$2" 2>/dev/null || cp "$1" "$2"; }

mkdir -p "$out/pkg" "$out/models" "$out/reranker"
for f in docloupe.js host.js inflate.js worker.js docloupe-search.js docloupe-search.css; do cp "$ROOT/www/$f" "$out/$f"; done
for kind in lexical full; do
  rm -rf "$out/pkg/$kind"; mkdir -p "$out/pkg/$kind"
  for f in docloupe.js docloupe_bg.wasm; do link "$ROOT/www/pkg/$kind/$f" "$out/pkg/$kind/$f"; done
done
mkdir -p "$out/pkg/inflate" && link "$ROOT/www/pkg/inflate/inflate.wasm" "$out/pkg/inflate/inflate.wasm"
for f in model.int8.onnx tokenizer.json; do link "$emb/$f" "$out/models/$f"; done
for f in manifest.json model.int8.onnx tokenizer.json; do link "$rer/$f" "$out/reranker/$f"; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nice -n 19 "$ib" build "$docs" --out "$tmp/docs.bundle" --model "$emb" --quiet
echo
nice -n 19 "$ib" split "$tmp/docs.bundle" --out "$out/docs/" >/dev/null
[ -z "$dump" ] || "$ib" dump "$tmp/docs.bundle" >"$dump"
