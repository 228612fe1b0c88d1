#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with Docusaurus (its own heading ids and URLs),
# in WORK_DIR (a copy of this directory with node_modules): pages into docs/, `docusaurus build`
# at / (build) and at /harbor/ (build-sub), then `docloupe --site` on each build's HTML.
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
rm -rf docs && cp -r "$2" docs
export DOCUSAURUS_TELEMETRY_DISABLED=1
nice -n 19 node_modules/.bin/docusaurus build
SITE_BASE=/harbor/ nice -n 19 node_modules/.bin/docusaurus build --out-dir build-sub
"$RECIPES/common/index-site.sh" build dump.jsonl
"$RECIPES/common/index-site.sh" build-sub dump-sub.jsonl --base-url /harbor/
