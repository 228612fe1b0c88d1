#!/usr/bin/env bash
# Retrains the docs-tuned query tower from the committed questions and the shared corpora:
# groups → base passage vectors → query tower → prebuild/tuning/minilm-docs-query.safetensors.
# Usage: bash prebuild/tuning/build.sh      (`make tuned-models`; about 45 minutes on 2 CPU cores
# the first time: the groups about 10, the base vectors of their 45k passages about 20, training
# about 9)
#
# Not part of `make test` or CI: the tower is committed (prebuild/tuning/MODEL_CARD.md) and
# pinned by QUERY_TOWER_SHA256 in prebuild/models.py; after a retrain that changes it, update
# the pin and the card. Every step is seeded; torch on the same machine and thread count
# repeats the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE="${DOCLOUPE_CACHE:-$HOME/.cache/docloupe}"
WORK="$CACHE/tuning"
VENV="$CACHE/reranker-venv"
RUN="$WORK/tower-minilm"
# The recipe, chosen leave-corpora-out (docs/measurements/2026-12-07-query-tower.md).
RECIPE=(--passes 5 --batch 64 --lr 2e-5 --pool corpus --kinds written,title,description,heading,sentence)
MIX=0.7   # the tuned layers at 0.7 of their way from the base model's (WiSE-FT)

# torch (CPU use only) and tokenizers, pinned as the reranker pins them.
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/pip" freeze 2>/dev/null | grep -qx 'torch==2.9.1'; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r prebuild/reranker/requirements.txt
fi
cargo build --release --workspace            # pairs.py indexes and mines with the release binaries

mkdir -p "$WORK"
[ -s "$WORK/groups.jsonl" ] || python3 -m prebuild.tuning.pairs "$WORK/groups.jsonl"
"$VENV/bin/python" -m prebuild.tuning.query "$WORK/groups.jsonl" "$RUN" "${RECIPE[@]}"
"$VENV/bin/python" -m prebuild.tuning.export "$RUN/weights.npz" prebuild/tuning/minilm-docs-query.safetensors \
  --metrics "$RUN/metrics.json" --mix "$MIX"
echo "written: prebuild/tuning/minilm-docs-query.safetensors ($(sha256sum prebuild/tuning/minilm-docs-query.safetensors | cut -c1-64));"
echo "pin it as QUERY_TOWER_SHA256 in prebuild/models.py, then run make models"
