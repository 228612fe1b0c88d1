#!/usr/bin/env bash
# Rebuilds the project's reranker from scratch: mine → train → export → check → install →
# calibrate. Usage: bash prebuild/reranker/build.sh      (about an hour on 2 CPU cores)
#
# Not part of `make test` or CI: the model in prebuild/reranker/model is committed (see
# MODEL_CARD.md) and pinned by DEFAULT_RERANKER_SHA256 in src/search/rerank.rs; after a
# rebuild that changes it, update the pin and the card. Every step is pinned and seeded, so a
# re-run on the same machine reproduces the checkpoint; the exported bytes depend only on the
# weights.
# Work files live in $DOCLOUPE_CACHE/reranker (default ~/.cache/docloupe/reranker); training
# resumes from its last checkpoint when interrupted.
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE="${DOCLOUPE_CACHE:-$HOME/.cache/docloupe}"
WORK="$CACHE/reranker"
RUN="$WORK/run-l2-t96"
VENV="$CACHE/reranker-venv"
LAYERS=2
MAX_TOKENS=96
STEPS=2400

# Python with torch (CPU use only; the PyPI wheel brings CUDA libraries, ~6 GB), numpy and
# tokenizers, pinned by requirements.txt. The embedding-model venv (numpy + onnx) exports.
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/pip" freeze 2>/dev/null | grep -qx 'torch==2.9.1'; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r prebuild/reranker/requirements.txt
fi
python3 -m prebuild.models >/dev/null            # pinned wheel + the numpy/onnx venv
EXPORT_PY="$CACHE/venv-prebuild/bin/python"
cargo build --release --workspace --examples

mkdir -p "$WORK"
[ -s "$WORK/groups.jsonl" ] || python3 -m prebuild.reranker.mine "$WORK/groups.jsonl"
"$VENV/bin/python" -m prebuild.reranker.train "$WORK/groups.jsonl" "$RUN" \
  --layers $LAYERS --max-tokens $MAX_TOKENS --steps $STEPS --batch 8
"$EXPORT_PY" -m prebuild.reranker.export "$RUN/weights.npz" "$RUN/export" \
  --layers $LAYERS --max-tokens $MAX_TOKENS --metrics "$RUN/metrics.json"
target/release/examples/rerank_check "$RUN/export" "$WORK/groups.jsonl" | tee "$RUN/check.txt"

mkdir -p prebuild/reranker/model
cp "$RUN/export/model.int8.onnx" "$RUN/export/tokenizer.json" "$RUN/export/manifest.json" prebuild/reranker/model/
# The blend weight is chosen on SciFact train (never test) and written into the manifest.
python3 -m prebuild.reranker.calibrate prebuild/reranker/model | tee "$RUN/calibration.txt"
echo "installed: prebuild/reranker/model ($(sha256sum prebuild/reranker/model/model.int8.onnx | cut -c1-64))"
