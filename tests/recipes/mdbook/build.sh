#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample book with docloupe, in WORK_DIR (a copy of this
# directory). The pages go into src/ beside SUMMARY.md, .ignore and src/docloupe/search.js;
# the docloupe files, bundle and models into src/docloupe/ (mdBook copies the non-markdown
# files of src/ into the book); then `mdbook build` into book/.
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
cp -r "$2/." src/
"$RECIPES/common/assemble.sh" src/docloupe src dump.jsonl
nice -n 19 "$MDBOOK" build
