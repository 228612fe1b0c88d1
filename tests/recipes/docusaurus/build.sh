#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with docloupe, in WORK_DIR (a copy of this
# directory with node_modules): pages into docs/, the docloupe files, bundle and models into
# static/docloupe/, then `docusaurus build` at / (build) and at /harbor/ (build-sub).
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
rm -rf docs && cp -r "$2" docs
"$RECIPES/common/assemble.sh" static/docloupe docs dump.jsonl
export DOCUSAURUS_TELEMETRY_DISABLED=1
nice -n 19 node_modules/.bin/docusaurus build
SITE_BASE=/harbor/ nice -n 19 node_modules/.bin/docusaurus build --out-dir build-sub
