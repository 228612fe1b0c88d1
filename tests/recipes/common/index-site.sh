#!/usr/bin/env bash
# index-site.sh SITE_DIR DUMP_FILE [docloupe --site options…]: what a site owner runs after the
# generator: `docloupe --site SITE_DIR` from this checkout (npm/docloupe/bin/docloupe.mjs with
# target/release's binaries, www/'s files and the cached models), which writes SITE_DIR/docloupe/.
# DUMP_FILE gets every chunk of the same pages (`index-builder dump`) for the checks.
set -euo pipefail
site=$1 dump=$2
shift 2
source "$(dirname "$0")/env.sh"
nice -n 19 node "$ROOT/npm/docloupe/bin/docloupe.mjs" --site "$site" --project acme/harbor "$@"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ROOT/target/release/index-builder" build "$site" --formats html --no-embeddings --quiet --out "$tmp/site.bundle" >/dev/null
"$ROOT/target/release/index-builder" dump "$tmp/site.bundle" >"$dump"
