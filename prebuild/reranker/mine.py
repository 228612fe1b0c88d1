#!/usr/bin/env python3
"""Mine reranker training groups from real documentation (standard library only).

Usage, from the repository root:
  python3 -m prebuild.reranker.mine OUT.jsonl [--per-corpus N] [--negatives K]

For each markdown set in ../shared/corpora (EN and RU; never ../shared/eval) it
  1. extracts the archive into the cache and builds a fulltext bundle with the release
     `index-builder build --no-embeddings` (the same ingest and chunking as production);
  2. reads every chunk back with `index-builder dump`;
  3. makes queries the way people search docs: page titles and front-matter descriptions
     (positive: the page's first chunk) and section headings (positive: the section's first
     chunk). Headings that repeat across the corpus ("Remarks", "Example", "See also") say
     nothing on their own and are skipped;
  4. mines hard negatives with BM25: the query goes through `docloupe search --jsonl
     --mode fulltext`, and the best chunks of *other* documents become negatives (the top
     ones hard, the rest sampled further down), dropping any with the positive's text or
     heading (near-duplicate pages).

A passage is written exactly as the engine's rerank stage shows it: the whole breadcrumb, a
newline, the chunk text. (A first run dropped the breadcrumb's last element so that a heading
query could not be answered by copying the heading; the positives then shared fewer words with
the query than the BM25-mined negatives, the model learned that overlap means "irrelevant",
and on SciFact train it ranked the fused top 30 far below chance: nDCG@10 0.13.)

Output: one JSON object per line {"corpus", "lang", "kind", "query", "positive",
"negatives": [...]}; a fixed seed makes the file identical on every run.
"""

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPORA = os.path.join(os.path.dirname(ROOT), "shared", "corpora")
BIN = os.path.join(ROOT, "target", "release")
CACHE = os.environ.get("DOCLOUPE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "docloupe")
WORK = os.path.join(CACHE, "reranker", "corpora")
SEED = 20261122

# (archive, queries kept at most): small sets are used whole, large ones sampled so that no
# single corpus dominates the mix.
SETS = [
    ("en-small-rust-book", 3000),
    ("en-small-fastapi-docs", 3000),
    ("ru-small-fastapi-docs", 3000),
    ("ru-small-vue-docs", 3000),
    ("en-medium-powershell-docs", 4000),
    ("en-large-cpp-docs", 5000),
    ("ru-large-cpp-docs-mt", 5000),
]
MIN_WORDS = 12  # a positive shorter than this cannot be told from a negative
MAX_HEADING_REPEATS = 2


def log(msg):
    print(f"mine: {msg}", file=sys.stderr, flush=True)


def prepare(name):
    """Extracts and indexes one corpus; returns its chunks (list of dicts)."""
    base = os.path.join(WORK, name)
    bundle = os.path.join(base, "fulltext.bundle")
    archive = os.path.join(CORPORA, name + ".tar.gz")
    stamp_path = os.path.join(base, "stamp")
    with open(archive, "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest()
    if not (os.path.exists(bundle) and os.path.exists(stamp_path) and open(stamp_path).read() == stamp):
        os.makedirs(base, exist_ok=True)
        docs = os.path.join(base, "docs")
        if not os.path.isdir(docs):
            tmp = docs + ".tmp"
            os.makedirs(tmp, exist_ok=True)
            with tarfile.open(archive) as t:
                t.extractall(tmp, filter="data")
            os.replace(tmp, docs)
        log(f"indexing {name}")
        subprocess.run([os.path.join(BIN, "index-builder"), "build", docs, "--out", bundle,
                        "--no-embeddings", "--quiet"], check=True, stdout=subprocess.DEVNULL)
        with open(stamp_path, "w") as f:
            f.write(stamp)
    out = subprocess.run([os.path.join(BIN, "index-builder"), "dump", bundle],
                         check=True, capture_output=True, text=True).stdout
    return bundle, [json.loads(line) for line in out.splitlines()]


def passage(chunk):
    # As docloupe::index::embedding_input, which the rerank stage uses.
    return " > ".join(chunk["sectionPath"]) + "\n" + chunk["text"]


def words(s):
    return len(s.split())


def queries_for(chunks):
    """(kind, query, positive chunk) candidates of one corpus."""
    heading_count = Counter(c["sectionPath"][-1].strip().lower() for c in chunks if c["sectionPath"])
    by_doc = defaultdict(list)
    for c in chunks:
        by_doc[c["documentPath"]].append(c)
    out = []
    for path in sorted(by_doc):
        doc = sorted(by_doc[path], key=lambda c: c["chunkIndex"])
        first = doc[0]
        if words(first["text"]) >= MIN_WORDS:
            if words(first["title"]) >= 2:
                out.append(("title", first["title"], first))
            desc = first.get("description") or ""
            if 3 <= words(desc) <= 40:
                out.append(("description", desc, first))
        seen = set()
        for c in doc:
            if not c["sectionPath"] or len(c["sectionPath"]) < 2:
                continue
            h = c["sectionPath"][-1].strip()
            key = tuple(c["sectionPath"])
            if key in seen:
                continue  # the section's first chunk only
            seen.add(key)
            if (words(h) >= 2 and heading_count[h.lower()] <= MAX_HEADING_REPEATS
                    and words(c["text"]) >= MIN_WORDS):
                out.append(("heading", h, c))
    return out


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁ])")


def ict_for(chunks, rng, limit):
    """Inverse cloze task (Lee et al., 2019): a sentence of a chunk is the query, the chunk
    without that sentence the positive. Sentence queries look like the questions and claims
    people type, which titles and headings do not."""
    out = []
    pool = [c for c in chunks if words(c["text"]) >= 3 * MIN_WORDS]
    rng.shuffle(pool)
    for c in pool:
        sentences = [s for s in SENTENCE_END.split(c["text"].replace("\n", " ")) if s.strip()]
        if len(sentences) < 3:
            continue
        i = rng.randrange(len(sentences))
        q = sentences[i].strip()
        if not 6 <= words(q) <= 40:
            continue
        rest = " ".join(s.strip() for j, s in enumerate(sentences) if j != i)
        out.append(("sentence", q, dict(c, text=rest)))
        if len(out) >= limit:
            break
    return out


def mine(name, limit, k, rng):
    bundle, chunks = prepare(name)
    cands = queries_for(chunks)
    rng.shuffle(cands)
    cands = cands[:limit]
    cands += ict_for(chunks, rng, len(cands))
    lang = "ru" if name.startswith("ru-") else "en"
    lines = [json.dumps({"query": q[:300], "mode": "fulltext", "limit": 40,
                         "maxChunksPerDocument": 1, "includeContext": False}, ensure_ascii=False)
             for _, q, _ in cands]
    r = subprocess.run([os.path.join(BIN, "docloupe"), "search", "--bundle", bundle, "--jsonl"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    responses = [json.loads(line) for line in r.stdout.splitlines()]
    by_key = {(c["documentPath"], c["chunkIndex"]): c for c in chunks}
    groups = []
    for (kind, q, pos), resp in zip(cands, responses):
        if "results" not in resp:
            continue
        pos_text = pos["text"].strip()
        pool = []
        for res in resp["results"]:
            if res["documentPath"] == pos["documentPath"]:
                continue
            if kind == "sentence" and q in by_key[(res["documentPath"], res["chunkIndex"])]["text"]:
                continue  # the same sentence on a near-duplicate page
            c = by_key[(res["documentPath"], res["chunkIndex"])]
            if c["text"].strip() == pos_text or (c["sectionPath"] and c["sectionPath"][-1].strip().lower() == q.strip().lower()):
                continue
            if words(c["text"]) < MIN_WORDS // 2:
                continue
            pool.append(c)
        if len(pool) < k:
            continue
        hard = pool[: k // 2]
        rest = rng.sample(pool[k // 2:], k - len(hard))
        groups.append({"corpus": name, "lang": lang, "kind": kind, "query": q,
                       "positive": passage(pos), "negatives": [passage(c) for c in hard + rest]})
    log(f"{name}: {len(chunks)} chunks, {len(cands)} queries, {len(groups)} groups")
    return groups


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--negatives", type=int, default=7)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every per-corpus cap")
    args = ap.parse_args(argv)
    rng = random.Random(SEED)
    groups = []
    for name, limit in SETS:
        groups += mine(name, int(limit * args.scale), args.negatives, rng)
    rng.shuffle(groups)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for g in groups:
            f.write(json.dumps(g, ensure_ascii=False) + "\n")
    os.replace(tmp, args.out)
    kinds = Counter((g["lang"], g["kind"]) for g in groups)
    log(f"{len(groups)} groups -> {args.out}; " + ", ".join(f"{a}/{b}: {n}" for (a, b), n in sorted(kinds.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
