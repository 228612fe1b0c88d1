#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with Starlight (its own heading ids and URLs),
# in WORK_DIR (a copy of this directory with node_modules): pages into src/content/docs/
# (index.md gets the `title` Starlight requires), `astro build` at / (dist) and at /harbor/
# (dist-sub) on Node 22 (try.sh installs it), then `docloupe --site` on each build's HTML.
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
export PATH=$NODE22_BIN:$PATH ASTRO_TELEMETRY_DISABLED=1
cd "$1"
rm -rf src/content/docs && mkdir -p src/content && cp -r "$2" src/content/docs
printf -- '---\ntitle: Harbor documentation\n---\n\n%s\n' "$(cat "$2/index.md")" >src/content/docs/index.md
nice -n 19 node_modules/.bin/astro build
SITE_BASE=/harbor/ nice -n 19 node_modules/.bin/astro build --outDir dist-sub
"$RECIPES/common/index-site.sh" dist dump.jsonl
"$RECIPES/common/index-site.sh" dist-sub dump-sub.jsonl --base-url /harbor/
