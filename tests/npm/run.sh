#!/usr/bin/env bash
# make test-npm: docloupe as a docs site owner gets it, from the npm tarballs `make package`
# builds, with no Rust or Python on PATH.
#  1. npm/pack.mjs packs every package (engine + CLI, linux-x64 binaries, the models);
#  2. npm installs the tarballs into an empty folder, offline (a file missing from a package
#     fails here or below, never falls back to the checkout), on a PATH holding node and npm
#     only: cargo, rustc and python3 must not resolve there;
#  3. VitePress (tests/recipes/vitepress: its own ids and URLs) builds the sample site at /
#     and at /harbor/; `npx docloupe --site dist` indexes each, on that PATH;
#  4. in headless Chromium every result of each index lands on an existing page and #anchor,
#     and the search box, typed into, lands the reader on the hybrid, reranked answer.
# Results in target/test-output/npm/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source tests/recipes/common/env.sh
OUTPUT=$ROOT/target/test-output/npm
W=$(mktemp -d "${TMPDIR:-/tmp}/docloupe-npm.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUTPUT"
t0=$(date +%s)

echo "== make package"
node npm/pack.mjs --out "$W/tarballs"

echo "== npm install, offline, with only node and npm on PATH"
mkdir -p "$W/bin" "$W/app"
for tool in node npm npx; do ln -s "$(command -v "$tool" | xargs realpath)" "$W/bin/$tool"; done
CLEAN_PATH=$W/bin
for tool in cargo rustc python3 python; do
  if PATH=$CLEAN_PATH command -v "$tool" >/dev/null 2>&1; then echo "$tool resolves on the clean PATH" >&2; exit 1; fi
done
echo '{"name": "a-docs-site", "private": true}' >"$W/app/package.json"
mapfile -t tarballs < <(sed "s|^|$W/tarballs/|" "$W/tarballs/tarballs.txt")
(cd "$W/app" && env -i HOME="$W/home" PATH="$CLEAN_PATH" npm install --offline --no-audit --no-fund \
  --cache "$W/npm-cache" --loglevel=error "${tarballs[@]}")
# Every package the engine package names as optional must be what was installed (no registry
# copy, no missing platform binary).
(cd "$W/app" && env -i HOME="$W/home" PATH="$CLEAN_PATH" npm ls --all --offline >"$W/npm-ls.txt") || { cat "$W/npm-ls.txt"; exit 1; }
cat "$W/npm-ls.txt"
docloupe=$W/app/node_modules/.bin/docloupe
clean() { env -i HOME="$W/home" PATH="$CLEAN_PATH" "$@"; }
clean "$docloupe" --version

echo "== VitePress builds the sample site at / and /harbor/"
vp=$WORK/npm-vitepress
mkdir -p "$vp"
find "$vp" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
tar -C tests/recipes/vitepress --exclude=./build.sh --exclude=./check.mjs -cf - . | tar -C "$vp" -xf -
stamp="$(sha256sum <"$vp/package-lock.json" | cut -c1-64) $(node --version)"
if [ "$(cat "$vp/node_modules/.docloupe-stamp" 2>/dev/null)" != "$stamp" ]; then
  (cd "$vp" && nice -n 19 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$stamp" >"$vp/node_modules/.docloupe-stamp"
fi
tar -C tests/fixtures/site --exclude='*.txt' -cf - . | tar -C "$vp/docs" -xf -
cp -r tests/recipes/content/. "$vp/docs/"
# VitePress compiles markdown as Vue templates: the sample's raw-HTML lines are fenced.
node tests/recipes/common/fence-raw-html.mjs "$vp/docs/reference/security.md"
(cd "$vp" && nice -n 19 node_modules/.bin/vitepress build docs --outDir "$vp/dist" >"$OUTPUT/vitepress-build.log" 2>&1 \
  && SITE_BASE=/harbor/ nice -n 19 node_modules/.bin/vitepress build docs --outDir "$vp/dist-sub" >>"$OUTPUT/vitepress-build.log" 2>&1) \
  || { tail -30 "$OUTPUT/vitepress-build.log"; exit 1; }

echo "== npx docloupe --site dist (clean PATH)"
t_site=$(date +%s)
clean "$docloupe" --site "$vp/dist" --project acme/harbor | tee "$OUTPUT/lines.txt"
t_site=$(($(date +%s) - t_site))
clean "$docloupe" --site "$vp/dist-sub" --base-url /harbor/ --project acme/harbor | tee "$OUTPUT/lines-sub.txt"
grep -qx '<script type="module" src="/docloupe/docloupe-search.js"></script>' "$OUTPUT/lines.txt"
grep -qx '<docloupe-search bundle="/harbor/docloupe/index/" models="/harbor/docloupe/models.json" root="/harbor/"></docloupe-search>' "$OUTPUT/lines-sub.txt"
# A second run replaces its own output; a folder docloupe did not write is never replaced.
clean "$docloupe" --site "$vp/dist" --model none --quiet >/dev/null
[ ! -e "$vp/dist/docloupe/models.json" ] || { echo "--model none left the models in place" >&2; exit 1; }
clean "$docloupe" --site "$vp/dist" --project acme/harbor --quiet >/dev/null
mkdir -p "$vp/dist/theirs" && echo keep >"$vp/dist/theirs/file"
if clean "$docloupe" --site "$vp/dist" --output-subdir theirs --quiet 2>"$W/refused.txt"; then
  echo "a folder docloupe did not write was replaced" >&2; exit 1
fi
grep -q "did not write it" "$W/refused.txt" && [ "$(cat "$vp/dist/theirs/file")" = keep ]
rm -rf "$vp/dist/theirs"

# The chunks each index holds (the same pages, anchors and paths the split index serves).
for d in dist dist-sub; do
  clean "$docloupe" index-builder build "$vp/$d" --formats html --no-embeddings --quiet --out "$W/$d.bundle" >/dev/null
  clean "$docloupe" index-builder dump "$W/$d.bundle" >"$OUTPUT/$d-dump.jsonl"
done

echo "== Chromium: every result lands; the search box lands on the answer"
node tests/npm/check.mjs "$vp" "$OUTPUT"
echo "npm: install to answer in $(($(date +%s) - t0)) s (docloupe --site on the sample site: ${t_site} s)"
