#!/usr/bin/env python3
"""Choose how much the reranker decides the order of its pool, on a training split only.

Usage, from the repository root:
  python3 -m prebuild.reranker.calibrate MODEL_DIR [--max-queries N]

The engine orders the rerank pool by `w * p + (1 - w) * fused` (p: the model's probability,
fused: the hybrid score in 0..1). A model fine-tuned on documentation headings is not equally
good everywhere, so `w` is part of the shipped model: this script measures it and writes it into
MODEL_DIR/manifest.json as `blendWeight` (with the whole sweep under `calibration`), where the
engine reads it unless a host overrides it.

Data: BEIR SciFact **train** queries and qrels (809 queries) through the real `docloupe search
--jsonl` on the quality benchmark's SciFact bundle (prebuild/evaluation.py builds and caches
it, as `make bench-quality` does). The test qrels are never read here. Two passes over the same
fused top 30 (hybrid without rerank for the fused scores; hybrid with the model at weight 1 for
its probabilities), then every weight on a 0.05 grid is scored offline with nDCG@10; the best
wins, ties going to the smaller weight (the cheaper claim).
"""

import argparse
import json
import os
import sys

from .. import evaluation  # bundle preparation, qrels, nDCG
from .. import models  # atomic_write

POOL = 30
GRID = [round(0.05 * i, 2) for i in range(21)]


def run(bundle, queries, rerank, extra):
    requests = [{"query": q["text"], "limit": POOL, "candidateLimit": POOL, "maxChunksPerDocument": 1,
                 "includeContext": False, "mode": "hybrid", "rerank": rerank} for q in queries]
    out = evaluation.search_jsonl(bundle, requests, ["--rerank-budget-ms", "600000", *extra])
    bad = [o for o in out if "errorCode" in o or o.get("fallbackApplied")]
    if bad:
        sys.exit(f"{len(bad)} requests failed or fell back, e.g. {bad[0]}")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--max-queries", type=int)
    args = ap.parse_args(argv)

    name = "scifact"
    qrels = evaluation.read_qrels(os.path.join(evaluation.EVAL, name, "qrels", "train.tsv"))
    queries = [q for q in evaluation.read_jsonl(os.path.join(evaluation.EVAL, name, "queries.jsonl"))
               if q["_id"] in qrels]
    queries = queries[:args.max_queries] if args.max_queries else queries
    bundle = evaluation.beir_bundle(name, [], False)
    fused = run(bundle, queries, False, ["--no-reranker"])
    scored = run(bundle, queries, True, ["--reranker", args.model_dir, "--rerank-weight", "1"])

    pools = []
    for a, b in zip(fused, scored):
        p = {(x["documentPath"], x["chunkIndex"]): x["rankingSignals"]["rerank"] for x in b["results"]}
        pools.append([(os.path.splitext(os.path.basename(x["documentPath"]))[0], x["score"],
                       p[(x["documentPath"], x["chunkIndex"])]) for x in a["results"]])
    rels = [qrels[q["_id"]] for q in queries]

    sweep = []
    for w in GRID:
        # A stable sort over the fused order: equal blends keep it.
        ranked = [[d for d, _, _ in sorted(pool, key=lambda c: -(w * c[2] + (1 - w) * c[1]))] for pool in pools]
        sweep.append((w, evaluation.metrics(ranked, rels, 1)["ndcg10"]))
    best_w, best = max(sweep, key=lambda s: (round(s[1], 6), -s[0]))
    for w, ndcg in sweep:
        print(f"  w {w:4.2f}  nDCG@10 {ndcg:.4f}{'  <- chosen' if w == best_w else ''}")
    print(f"SciFact train, {len(queries)} queries: fused {sweep[0][1]:.4f}, model alone {sweep[-1][1]:.4f}, "
          f"blend weight {best_w} -> {best:.4f}")

    path = os.path.join(args.model_dir, "manifest.json")
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["blendWeight"] = best_w
    manifest["calibration"] = {"data": f"BEIR SciFact train ({len(queries)} queries), fused top {POOL}",
                               "metric": "nDCG@10", "sweep": [[w, round(n, 4)] for w, n in sweep]}
    models.atomic_write(path, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    main(sys.argv[1:])
