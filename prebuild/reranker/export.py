#!/usr/bin/env python3
"""Export a trained docloupe reranker to ONNX (fp32 and weight-only int8).

Usage, from the repository root (inside the pinned prebuild venv, which has numpy + onnx):
  python -m prebuild.reranker.export WEIGHTS.npz OUT_DIR [--layers N] [--max-tokens T]

WEIGHTS.npz holds the cross-encoder's tensors under Hugging Face BERT names
(embeddings.*, encoder.layer.{i}.*, classifier.weight [1, 384], classifier.bias [1]), as
written by train.py; without a file (`-`) the backbone's own first N layers and a zero
classifier are exported, which is only useful for timing the graph.

The graph is the embedding model's (prebuild/models.py: same ops, same int8 recipe) truncated
to N layers, plus a head: mean pooling over attention_mask, then one Linear to a single logit.
Inputs input_ids, attention_mask, token_type_ids [batch, sequence] int64; output logits
[batch, 1]. Writes OUT_DIR/model.fp32.onnx, OUT_DIR/model.int8.onnx and OUT_DIR/tokenizer.json
(the backbone's, unchanged), byte-deterministically.
"""

import json
import os
import sys

from .. import models  # prebuild/models.py

MODEL_ID = "docloupe-rerank-minilm"


def head(g, h, dense):
    """Mean-pool the final hidden states over the mask, then Linear(384 → 1)."""
    from onnx import TensorProto, helper
    import numpy as np

    c_axis1 = g.const("head_const_axes1", np.array([1], dtype=np.int64))
    c_axis2 = g.const("head_const_axes2", np.array([2], dtype=np.int64))
    c_tiny = g.const("head_const_tiny", np.array(1e-9, dtype=np.float32))
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)  # [b, s]
    mask3 = g.op("Unsqueeze", [mask, c_axis2])  # [b, s, 1]
    summed = g.op("ReduceSum", [g.op("Mul", [h, mask3]), c_axis1], keepdims=0)  # [b, 384]
    count = g.op("ReduceSum", [mask, c_axis1], keepdims=1)  # [b, 1]
    pooled = g.op("Div", [summed, g.op("Max", [count, c_tiny])])
    logits = dense(pooled, "classifier")  # [b, 1]
    info = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    return logits, info


def load_weights(path, backbone, layers):
    import numpy as np

    if path == "-":
        t = {k: v for k, v in backbone.items()}
        t["classifier.weight"] = np.zeros((1, 384), dtype=np.float32)
        t["classifier.bias"] = np.zeros((1,), dtype=np.float32)
        return t
    with np.load(path) as z:
        t = {k: np.ascontiguousarray(z[k]).astype(np.float32) for k in z.files}
    missing = [f"encoder.layer.{i}.output.dense.weight" for i in range(layers)
               if f"encoder.layer.{i}.output.dense.weight" not in t]
    if missing or "classifier.weight" not in t:
        raise SystemExit(f"{path}: not a {layers}-layer reranker checkpoint (missing {missing[:1]})")
    return t


def main(argv):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--metrics", help="JSON file of training metrics to copy into manifest.json")
    args = ap.parse_args(argv)

    tokenizer, cfg, backbone = models.load_backbone(models.cache_dir())
    cfg = dict(cfg)
    cfg["num_hidden_layers"] = args.layers
    t = load_weights(args.weights, backbone, args.layers)

    os.makedirs(args.out, exist_ok=True)
    outputs = {}
    for label, int8 in (("fp32", False), ("int8", True)):
        doc = (
            f"docloupe reranker: a cross-encoder fine-tuned from the first {args.layers} layers of "
            f"sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0, from {models.WHEEL_REQ}); mean "
            "pooling over attention_mask, Linear to one relevance logit. "
            + ("Weight-only int8 (MatMul weights per-column int8 x fp32 row factor; word "
               "embeddings per-row int8)." if int8 else "fp32 weights.")
        )
        g = models.build_model(t, cfg, int8=int8, head=head, name=f"{MODEL_ID}_{label}", doc=doc)
        outputs[f"model.{label}.onnx"] = models.check_and_serialize(g, label)
    outputs["tokenizer.json"] = tokenizer
    for name, data in outputs.items():
        models.atomic_write(os.path.join(args.out, name), data)
    manifest = {
        "id": f"{MODEL_ID}-l{args.layers}-int8wo",
        "kind": "cross-encoder",
        "backbone": "sentence-transformers/all-MiniLM-L6-v2",
        "source": models.WHEEL_REQ,
        "layers": args.layers,
        "maxTokens": args.max_tokens,
        "output": "logits [batch, 1]",
        "sha256": {n: models.sha256_bytes(d) for n, d in sorted(outputs.items())},
    }
    if args.metrics:
        with open(args.metrics) as f:
            manifest["training"] = json.load(f)
    models.atomic_write(
        os.path.join(args.out, "manifest.json"),
        (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(),
    )
    for name, data in sorted(outputs.items()):
        print(f"  {name:16s} {len(data):>10d} bytes  sha256 {models.sha256_bytes(data)}")


if __name__ == "__main__":
    main(sys.argv[1:])
