#!/usr/bin/env python3
"""Tune only the query side of all-MiniLM-L6-v2 (issue 64): an asymmetric bi-encoder whose
passages stay the base model's vectors.

Usage, from the repository root (inside the torch venv, $DOCLOUPE_CACHE/reranker-venv):
  python -m prebuild.tuning.query GROUPS.jsonl WORKDIR [--hold CORPUS ...] [--steps N | --passes P]
         [--batch 64] [--lr 2e-5] [--pool corpus] [--kinds written,title,...]

Why the query side alone: the vocabulary gap is in the reader's words ("write output to the
screen and a file at once"), not in the pages. A query tower that learns to land those words
where the base model put the answering section leaves every passage vector as it is, so:
bundles built with the base model stay valid (nothing to rebuild, build time and bundle
size unchanged), the pages' side of SciFact and XQuAD-R cannot drift, and training is cheap
on a CPU: the passages are embedded once, without gradients, and a step is the forward and
backward pass of short queries only.

Because the passages are fixed, each query's softmax can run over every passage of its own
corpus that the groups hold (its positive, its BM25 hard negatives, and every other group's
passages: `--pool corpus`), not only the batch's: closer to retrieval over a whole site.
`--pool batch` is the usual in-batch softmax. A passage with the positive's text is never a
negative.

Regularizer `--anchor W`: W times the mean squared distance between the tuned and the base
query vectors of the batch, which keeps the tower near the base model where the data says
nothing (the held-out corpora are unseen sites).

Output: WORKDIR/weights.npz (Hugging Face names, the query tower), WORKDIR/metrics.json;
WORKDIR/../passages/ caches the base vectors of each corpus's passages, for every fold.
"""

import argparse
import hashlib
import os
import sys
import time

from ..reranker.train import LossLog, optimizer, save_run, update
from .train import SEED, batch_at, encoder, setup


def log(msg):
    print(f"tune-query: {msg}", file=sys.stderr, flush=True)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("groups")
    ap.add_argument("workdir")
    ap.add_argument("--hold", action="append", default=[], help="a corpus left out of training")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--passes", type=float, default=0.0,
                    help="steps scaled to the data: this many passes over the training groups "
                    "(overrides --steps)")
    ap.add_argument("--batch", type=int, default=64, help="queries per step")
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--pool", choices=["batch", "corpus"], default="corpus")
    ap.add_argument("--anchor", type=float, default=0.0)
    ap.add_argument("--kinds", default="", help="group kinds kept (default: all)")
    ap.add_argument("--q-tokens", type=int, default=32)
    ap.add_argument("--p-tokens", type=int, default=128)
    ap.add_argument("--langs", default="en")
    args = ap.parse_args(argv)

    import numpy as np

    torch, cfg, tensors, qtok, ptok, encode, groups = setup(args.workdir, args.groups, args.langs,
                                                             args.q_tokens, args.p_tokens)
    kinds = set(args.kinds.split(",")) if args.kinds else None
    train = [g for g in groups if g["corpus"] not in args.hold and (kinds is None or g["kind"] in kinds)]
    if args.passes:
        args.steps = max(1, round(args.passes * len(train) / args.batch))
    log(f"{len(train)} training groups ({', '.join(args.hold) or 'none'} held out); "
        f"{args.steps} steps x {args.batch} queries, pool {args.pool}")

    # The passages, once, with the base model: every text the training groups hold, in a
    # fixed order (sorted by corpus, then text) so that a corpus is one range of rows. Each
    # corpus's vectors are cached on their own (WORKDIR/../passages), for every fold to share.
    texts = sorted({(g["corpus"], t) for g in train for t in [g["positive"]] + g["negatives"]})
    row = {ct: i for i, ct in enumerate(texts)}
    cache_dir = os.path.join(os.path.dirname(os.path.abspath(args.workdir)), "passages")
    os.makedirs(cache_dir, exist_ok=True)
    base, base_embed = encoder(torch, cfg, tensors)  # the passages' tower and the anchor
    base.eval()
    parts = []
    for corpus in sorted({c for c, _ in texts}):
        own = [t for c, t in texts if c == corpus]
        digest = hashlib.sha256("\0".join(own).encode()).hexdigest()[:16]
        cache = os.path.join(cache_dir, f"{corpus}-{args.p_tokens}-{digest}.npy")
        if not os.path.exists(cache):
            vecs, t0 = [], time.monotonic()
            with torch.no_grad():
                for i in range(0, len(own), 64):
                    vecs.append(base_embed(*encode(ptok, own[i:i + 64])))
                    if i % 6400 == 0:
                        log(f"{corpus}: passages {i}/{len(own)} ({time.monotonic() - t0:.0f} s)")
            np.save(cache + ".tmp.npy", torch.cat(vecs).numpy())
            os.replace(cache + ".tmp.npy", cache)
        parts.append(torch.from_numpy(np.load(cache)))
    P = torch.cat(parts)
    corpus_of = [c for c, _ in texts]
    ranges = {}
    for i, c in enumerate(corpus_of):
        lo, hi = ranges.get(c, (i, i))
        ranges[c] = (min(lo, i), max(hi, i + 1))
    text_id = {}  # the same text in two corpora is still one passage for "not a negative"
    same = torch.tensor([text_id.setdefault(t, len(text_id)) for _, t in texts])

    model, embed = encoder(torch, cfg, tensors)

    trainable, opt, sched = optimizer(torch, model, args.lr, args.steps)

    NEG = float("-inf")
    metrics, step = {"loss": []}, 0
    losses = LossLog(metrics, 100, args.steps, log)
    model.train()
    while step < args.steps:
        batch = batch_at(train, args.batch, step)
        pos = torch.tensor([row[(g["corpus"], g["positive"])] for g in batch])
        ids, mask = encode(qtok, [g["query"] for g in batch])
        q = embed(ids, mask)
        if args.pool == "corpus":
            logits = args.scale * q @ P.T  # [B, N]
            allowed = torch.zeros_like(logits, dtype=torch.bool)
            for i, g in enumerate(batch):
                lo, hi = ranges[g["corpus"]]
                allowed[i, lo:hi] = True
            allowed &= same[None, :] != same[pos][:, None]
            allowed[torch.arange(len(batch)), pos] = True
            logits = logits.masked_fill(~allowed, NEG)
            target = pos
        else:
            cols = sorted({int(p) for p in pos} | {row[(g["corpus"], n)] for g in batch for n in g["negatives"]})
            col = {c: j for j, c in enumerate(cols)}
            cols_t = torch.tensor(cols)
            logits = args.scale * q @ P[cols_t].T
            notneg = same[cols_t][None, :] == same[pos][:, None]
            target = torch.tensor([col[int(p)] for p in pos])
            notneg[torch.arange(len(batch)), target] = False
            logits = logits.masked_fill(notneg, NEG)
        loss = torch.nn.functional.cross_entropy(logits, target)
        if args.anchor:
            with torch.no_grad():
                q0 = base_embed(ids, mask)
            loss = loss + args.anchor * ((q - q0) ** 2).sum(-1).mean()
        update(torch, loss, trainable, opt, sched)
        step += 1
        losses.add(step, loss.item())

    metrics.update(vars(args), trainGroups=len(train), passages=len(texts), seed=SEED)
    save_run(args.workdir, model, metrics, skip="classifier.")


if __name__ == "__main__":
    main(sys.argv[1:])
