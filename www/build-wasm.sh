#!/usr/bin/env bash
# Builds the engine's wasm packages into www/pkg/ (git-ignored):
#   www/pkg/lexical  no models (no tract, no tokenizers): answers fulltext from the first bytes;
#                    it inflates whole bundles through www/pkg/inflate/inflate.wasm (built with it)
#   www/pkg/full     the embedding and rerank models too, on simd128 (the embedding model on
#                    src/embed/bert.rs, the reranker on tract)
#   www/pkg/portable the same without simd128, whose answers equal the native engine's on
#                    `--kernels portable` byte for byte (2–4× slower)
# Each: cargo (cdylib with LTO; cargo ignores LTO for the cdylib+rlib crate type) →
# wasm-bindgen --target web (one glue for pages, Web Workers, Node and Cloudflare Workers) →
# wasm-opt from npm's binaryen (Debian's v108 breaks wasm-bindgen 0.2.130 output); the glue
# minified by npm's terser.
# Tools come from `make setup-wasm`.
# Under CI=true the full and portable builds get `wasm-opt -O0` instead of -O3: npm's binaryen
# is itself wasm and takes ~8 min per 20 MB module at -O3 on these machines, 2 min 10 s at -O1
# and 18 s at -O0 (which still validates the module against the features and strips it:
# 20.7 MB → 19.2 MB against -O1's 18.4 MB), and LLVM itself runs at opt-level 1 without LTO
# (below): the tests check behaviour, which is the same. `make bench-web` and `make demo`
# outside CI build with -O3 and the profiles' LTO.
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.."
TARGET=wasm32-unknown-unknown
WASM_OPT=www/node_modules/.bin/wasm-opt
TERSER=www/node_modules/.bin/terser
FEATURES=(--enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
          --enable-mutable-globals --enable-reference-types --enable-multivalue)

build() {
  local kind=$1 profile=$2 opt=$3
  shift 3
  cargo rustc --quiet --lib --profile "$profile" --target "$TARGET" --no-default-features "$@" \
    --crate-type cdylib
  local out=www/pkg/$kind
  # wasm-opt on the full build takes minutes: skip it when cargo's output, this script and
  # the optimisation level are what the package was made from.
  local stamp
  stamp=$({ cat "target/$TARGET/$profile/docloupe.wasm" "$SELF"; echo "$opt"; } | sha256sum | cut -d' ' -f1)
  if [ -f "$out/docloupe_bg.wasm" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "www/pkg/$kind: up to date"
    return
  fi
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  wasm-bindgen --target web --out-dir "$out.tmp" --out-name docloupe \
    "target/$TARGET/$profile/docloupe.wasm"
  # The toolchain's custom sections (`producers`, `target_features`: 270 bytes, read by no
  # browser or host) are left out.
  # shellcheck disable=SC2086 # `opt` may hold several passes
  "$WASM_OPT" $opt "${FEATURES[@]}" --strip-producers --strip-target-features \
    "$out.tmp/docloupe_bg.wasm" -o "$out.tmp/docloupe_bg.wasm"
  # The glue is first paint too (3.9 → 2.3 KB brotli for the lexical build): minified like the
  # wasm is optimized. Its exports keep their names.
  "$TERSER" "$out.tmp/docloupe.js" --module --compress --mangle -o "$out.tmp/docloupe.js"
  echo "$stamp" > "$out.tmp/.stamp"
  rm -rf "$out" && mv "$out.tmp" "$out"
  node -e '
    const z = require("zlib"), fs = require("fs");
    const b = fs.readFileSync(process.argv[1]);
    const br = z.brotliCompressSync(b, { params: { [z.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
    console.log(`${process.argv[2]}: ${b.length} bytes raw, ${z.gzipSync(b, { level: 9 }).length} gzip, ${br} brotli`);
  ' "$out/docloupe_bg.wasm" "www/pkg/$kind"
}

HEAVY_OPT=-O3
if [ "${CI:-}" = true ]; then
  HEAVY_OPT=-O0
  # CI builds the full and portable packages to test their behaviour, not their speed or size:
  # LLVM at opt-level 1, no LTO, 16 codegen units. On a fresh clone here that took the full
  # build from 10 min 24 s to 4 min 42 s (the portable one likewise). Floating point is the same
  # at every level (no fast-math), so parity with native, byte for byte on portable, still holds;
  # `make demo` and `make bench-web` build them with the profiles' own settings.
  for p in WASM_FULL WASM_PORTABLE; do
    export CARGO_PROFILE_${p}_OPT_LEVEL=1 CARGO_PROFILE_${p}_LTO=false CARGO_PROFILE_${p}_CODEGEN_UNITS=16
  done
fi

# The lexical build's inflater (www/pkg/inflate/inflate.wasm): the `inflate/` crate alone, no
# bindings (www/inflate.js calls its alloc / free / inflate), loaded for whole bundles only.
inflater() {
  cargo rustc --quiet -p docloupe-inflate --lib --profile wasm-small --target "$TARGET" --crate-type cdylib
  local out=www/pkg/inflate
  mkdir -p "$out"
  "$WASM_OPT" -Oz "${FEATURES[@]}" "target/$TARGET/wasm-small/docloupe_inflate.wasm" -o "$out/inflate.wasm.tmp"
  mv "$out/inflate.wasm.tmp" "$out/inflate.wasm"
  echo "www/pkg/inflate: $(wc -c < "$out/inflate.wasm") bytes raw"
}

# RUSTFLAGS replaces .cargo/config.toml's `+simd128` for this one build.
portable() {
  RUSTFLAGS="-C target-feature=-simd128" build portable wasm-portable "$HEAVY_OPT" --features models
}

# `build-wasm.sh lexical` or `build-wasm.sh full` builds one of them.
case "${1:-all}" in
  lexical) build lexical wasm-small "-Oz --gufa --converge" --features host-inflate && inflater ;;
  full) build full wasm-full "$HEAVY_OPT" --features models ;;
  portable) portable ;;
  all) build lexical wasm-small "-Oz --gufa --converge" --features host-inflate && inflater && build full wasm-full "$HEAVY_OPT" --features models && portable ;;
  *) echo "usage: $0 [lexical|full|portable|all]" >&2; exit 2 ;;
esac
