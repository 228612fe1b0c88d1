#!/usr/bin/env python3
"""Training groups for the docs-tuned bi-encoders (issue 64), standard library only.

Usage, from the repository root:
  python3 -m prebuild.tuning.pairs OUT.jsonl [--negatives 7] [--mined-scale 0.5]

Each group is {"corpus", "lang", "kind", "query", "positive", "negatives": [...]}, the
passages written as the builder embeds a chunk (breadcrumb " > " joined, a newline, the text),
from three sources over the shared corpora (each indexed by the release `index-builder`, the
production chunking, through prebuild/reranker/mine.py's `prepare`):
  1. `written`: the questions of prebuild/tuning/questions, each with the first chunk of the
     section that answers it (the page's first chunk for the lead text);
  2. `title`, `description`, `heading`, `sentence`: what mine.py mines (titles, descriptions
     and distinctive headings → their chunk; a sentence → its chunk without it);
  3. `cross`: the parallel sets (FastAPI docs/en ↔ docs/ru, cpp-docs en ↔ its ru translation):
     a section's heading in one language → the same section's chunk in the other, aligned by
     page path and heading order.
Hard negatives come from BM25 over the same corpus (`docloupe search --jsonl --mode fulltext`):
the best chunks of other pages, the top half hard, the rest sampled further down; a chunk with
the positive's text is never a negative. A fixed seed makes the file the same on every run.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter, defaultdict

from ..reranker import mine

HERE = os.path.dirname(os.path.abspath(__file__))
QUESTIONS = os.path.join(HERE, "questions")
SEED = 20261207
CORPORA = [
    "en-small-rust-book",
    "en-small-fastapi-docs",
    "ru-small-fastapi-docs",
    "ru-small-vue-docs",
    "en-medium-powershell-docs",
    "en-large-cpp-docs",
    "ru-large-cpp-docs-mt",
]
PARALLEL = [("en-small-fastapi-docs", "ru-small-fastapi-docs"), ("en-large-cpp-docs", "ru-large-cpp-docs-mt")]


def log(msg):
    print(f"pairs: {msg}", file=sys.stderr, flush=True)


def norm(s):
    """A heading as compared: no markdown emphasis or code marks, no anchors, one space."""
    s = re.sub(r"<a [^>]*>\s*</a>", "", s)
    s = re.sub(r"\{\s*#[^}]*\}", "", s)
    s = re.sub(r"[`*_\\]", "", s)
    return " ".join(s.split()).lower()


def inner(path):
    """A dumped document path without the archive's own folder (as questions name pages)."""
    return path.split("/", 1)[1] if "/" in path else path


def parallel_key(path):
    """Where a page's translation sits: FastAPI keeps each language under docs/<lang>/."""
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "docs" and parts[1] in ("en", "ru"):
        parts[1] = "*"
    return "/".join(parts)


def section_starts(chunks):
    """Per page (its inner path): [(normalized heading, first chunk)], in page order."""
    by_doc = defaultdict(list)
    for c in chunks:
        by_doc[inner(c["documentPath"])].append(c)
    out = {}
    for path, doc in by_doc.items():
        doc.sort(key=lambda c: c["chunkIndex"])
        seen, starts = set(), []
        for c in doc:
            key = tuple(c["sectionPath"])
            if key in seen:
                continue
            seen.add(key)
            head = c["sectionPath"][-1] if len(c["sectionPath"]) > 1 else ""
            starts.append((norm(head), c))
        out[path] = starts
    return out


def written(name, starts):
    """(kind, query, positive) of the written questions of corpus `name`."""
    out, missing = [], 0
    for f in sorted(os.listdir(QUESTIONS)):
        if not (f.startswith(name + "-") and f.endswith(".jsonl")):
            continue
        for line in open(os.path.join(QUESTIONS, f), encoding="utf-8"):
            q = json.loads(line)
            page = starts.get(q["path"])
            if not page:
                missing += 1
                continue
            want = norm(q["heading"])
            hit = next((c for h, c in page if h == want), None) if want else page[0][1]
            if hit is None:
                hit = next((c for h, c in page if want and (want in h or h in want) and h), None)
            if hit is None:
                missing += 1
                continue
            out.append(("written", q["question"], hit))
    if missing:
        log(f"{name}: {missing} written questions without their section in the index")
    return out


def cross(en_name, ru_name, en_starts, ru_starts, rng, limit):
    """Headings of one language → the parallel section in the other (both directions)."""
    pairs = []
    en_starts = {parallel_key(p): v for p, v in en_starts.items()}
    ru_starts = {parallel_key(p): v for p, v in ru_starts.items()}
    for path in sorted(set(en_starts) & set(ru_starts)):
        a, b = en_starts[path], ru_starts[path]
        if len(a) != len(b) or len(a) < 2:
            continue  # sections not aligned one to one: leave the page out
        for (ha, ca), (hb, cb) in list(zip(a, b))[1:]:
            if len(ha.split()) >= 2 and len(mine.passage(cb).split()) >= mine.MIN_WORDS:
                pairs.append((en_name, ru_name, ca["sectionPath"][-1], cb))
            if len(hb.split()) >= 2 and len(mine.passage(ca).split()) >= mine.MIN_WORDS:
                pairs.append((ru_name, en_name, cb["sectionPath"][-1], ca))
    rng.shuffle(pairs)
    return pairs[:limit]


def groups_for(name, cands, bundle, chunks, k, rng):
    """Hard negatives for (kind, query, positive) candidates, from BM25 over `bundle`."""
    lang = "ru" if name.startswith("ru-") else "en"
    lines = [json.dumps({"query": q[:300], "mode": "fulltext", "limit": 40, "maxChunksPerDocument": 1,
                         "includeContext": False}, ensure_ascii=False) for _, q, _ in cands]
    r = subprocess.run([os.path.join(mine.BIN, "docloupe"), "search", "--bundle", bundle, "--jsonl"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    responses = [json.loads(line) for line in r.stdout.splitlines()]
    by_key = {(c["documentPath"], c["chunkIndex"]): c for c in chunks}
    out = []
    for (kind, q, pos), resp in zip(cands, responses):
        pool = []
        for res in resp.get("results", []):
            c = by_key[(res["documentPath"], res["chunkIndex"])]
            if c["documentPath"] == pos["documentPath"] or c["text"].strip() == pos["text"].strip():
                continue
            if len(c["text"].split()) < mine.MIN_WORDS // 2:
                continue
            pool.append(c)
        if len(pool) < k:
            # Too few lexical neighbours (a question sharing no word with the corpus): random
            # chunks of other pages fill the group.
            others = [c for c in rng.sample(chunks, min(len(chunks), 4 * k))
                      if c["documentPath"] != pos["documentPath"]]
            pool += others[: k - len(pool)]
        hard = pool[: k // 2]
        rest = rng.sample(pool[k // 2:], k - len(hard)) if len(pool) - k // 2 >= k - len(hard) else pool[k // 2:k]
        out.append({"corpus": name, "lang": lang, "kind": kind, "query": q,
                    "positive": mine.passage(pos), "negatives": [mine.passage(c) for c in hard + rest]})
    return out


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--negatives", type=int, default=7)
    ap.add_argument("--mined-scale", type=float, default=0.5, help="share of mine.py's caps kept")
    ap.add_argument("--cross", type=int, default=2000, help="cross-language pairs per parallel set")
    args = ap.parse_args(argv)
    rng = random.Random(SEED)
    caps = dict(mine.SETS)
    indexed, starts = {}, {}
    for name in CORPORA:
        bundle, chunks = mine.prepare(name)
        indexed[name] = (bundle, chunks)
        starts[name] = section_starts(chunks)
    groups = []
    for name in CORPORA:
        bundle, chunks = indexed[name]
        cands = written(name, starts[name])
        mined = mine.queries_for(chunks)
        rng.shuffle(mined)
        mined = mined[: int(caps[name] * args.mined_scale)]
        mined += mine.ict_for(chunks, rng, len(mined) // 2)
        cands += mined
        made = groups_for(name, cands, bundle, chunks, args.negatives, rng)
        log(f"{name}: {len(chunks)} chunks, {len(made)} groups")
        groups += made
    for en, ru in PARALLEL:
        pairs = cross(en, ru, starts[en], starts[ru], rng, args.cross)
        for src, dst in ((en, ru), (ru, en)):
            cands = [("cross", q, pos) for s, d, q, pos in pairs if s == src and d == dst]
            bundle, chunks = indexed[dst]
            made = groups_for(dst, cands, bundle, chunks, args.negatives, rng)
            for g in made:
                g["lang"] = "ru" if src.startswith("ru-") else "en"
                g["kind"] = f"cross-{'ru' if dst.startswith('ru-') else 'en'}"
            log(f"{src} → {dst}: {len(made)} cross-language groups")
            groups += made
    rng.shuffle(groups)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for g in groups:
            f.write(json.dumps(g, ensure_ascii=False) + "\n")
    os.replace(tmp, args.out)
    kinds = Counter((g["corpus"], g["kind"]) for g in groups)
    log(f"{len(groups)} groups -> {args.out}")
    for (c, kind), n in sorted(kinds.items()):
        log(f"  {c} {kind}: {n}")


if __name__ == "__main__":
    main(sys.argv[1:])
