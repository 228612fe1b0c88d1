#!/usr/bin/env bash
# make bench-serve: `docloupe serve` under wrk on 127.0.0.1, over 100K documents with vectors,
# hybrid with the models and the second stage, a bearer token per request and the user's
# access rights applied:
#   1. 100 connections for $DURATION (60 s), the answer cache off (every request runs the
#      engine): status counts, errors, requests/s, p50/p95/p99, the server's peak RSS;
#   2. the same with the answer cache on, as a team runs it (the questions come round again);
#   3. 200 connections against a queue of 64: 503s with Retry-After instead of timeouts;
#   4. 100 connections while the bundle is replaced (a new file renamed into place, SIGHUP)
#      every 15 s: p95 and errors across the swaps.
# The collection is PowerShell-Docs 33 times over (c01/ … c33/, as `make bench-scale --copies
# en-medium-powershell-docs:33` makes it: 102,168 documents, 2.24M chunks; each distinct text
# embedded once), with c01/–c03/ restricted to group `finance` (--access); the benchmark's user
# is in group `staff`, so every search runs through an access view. Built once into
# $DOCLOUPE_CACHE/bench-serve (about 16 minutes here). BUNDLE=… for another bundle.
# The requests are PowerShell's docs questions (tests/questions) as hybrid requests mixed with
# type filters, paging and fulltext.
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${DOCLOUPE_CACHE:-$HOME/.cache/docloupe}
CORPUS=${CORPUS:-en-medium-powershell-docs}
COPIES=${COPIES:-33}
DURATION=${DURATION:-60s}
# Which phases run (all four unless told: PHASES="1" measures the engine alone).
PHASES=${PHASES:-1 2 3 4}
phase() { [[ " $PHASES " == *" $1 "* ]]; }
MODEL_DIR=${MODEL_DIR:-$CACHE/models/all-MiniLM-L6-v2}
# Another docloupe binary (to compare two builds on the same machine and bundle).
BIN=${BIN:-target/release/docloupe}
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

if [ -z "${BUNDLE:-}" ]; then
  BUNDLE="$CACHE/bench-serve/$CORPUS-$COPIES.bundle"
  if [ ! -s "$BUNDLE" ]; then
    docs="$CACHE/scale/copies-$CORPUS-$COPIES/docs"
    python3 -c "import sys; from tests.bench.scale import make_copies; make_copies(sys.argv[1], sys.argv[2], int(sys.argv[3]))" \
      "$docs" "$CORPUS" "$COPIES"
    mkdir -p "$CACHE/bench-serve"
    printf '[[rule]]\npaths = ["c01/", "c02/", "c03/"]\ngroups = ["finance"]\n' > "$CACHE/bench-serve/access.toml"
    echo "== building $BUNDLE (once; about 16 minutes on 2 cores)"
    /usr/bin/time -f "build: %e s, peak RSS %M KiB" target/release/index-builder build "$docs" --out "$BUNDLE.tmp" \
      --model "$MODEL_DIR" --access "$CACHE/bench-serve/access.toml" --quiet > "$work/build.json" 2> "$work/build.log"
    tail -1 "$work/build.log"
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print({k: r[k] for k in ('documentsProcessed','chunksWritten','chunksEmbedded','documentsRestricted','durationSeconds')})" "$work/build.json"
    mv "$BUNDLE.tmp" "$BUNDLE"
  fi
fi
python3 - "$CORPUS" > "$work/bodies.jsonl" <<'PY'
import json, sys
qs = [json.loads(l)["question"] for l in open("tests/questions/docs-questions.jsonl") if json.loads(l)["corpus"] == sys.argv[1]]
assert qs, f"no questions for {sys.argv[1]}"
for i, q in enumerate(qs * 4):
    r = {"query": q}
    if i % 3 == 1: r["filters"] = {"documentTypes": ["md"]}
    if i % 4 == 2: r["offset"] = 10
    if i % 5 == 3: r.update(limit=5, maxChunksPerDocument=1)
    if i % 7 == 6: r["mode"] = "fulltext"
    print(json.dumps(r, ensure_ascii=False))
PY
TOKEN=$(python3 -c "import secrets; print(secrets.token_hex(24))")
export TOKEN
printf '[[user]]\nname = "bench"\ntoken_sha256 = "%s"\ngroups = ["staff"]\nrate_limit = 0\nmetrics = true\n' \
  "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)" > "$work/tokens.toml"
echo "bundle: $BUNDLE ($(stat -c %s "$BUNDLE") bytes), $(wc -l < "$work/bodies.jsonl") distinct requests, $(nproc) cores"

start() { # $@: extra serve options; sets server and url
  "$BIN" serve --bundle "$work/live.bundle" --models "$MODEL_DIR" --listen 127.0.0.1:0 \
    --tokens "$work/tokens.toml" --cache-ttl-seconds "${CACHE_TTL:-0}" --watch-seconds 0 "$@" 2> "$work/serve.log" &
  server=$!
  local began=$SECONDS
  url=
  for _ in $(seq 1200); do
    url=$(grep -o '"address":"[^"]*"' "$work/serve.log" | cut -d'"' -f4 || true)
    [ -n "$url" ] && curl -sf "http://$url/readyz" >/dev/null && break
    sleep 0.5
  done
  [ -n "$url" ] || { cat "$work/serve.log"; exit 1; }
  echo "ready in $((SECONDS - began)) s"
  url="http://$url"
}
stop() { kill -TERM "$server"; wait "$server" || true; server=; }
peak() { grep VmHWM "/proc/$server/status" | awk '{print $2 * 1024}'; }
run() { # $1 connections, $2 duration
  BODIES="$work/bodies.jsonl" wrk -t2 -c"$1" -d"$2" --timeout 10s -s tests/bench/serve.lua "$url" | grep '^{"statuses"'
}

# The bundle the server reads is a copy: the last phase replaces it under the server's feet.
cp "$BUNDLE" "$work/live.bundle"
# 1. The engine's own capacity: the cache off, a queue that holds every connection (no 503).
if phase 1; then
start --queue 128
echo "== warm-up, 20 s"; run 100 20s >/dev/null
echo "== 1. 100 connections, $DURATION, hybrid, cache off, queue 128"
run 100 "$DURATION"; echo "peak RSS: $(peak) bytes"
stop
fi

# 2. As a team runs it: the answer cache on (5 minutes), the same questions asked again.
if phase 2; then
CACHE_TTL=300 start --queue 128
echo "== warm-up, 20 s"; run 100 20s >/dev/null
echo "== 2. 100 connections, $DURATION, hybrid, cache on (TTL 300 s)"
run 100 "$DURATION"
echo "cache: $(curl -s "$url/metrics" -H "Authorization: Bearer $TOKEN" | grep -E '^docloupe_cache_(hits|misses)_total' | tr '\n' ' ')"
stop
fi

# 3. Past capacity: 200 connections against the default queue of 64.
if phase 3; then
start --queue 64
echo "== 3. 200 connections, $DURATION, cache off, queue 64"
run 200 "$DURATION"
stop
fi

# 4. A bundle rebuilt and swapped in under load.
if phase 4; then
start --queue 128
echo "== 4. 100 connections, 70 s, cache off, the bundle replaced (a new file renamed into place, SIGHUP) every 15 s"
run 100 10s >/dev/null
( for _ in 1 2 3 4; do sleep 15; cp "$BUNDLE" "$work/next.bundle"; mv "$work/next.bundle" "$work/live.bundle"; kill -HUP "$server"; done ) &
swapper=$!
run 100 70s
wait $swapper
echo "reloads swapped in: $(grep -c '"event":"reload".*"state":"ready"' "$work/serve.log" || true); peak RSS: $(peak) bytes"
stop
fi
