"""Trains small cross-encoders (the first L layers of all-MiniLM-L6-v2) for docloupe's second
stage on a GPU and measures them on the dev questions; never reads a test split (prepare.py
ships none). Not part of any build: the 2026-11-26 sweep it ran is in ../MODEL_CARD.md.

Usage, on a machine with torch, tokenizers and a GPU (the device tool: carry the folder
prepare.py wrote, e.g. `.gpu`, ignored by git):
  SWEEP_DATA=.gpu E1=2 E2=8 RUNS="L2T96:2:96:5e-5:2,L4T96:4:96:5e-5:2" python3 sweep.py
RUNS: name:layers:max tokens:stage-2 learning rate:stage-1 epochs (0 = no mined groups).
$OUT gets results.json (every dev logit and metric of every snapshot) and w-NAME.npz (the
snapshot with the best dev top-3 at K <= 10, fp16, under Hugging Face names for export.py).
SMOKE=1 runs a few groups and questions for one epoch each (on CPU in a minute) to check it.

stage 1: mined groups (query, positive, 7 BM25 negatives), listwise softmax CE
stage 2: the train questions' hybrid pools (30 candidates, graded), listwise with graded targets
After stage 1 and each stage-2 epoch: logits for every dev row (docs dev + SciFact train odd half),
and the dev top-3 / nDCG@10 of ranker logit + alpha * CE over the ranker's top K.
"""
import json, lzma, math, os, random, sys, time
import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ranker"))
import train as ranker  # noqa: E402  (prebuild/ranker/train.py: doc_order; imports only the standard library)

SEED = 20261126
OUT = os.environ.get("OUT", "/tmp/ce-out")
os.makedirs(OUT, exist_ok=True)
DEV = "cuda" if torch.cuda.is_available() else "cpu"
SMOKE = os.environ.get("SMOKE") == "1"
T0 = time.time()


def log(*a):
    print(f"[{time.time() - T0:7.1f}s]", *a, flush=True)


DATA = os.environ.get("SWEEP_DATA", ".gpu")
cfg = json.load(open(os.path.join(DATA, "config.json")))
z = np.load(os.path.join(DATA, "backbone.npz"))
BASE = {k: torch.from_numpy(z[k].astype(np.float32)) for k in z.files if k not in ("wq", "ws")}
BASE["embeddings.word_embeddings.weight"] = torch.from_numpy(z["wq"].astype(np.float32) * z["ws"])
H, HEADS, EPS = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
nn = torch.nn


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
        self.ao, self.ln1 = nn.Linear(H, H), nn.LayerNorm(H, eps=EPS)
        self.i = nn.Linear(H, cfg["intermediate_size"])
        self.o, self.ln2 = nn.Linear(cfg["intermediate_size"], H), nn.LayerNorm(H, eps=EPS)

    def forward(self, x, bias):
        b, s, _ = x.shape
        sp = lambda t: t.view(b, s, HEADS, H // HEADS).transpose(1, 2)  # noqa: E731
        q, k, v = sp(self.q(x)), sp(self.k(x)), sp(self.v(x))
        sc = q @ k.transpose(-1, -2) / math.sqrt(H // HEADS) + bias
        ctx = (sc.softmax(-1) @ v).transpose(1, 2).reshape(b, s, H)
        h1 = self.ln1(self.ao(ctx) + x)
        return self.ln2(self.o(F.gelu(self.i(h1))) + h1)


class CE(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.we = nn.Embedding(cfg["vocab_size"], H)
        self.pe = nn.Embedding(cfg["max_position_embeddings"], H)
        self.te = nn.Embedding(cfg["type_vocab_size"], H)
        self.eln = nn.LayerNorm(H, eps=EPS)
        self.layers = nn.ModuleList([Layer() for _ in range(layers)])
        self.cls = nn.Linear(H, 1)

    def forward(self, ids, mask, types):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.eln(self.we(ids) + self.te(types) + self.pe(pos)[None])
        bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for l in self.layers:
            x = l(x, bias)
        m = mask.float().unsqueeze(-1)
        return self.cls((x * m).sum(1) / m.sum(1).clamp(min=1e-9)).squeeze(-1)


# ours <-> Hugging Face names (export.py reads the latter)
def hf_names(layers):
    m = {"we.weight": "embeddings.word_embeddings.weight", "pe.weight": "embeddings.position_embeddings.weight",
         "te.weight": "embeddings.token_type_embeddings.weight", "eln.weight": "embeddings.LayerNorm.weight",
         "eln.bias": "embeddings.LayerNorm.bias", "cls.weight": "classifier.weight", "cls.bias": "classifier.bias"}
    sub = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
           "ao": "attention.output.dense", "ln1": "attention.output.LayerNorm", "i": "intermediate.dense",
           "o": "output.dense", "ln2": "output.LayerNorm"}
    for i in range(layers):
        for a, b in sub.items():
            for p in ("weight", "bias"):
                m[f"layers.{i}.{a}.{p}"] = f"encoder.layer.{i}.{b}.{p}"
    return m


def make(layers):
    model = CE(layers)
    names = hf_names(layers)
    sd = {}
    for ours, hf in names.items():
        if hf.startswith("classifier"):
            continue
        sd[ours] = BASE[hf]
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert sorted(missing) == ["cls.bias", "cls.weight"], missing
    nn.init.zeros_(model.cls.weight)
    nn.init.zeros_(model.cls.bias)
    for p in list(model.we.parameters()) + list(model.pe.parameters()) + list(model.te.parameters()) + list(
            model.eln.parameters()):
        p.requires_grad_(False)
    return model.to(DEV)


tok = Tokenizer.from_str(open(os.path.join(DATA, "tokenizer.json")).read())
tok.no_padding()


def encode(pairs, T):
    tok.enable_truncation(T, strategy="longest_first")
    tok.no_padding()
    enc = tok.encode_batch(pairs)
    ids = np.zeros((len(enc), T), np.int64)
    msk = np.zeros((len(enc), T), np.int64)
    typ = np.zeros((len(enc), T), np.int64)
    for j, e in enumerate(enc):
        n = len(e.ids)
        ids[j, :n], msk[j, :n], typ[j, :n] = e.ids, e.attention_mask, e.type_ids
    return torch.from_numpy(ids), torch.from_numpy(msk), torch.from_numpy(typ)


# ---------- data
_g = json.load(lzma.open(os.path.join(DATA, "groups.json.xz"), "rt", encoding="utf-8"))
groups = [{"query": g["query"], "positive": _g["passages"][g["p"][0]],
           "negatives": [_g["passages"][i] for i in g["p"][1:]]} for g in _g["groups"]]
del _g
pools = json.load(lzma.open(os.path.join(DATA, "pools.json.xz"), "rt", encoding="utf-8"))
if SMOKE:
    groups = groups[:200]
    pools = {k: v[:6] for k, v in pools.items()}
held = [g for g in groups if int.from_bytes(g["query"].encode()[:4].ljust(4, b"x"), "little") % 50 == 0]
mined = [g for g in groups if g not in held] if SMOKE else [g for g in groups
                                                         if int.from_bytes(g["query"].encode()[:4].ljust(4, b"x"),
                                                                           "little") % 50 != 0]
q_train = [q for k, v in pools.items() if k.endswith("|train") and not k.startswith("scifact") for q in v]
sci = pools.get("scifact|train", [])
q_train += sci[0::2]
q_train = [q for q in q_train if any(r[0] > 0 for r in q["rows"])]
dev_sets = {k.split("|")[0]: v for k, v in pools.items() if k.endswith("|dev")}
dev_sets["scifact-odd"] = sci[1::2]
log(f"mined {len(mined)} held {len(held)}; train questions {len(q_train)}; dev",
    {k: len(v) for k, v in dev_sets.items()})


# ---------- the engine's order after scoring: prebuild/ranker/train.py's simulation of rank.rs
def doc_order(rows, scores, demote=True):
    """Pool rows are [grade, page, copy key, ranker logit, passage]; train.py's are
    (grade, page, features, copy key)."""
    return ranker.doc_order([(r[0], r[1], None, tuple(r[2])) for r in rows], scores, demote)


def qmetrics(q, scores, beir):
    rels = q["rels"]
    o = doc_order(q["rows"], scores, not beir)
    t3 = float(any(rels.get(d, 0) >= 2 for d in o[:3]))
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(o[:10]))
    ideal = sorted(rels.values(), reverse=True)[:10]
    return t3, dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def combined(q, ce, K, alpha):
    rl = [r[3] for r in q["rows"]]
    top = set(sorted(range(len(rl)), key=lambda i: -rl[i])[:K])
    return [rl[i] + alpha * ce[i] if i in top else rl[i] - 1e4 for i in range(len(rl))]


GRID = [(K, a) for K in (5, 8, 10, 30) for a in (0.25, 0.5, 1.0, 2.0, 4.0, 1e3)]


def evaluate_dev(logits):
    """logits: {set: [[ce per row] per query]} -> {(K, a): (docs top3, docs ndcg, sci ndcg)}"""
    res = {}
    for K, a in [(0, 0.0)] + GRID:
        t3 = nd = n = 0
        for name, qs in dev_sets.items():
            if name == "scifact-odd":
                continue
            for q, ce in zip(qs, logits[name]):
                x, y = qmetrics(q, combined(q, ce, K, a) if K else [r[3] for r in q["rows"]], False)
                t3 += x; nd += y; n += 1
        sn = 0
        for q, ce in zip(dev_sets["scifact-odd"], logits["scifact-odd"]):
            sn += qmetrics(q, combined(q, ce, K, a) if K else [r[3] for r in q["rows"]], True)[1]
        res[(K, a)] = (t3 / max(n, 1), nd / max(n, 1), sn / max(len(dev_sets["scifact-odd"]), 1))
    return res


# ---------- training
def score_rows(model, T):
    model.eval()
    out = {}
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=DEV == "cuda"):
        for name, qs in dev_sets.items():
            pairs = [(q["query"], r[4]) for q in qs for r in q["rows"]]
            flat = []
            for i in range(0, len(pairs), 1024):
                ids, m, t = (x.to(DEV) for x in encode(pairs[i:i + 1024], T))
                flat += model(ids, m, t).float().cpu().tolist()
            it = iter(flat)
            out[name] = [[next(it) for _ in q["rows"]] for q in qs]
    model.train()
    return out


def held_mrr(model, T):
    model.eval()
    rr = 0.0
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=DEV == "cuda"):
        for i in range(0, len(held), 128):
            b = held[i:i + 128]
            pairs = [(g["query"], p) for g in b for p in [g["positive"]] + g["negatives"][:7]]
            lg = model(*(x.to(DEV) for x in encode(pairs, T))).float().view(len(b), 8)
            rr += (1.0 / ((lg[:, 1:] >= lg[:, :1]).sum(1) + 1).float()).sum().item()
    model.train()
    return rr / max(len(held), 1)


def opt_for(model, lr, steps):
    tr = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW([{"params": [p for p in tr if p.dim() >= 2], "weight_decay": 0.01},
                             {"params": [p for p in tr if p.dim() < 2], "weight_decay": 0.0}], lr=lr)
    warm = max(1, int(0.06 * steps))
    sch = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    return tr, opt, sch


def stage1(model, T, epochs, bs=32, lr=1e-4):
    rng = random.Random(SEED)
    per = max(1, len(mined) // bs)
    steps = per * epochs
    tr, opt, sch = opt_for(model, lr, steps)
    # pre-tokenize
    pairs = [(g["query"], p) for g in mined for p in [g["positive"]] + g["negatives"][:7]]
    ids, m, t = encode(pairs, T)
    ids, m, t = ids.view(len(mined), 8, T).to(DEV), m.view(len(mined), 8, T).to(DEV), t.view(len(mined), 8, T).to(DEV)
    step, losses = 0, []
    for ep in range(epochs):
        order = list(range(len(mined)))
        rng.shuffle(order)
        for i in range(per):
            sel = torch.tensor(order[i * bs:(i + 1) * bs], device=DEV)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=DEV == "cuda"):
                lg = model(ids[sel].view(-1, T), m[sel].view(-1, T), t[sel].view(-1, T)).float().view(len(sel), 8)
            loss = F.cross_entropy(lg, torch.zeros(len(sel), dtype=torch.long, device=DEV))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(tr, 1.0)
            opt.step(); sch.step(); step += 1
            losses.append(loss.item())
        log(f"  stage1 epoch {ep + 1}/{epochs}: loss {np.mean(losses[-per:]):.4f}  held MRR {held_mrr(model, T):.4f}")


def stage2(model, T, epochs, lr, snap, bs=8):
    rng = random.Random(SEED + 1)
    per = max(1, len(q_train) // bs)
    tr, opt, sch = opt_for(model, lr, per * epochs)
    enc = []
    for q in q_train:
        ids, m, t = encode([(q["query"], r[4]) for r in q["rows"]], T)
        g = torch.tensor([(2.0 ** r[0]) - 1.0 for r in q["rows"]])
        enc.append((ids.to(DEV), m.to(DEV), t.to(DEV), (g / g.sum()).to(DEV)))
    for ep in range(epochs):
        order = list(range(len(q_train)))
        rng.shuffle(order)
        ls = []
        for i in range(per):
            b = [enc[j] for j in order[i * bs:(i + 1) * bs]]
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=DEV == "cuda"):
                lg = model(torch.cat([x[0] for x in b]), torch.cat([x[1] for x in b]),
                           torch.cat([x[2] for x in b])).float()
            loss, o = 0.0, 0
            for x in b:
                n = x[0].shape[0]
                loss = loss - (x[3] * F.log_softmax(lg[o:o + n], 0)).sum()
                o += n
            loss = loss / len(b)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(tr, 1.0)
            opt.step(); sch.step()
            ls.append(loss.item())
        snap(f"s2e{ep + 1}", np.mean(ls))


RESULTS = {"logits": {}, "metrics": {}}
SAVE = {}


def run(name, layers, T, e1, e2, lr2):
    torch.manual_seed(SEED)
    model = make(layers)
    best = [None, (-1, -1)]

    def snap(tag, loss=None):
        lg = score_rows(model, T)
        ev = evaluate_dev(lg)
        key = f"{name}/{tag}"
        RESULTS["logits"][key] = lg
        RESULTS["metrics"][key] = {f"{K}|{a}": v for (K, a), v in ev.items()}
        cand = max(((v[0], v[1]), (K, a)) for (K, a), v in ev.items() if 0 < K <= 10)
        log(f"  {key}: loss {loss if loss is None else round(float(loss), 4)}; base {ev[(0, 0.0)]}; "
            f"best K<=10 {cand}; K10 a1 {ev[(10, 1.0)]} K30 a1 {ev[(30, 1.0)]} K30 a1000 {ev[(30, 1e3)]}")
        if cand[0] > best[1]:
            best[1] = cand[0]
            best[0] = {hf: p.detach().float().cpu().numpy().astype(np.float16)
                       for ours, hf in hf_names(layers).items()
                       for pn, p in model.named_parameters() if pn == ours and p.requires_grad}
            best[0]["__tag"] = np.array(tag)
    log(f"== {name}: {layers} layers x {T} tokens, stage1 {e1} epochs, stage2 {e2} epochs lr {lr2}")
    if e1:
        stage1(model, T, e1)
    snap("s1")
    if e2:
        stage2(model, T, e2, lr2, snap)
    SAVE[name] = best[0]
    np.savez(os.path.join(OUT, f"w-{name}.npz"), **best[0])
    log(f"  saved {name} at {best[0]['__tag']} dev {best[1]}")


E1 = 1 if SMOKE else int(os.environ.get("E1", "2"))
E2 = 1 if SMOKE else int(os.environ.get("E2", "6"))
for spec in os.environ.get("RUNS", "L2T96:2:96:5e-5:2,L2T96q:2:96:5e-5:0,L4T96:4:96:5e-5:2,L2T128:2:128:5e-5:2").split(","):
    name, L, T, lr2, e1 = spec.split(":")
    run(name, int(L), int(T), min(E1, int(e1)), E2, float(lr2))
    json.dump(RESULTS, open(os.path.join(OUT, "results.json"), "w"))
log("done")
