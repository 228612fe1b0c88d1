#!/usr/bin/env python3
"""Dense retrieval alone, base against tuned, on the docs questions of one corpus: a quick
signal for choosing the tuning recipe (the figures that count come from `make bench-quality`,
through the engine and its fusion).

Usage, from the repository root (inside the torch venv):
  python -m prebuild.tuning.evaluate CORPUS [--split dev] [--weights WORKDIR/weights.npz ...]

Every chunk of the corpus (the production chunking, prebuild/reranker/mine.py's `prepare`) is
embedded as the builder embeds it (breadcrumb, newline, text; 256 tokens), each question as a
query; a page scores its best chunk. Prints per model: top-3 (a grade-2 page among the three
best pages), MRR@10 of the first grade-2 page, and recall@30 pages (any graded page).
"""

import argparse
import json
import os
import random
import sys

from .. import models
from ..reranker import mine
from .train import encoder, tokenizer

SAMPLE_SEED = 64
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mix(base, tuned, a):
    """base + a (tuned - base), in float32; tensors the base lacks are taken as tuned."""
    import numpy as np

    if base is None or a == 1:
        return tuned
    base = np.asarray(base, dtype=np.float32)
    return (base + np.float32(a) * (tuned - base)).astype(np.float32)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--towers", choices=["both", "query"], default="both",
                    help="query: the weights embed the questions only, the passages stay the base "
                    "model's (prebuild.tuning.query)")
    ap.add_argument("--sample", type=int, default=0,
                    help="a large corpus: only the judged pages' chunks and this many others, drawn "
                    "with a fixed seed (an easier search than the whole site, the same for every model)")
    ap.add_argument("--tuning", action="store_true",
                    help="also the corpus's written tuning questions (only where the corpus was held "
                    "out of training): more questions, a steadier figure")
    ap.add_argument("--weights", action="append", default=[])
    ap.add_argument("--mix", default="1", help="weights as base + a (tuned - base), for each a listed "
                    "(weight-space ensembling, WiSE-FT): 1 is the tuned model")
    args = ap.parse_args(argv)

    import numpy as np
    import torch
    from tokenizers import Tokenizer

    torch.set_num_threads(2)
    questions = [json.loads(line) for line in open(os.path.join(ROOT, "tests/questions/docs-questions.jsonl"))]
    splits = set(args.split.split(","))
    questions = [q for q in questions if q["corpus"] == args.corpus and q["split"] in splits]
    if args.tuning:
        qdir = os.path.join(ROOT, "prebuild/tuning/questions")
        for name in sorted(os.listdir(qdir)):
            if name.startswith(args.corpus + "-"):
                for line in open(os.path.join(qdir, name), encoding="utf-8"):
                    t = json.loads(line)
                    questions.append({"question": t["question"], "judgments": {t["path"]: 2}})
    _, chunks = mine.prepare(args.corpus)
    inner = lambda p: p.split("/", 1)[1]  # noqa: E731
    if args.sample:
        judged = {d for q in questions for d in q["judgments"]}
        rest = [c for c in chunks if inner(c["documentPath"]) not in judged]
        random.Random(SAMPLE_SEED).shuffle(rest)
        chunks = [c for c in chunks if inner(c["documentPath"]) in judged] + rest[:args.sample]
    docs = [inner(c["documentPath"]) for c in chunks]
    tag = args.corpus + (f"-sample{args.sample}-{len(chunks)}" if args.sample else "")
    tokenizer_json, cfg, tensors = models.load_backbone(models.cache_dir())
    qtok = tokenizer(Tokenizer, tokenizer_json, 64)
    ptok = tokenizer(Tokenizer, tokenizer_json, 256)

    def chunk_vectors(embed, cache):
        if cache and os.path.exists(cache):
            return torch.from_numpy(np.load(cache))
        parts = []
        with torch.no_grad():
            for i in range(0, len(chunks), 64):
                enc = ptok.encode_batch([mine.passage(c) for c in chunks[i:i + 64]])
                parts.append(embed(torch.tensor([e.ids for e in enc]), torch.tensor([e.attention_mask for e in enc])))
        P = torch.cat(parts)
        np.save(cache + ".tmp.npy", P.numpy())
        os.replace(cache + ".tmp.npy", cache)
        return P

    def run(weights, a):
        model, embed = encoder(torch, cfg, tensors)
        if weights:
            state = {k: torch.from_numpy(mix(tensors.get(k), v, a)) for k, v in np.load(weights).items()}
            model.load_state_dict(state, strict=False)
        model.eval()
        if weights and args.towers == "both":
            suffix = "" if a == 1 else f".mix{a:g}"
            P = chunk_vectors(embed, weights + f"{suffix}.{tag}.chunks.npy")
        else:  # the base model's passages
            base, base_embed = encoder(torch, cfg, tensors)
            base.eval()
            P = chunk_vectors(base_embed, os.path.join(models.cache_dir(), "tuning", f"base.{tag}.chunks.npy"))
        with torch.no_grad():
            enc = qtok.encode_batch([q["question"] for q in questions])
            Q = embed(torch.tensor([e.ids for e in enc]), torch.tensor([e.attention_mask for e in enc]))
        S = (Q @ P.T).numpy()
        top3 = rr = rec = 0.0
        for qi, q in enumerate(questions):
            best = {}
            for ci in np.argsort(-S[qi])[:400]:
                best.setdefault(docs[ci], S[qi, ci])
            ranked = sorted(best, key=lambda d: -best[d])
            grade = q["judgments"]
            top3 += any(grade.get(d) == 2 for d in ranked[:3])
            first = next((i for i, d in enumerate(ranked[:10]) if grade.get(d) == 2), None)
            rr += 0 if first is None else 1 / (first + 1)
            rec += any(grade.get(d, 0) > 0 for d in ranked[:30])
        n = max(1, len(questions))
        return top3 / n, rr / n, rec / n

    print(f"{tag} {args.split}: {len(questions)} questions, {len(chunks)} chunks")
    alphas = [float(a) for a in args.mix.split(",")]
    for w, a in [(None, 1.0)] + [(w, a) for w in args.weights for a in alphas]:
        t3, mrr, r30 = run(w, a)
        label = "base" if w is None else w if a == 1 else f"{w} mixed {a:g}"
        print(f"  {label:<60} top-3 {t3:.3f}  MRR@10 {mrr:.3f}  recall@30 {r30:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
