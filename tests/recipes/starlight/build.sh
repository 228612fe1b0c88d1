#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with docloupe, in WORK_DIR (a copy of this
# directory with node_modules): pages into src/content/docs/ (index.md gets the `title`
# Starlight requires), the docloupe files, bundle and models into public/docloupe/, then
# `astro build` at / (dist) and at /harbor/ (dist-sub), on Node 22 (try.sh installs it).
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
export PATH=$NODE22_BIN:$PATH ASTRO_TELEMETRY_DISABLED=1
cd "$1"
rm -rf src/content/docs && mkdir -p src/content && cp -r "$2" src/content/docs
printf -- '---\ntitle: Harbor documentation\n---\n\n%s\n' "$(cat "$2/index.md")" >src/content/docs/index.md
"$RECIPES/common/assemble.sh" public/docloupe src/content/docs dump.jsonl
nice -n 19 node_modules/.bin/astro build
SITE_BASE=/harbor/ nice -n 19 node_modules/.bin/astro build --outDir dist-sub
