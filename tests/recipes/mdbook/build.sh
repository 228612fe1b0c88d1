#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample book with mdBook (its own heading ids), in WORK_DIR
# (a copy of this directory): the pages into src/ beside SUMMARY.md, `mdbook build` into book/,
# then `docloupe --site book` on its HTML.
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
cp -r "$2/." src/
nice -n 19 "$MDBOOK" build
"$RECIPES/common/index-site.sh" book dump.jsonl
