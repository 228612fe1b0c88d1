#!/usr/bin/env bash
# Runs cargo-fuzz targets for FUZZ_SECONDS each (make fuzz), or for FUZZ_RUNS executions each,
# seeded from the test fixtures, and prints executions and findings per target. Corpora and
# crashes live in $DOCLOUPE_CACHE/fuzz (never in the repository) and grow from run to run.
# Needs the release binaries (a fixture bundle is built with them). Every run is added to
# $DOCLOUPE_CACHE/fuzz/ledger.tsv, and the report ends with each target's executions in total.
# Usage: FUZZ_SECONDS=600 bash fuzz/run.sh [target ...]; FUZZ_RUNS=10000000 bash fuzz/run.sh pdf
# FUZZ_KEEP_SEEDS=1 reuses the seeds of an earlier run instead of writing them again.
# FUZZ_SANITIZER=none builds without AddressSanitizer (two to four times the executions a
# second on these targets; a panic, a timeout or RSS over the limit is still a finding, an
# allocation over 1 GB then only through RSS); the ledger records which sanitizer ran.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-600}
SANITIZER=${FUZZ_SANITIZER:-address}
CACHE=${DOCLOUPE_CACHE:-$HOME/.cache/docloupe}
WORK="$CACHE/fuzz"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(bundle request markdown html pdf docx xlsx)
mkdir -p "$WORK/seeds"

# Seeds: every frozen and freshly built bundle, the parity requests, the fixture markdown,
# and a file of each converted format from the tests' own writers.
seeds="$WORK/seeds"
mkdir -p "$seeds"/{bundle,request,markdown,html,pdf,docx,xlsx}
export DOCLOUPE_FUZZ_BUNDLE="$seeds/bundle/fixtures-coded.bundle"
if [ -z "${FUZZ_KEEP_SEEDS:-}" ] || [ ! -s "$DOCLOUPE_FUZZ_BUNDLE" ]; then
cp tests/fixtures/bundles/*.bundle "$seeds/bundle/"
target/release/index-builder build tests/fixtures/docs --out "$seeds/bundle/fixtures-fulltext.bundle" --no-embeddings --quiet >/dev/null
target/release/index-builder build tests/fixtures/docs --out "$seeds/bundle/fixtures-coded.bundle" --compact-threshold 2 \
  --access fuzz/access.toml --quiet >/dev/null
i=0
while IFS= read -r line; do
  i=$((i + 1))
  printf '%s' "$line" > "$seeds/request/$i.json"
done < tests/parity/requests.jsonl
find tests/fixtures/docs tests/fixtures/site -name '*.md' -exec cp {} "$seeds/markdown/" \;
i=0
while IFS= read -r page; do
  i=$((i + 1))
  cp "$page" "$seeds/html/$i.html"
done < <(find tests/fixtures/html-site -name '*.html' | sort)
DOCLOUPE_FUZZ_SEEDS="$seeds" cargo test --release --test hostile_inputs -- --ignored write_fuzz_seeds >/dev/null
fi

cd fuzz
# One optimized build (the one `cargo fuzz build -O` makes); `run` without -O builds another.
for t in "${targets[@]}"; do cargo +nightly fuzz build -O -s "$SANITIZER" "$t"; done
ledger="$WORK/ledger.tsv"
report=()
for t in "${targets[@]}"; do
  corpus="$WORK/corpus/$t"
  mkdir -p "$corpus" "$WORK/artifacts/$t"
  cp -n "$seeds/$t"/* "$corpus/" 2>/dev/null || true
  log="$WORK/$t.log"
  echo "== fuzz $t for ${SECONDS_EACH}s"
  # rss/malloc limits: an allocation over 1 GB is a finding, as is a run over 10 s.
  # Markdown: its dictionary of front matter, table and line-end tokens, and inputs long
  # enough for tables to pad (a header of hundreds of columns over thousands of rows).
  extra=()
  if [ "$t" = markdown ]; then extra=(-dict="$PWD/markdown.dict" -max_len=65536); fi
  # HTML: pages long enough to nest, misnest and hold the heading tree a real page has.
  if [ "$t" = html ]; then extra=(-max_len=65536); fi
  if [ -n "${FUZZ_RUNS:-}" ]; then budget=(-runs="$FUZZ_RUNS"); else budget=(-max_total_time="$SECONDS_EACH"); fi
  started=$(date +%s)
  set +e
  cargo +nightly fuzz run -O -s "$SANITIZER" "$t" "$corpus" -- "${budget[@]}" "${extra[@]}" -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -timeout=10 -artifact_prefix="$WORK/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  found=$(ls "$WORK/artifacts/$t" | wc -l)
  secs=$(( $(date +%s) - started ))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$(git rev-parse --short HEAD)" "$t" "${execs:-0}" "$secs" "$rc" "$SANITIZER" >>"$ledger"
  report+=("$t: ${execs:-?} executions in ${secs} s, exit $rc, $found findings in $WORK/artifacts/$t")
done
printf '%s\n' "${report[@]}"
echo "executions in total (ledger $ledger):"
# (Rows before the sanitizer column ran with AddressSanitizer.)
awk -F'\t' '{ n[$3] += $4; s[$3] += $5; if ($7 == "none") u[$3] += $4 }
  END { for (t in n) printf "  %s: %d in %d s (%d without a sanitizer)\n", t, n[t], s[t], u[t] }' "$ledger" | sort
