#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with VitePress (its own heading ids and URLs),
# in WORK_DIR (a copy of this directory with node_modules): pages into docs/, `vitepress build`
# at / (dist) and at /harbor/ (dist-sub), then `docloupe --site` on each build's HTML.
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
cp -r "$2/." docs/
# VitePress compiles markdown as Vue templates: the sample's raw-HTML lines are fenced.
node "$RECIPES/common/fence-raw-html.mjs" docs/reference/security.md
nice -n 19 node_modules/.bin/vitepress build docs --outDir "$PWD/dist"
SITE_BASE=/harbor/ nice -n 19 node_modules/.bin/vitepress build docs --outDir "$PWD/dist-sub"
"$RECIPES/common/index-site.sh" dist dump.jsonl
"$RECIPES/common/index-site.sh" dist-sub dump-sub.jsonl --base-url /harbor/
