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
import sys

from .. import models
from ..reranker import mine
from .train import encoder, tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--weights", action="append", default=[])
    args = ap.parse_args(argv)

    import numpy as np
    import torch
    from tokenizers import Tokenizer

    torch.set_num_threads(2)
    questions = [json.loads(line) for line in open(os.path.join(ROOT, "tests/questions/docs-questions.jsonl"))]
    splits = set(args.split.split(","))
    questions = [q for q in questions if q["corpus"] == args.corpus and q["split"] in splits]
    _, chunks = mine.prepare(args.corpus)
    inner = lambda p: p.split("/", 1)[1]  # noqa: E731
    docs = [inner(c["documentPath"]) for c in chunks]
    tokenizer_json, cfg, tensors = models.load_backbone(models.cache_dir())
    qtok = tokenizer(Tokenizer, tokenizer_json, 64)
    ptok = tokenizer(Tokenizer, tokenizer_json, 256)

    def run(weights):
        model, embed = encoder(torch, cfg, tensors)
        if weights:
            state = {k: torch.from_numpy(v) for k, v in np.load(weights).items()}
            model.load_state_dict(state, strict=False)
        model.eval()
        cache = weights and weights + f".{args.corpus}.chunks.npy"
        with torch.no_grad():
            if cache and os.path.exists(cache):
                P = torch.from_numpy(np.load(cache))
            else:
                parts = []
                for i in range(0, len(chunks), 64):
                    enc = ptok.encode_batch([mine.passage(c) for c in chunks[i:i + 64]])
                    parts.append(embed(torch.tensor([e.ids for e in enc]),
                                       torch.tensor([e.attention_mask for e in enc])))
                P = torch.cat(parts)
                if cache:
                    np.save(cache, P.numpy())
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

    print(f"{args.corpus} {args.split}: {len(questions)} questions, {len(chunks)} chunks")
    for w in [None] + args.weights:
        t3, mrr, r30 = run(w)
        print(f"  {w or 'base':<50} top-3 {t3:.3f}  MRR@10 {mrr:.3f}  recall@30 {r30:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
