#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with docloupe, in WORK_DIR (a copy of this
# directory with node_modules): pages into docs/, the docloupe files, bundle and models into
# docs/public/docloupe/, then `vitepress build` at / (dist) and at /harbor/ (dist-sub).
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
cp -r "$2/." docs/
# VitePress compiles markdown as Vue templates: the sample's raw-HTML lines are fenced.
node "$RECIPES/common/fence-raw-html.mjs" docs/reference/security.md
"$RECIPES/common/assemble.sh" docs/public/docloupe docs dump.jsonl
nice -n 19 node_modules/.bin/vitepress build docs
SITE_BASE=/harbor/ nice -n 19 node_modules/.bin/vitepress build docs --outDir "$PWD/docs/.vitepress/dist-sub"
