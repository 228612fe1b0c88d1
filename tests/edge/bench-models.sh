#!/usr/bin/env bash
# make bench-edge, second part: the Worker with the models (worker-models.js, all-MiniLM-L6-v2
# read from the assets' /models/) over the split layout of the cpp-docs bundle with embeddings
# (10k pages; built once into the cache, ~40 min on 2 cores, shared with make bench-web), under
# the same load as the first part with hybrid requests: tests/edge/bench.sh with the models'
# settings, three cold starts first, and ~400 page titles one at a time after. wrk's timeout is raised to 30 s so that a slow answer shows
# in the latency figures instead of as a socket error.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL_DIR=${MODEL_DIR:?MODEL_DIR (the MiniLM folder make models writes) is required}
CACHE=${DOCLOUPE_CACHE:-$HOME/.cache/docloupe}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/site"
node tests/bench/web/corpus.mjs split "$CACHE/bench-web" "$MODEL_DIR" "$work/site/docs"
grep -v '^[[:space:]]*$' tests/bench/web/queries.txt > "$work/queries.txt"
# A wide mix for where the isolate's memory settles (MEMORY_QUERIES): every 25th page title.
find "$CACHE/bench-web/en-large-cpp-docs" -name '*.md' | sort | awk 'NR % 25 == 0' \
  | xargs grep -h -m1 '^# ' | sed 's/^# *//' > "$work/titles.txt"
DEMO_DIR="$work/site" MODELS_DIR="$MODEL_DIR" WORKER_MAIN=worker-models.js WORKER_VARS="MODELS_PATH=/models/" \
  LOAD_MODE=hybrid LOAD_QUERIES="$work/queries.txt" MEMORY_QUERIES="$work/titles.txt" COLD_RUNS=${COLD_RUNS:-3} COLD_QUERY="how to link a static library" \
  WRK_TIMEOUT=${WRK_TIMEOUT:-30s} bash tests/edge/bench.sh
