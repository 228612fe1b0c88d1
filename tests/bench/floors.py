#!/usr/bin/env python3
"""Chooses each embedding model's match floor (src/embed/mod.rs `match_floor`): the cosine
from which a chunk that shares no word with the query still counts as a match.

Data: the docs-questions dev and train splits only (never test), in semantic mode, top 100
chunks, up to 10 per document. For every judged document (grade >= 1) found there, its best
chunk's cosine; the floor is the 2.5th percentile of those (97.5 % of the answers stay above
it). MiniLM: the English corpora. E5 (multilingual): the Russian corpora, and cross-language
pairs made from the same questions: English fastapi questions over the Russian fastapi docs
(judged pages mapped docs/en/ -> docs/ru/ where the translation exists), and Russian ones over
the English docs built with E5.

Needs the bundles `make bench-quality` caches (under $DOCLOUPE_CACHE/bench-quality) and
builds the English fastapi docs with E5 once (a few minutes). Prints the percentiles;
MiniLM's constant in src/embed/mod.rs is set from its output by hand. E5's percentiles show
why it has none: its answers' 2.5th percentile lies below the median of what is not an
answer (ARCHITECTURE.md, `src/search/fuse.rs`).

    python3 tests/bench/floors.py
"""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("DOCLOUPE_CACHE", os.path.expanduser("~/.cache/docloupe"))
BENCH = os.path.join(CACHE, "bench-quality")
DOCLOUPE = os.path.join(ROOT, "target/release/docloupe")
BUILDER = os.path.join(ROOT, "target/release/index-builder")
QUESTIONS = os.path.join(ROOT, "tests/questions/docs-questions.jsonl")


def bundle(corpus):
    path = os.path.join(BENCH, "docs", corpus, "bundle.bundle")
    if not os.path.exists(path):
        sys.exit(f"{path} is missing: run `make bench-quality` first")
    return path


def e5_bundle(corpus):
    """The corpus built with the multilingual model (for cross-language pairs)."""
    out = os.path.join(BENCH, "floors", corpus + "@e5.bundle")
    if not os.path.exists(out):
        docs = os.path.join(BENCH, "corpora", corpus)  # unpacked by bench-quality
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([BUILDER, "build", docs, "--out", out, "--model", "e5-multilingual", "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
    return out


def best_cosines(bundle_path, questions):
    """The best chunk cosine of every judged document in each question's top 100."""
    lines = "".join(json.dumps({"query": q["question"], "mode": "semantic", "limit": 100,
                                "maxChunksPerDocument": 10, "includeContext": False}) + "\n"
                    for q in questions)
    out = subprocess.run([DOCLOUPE, "search", "--bundle", bundle_path, "--jsonl", "--max-limit", "100",
                          "--match-floor", "0"],
                         input=lines, capture_output=True, text=True, check=True).stdout
    found, missed = [], 0
    for q, line in zip(questions, out.splitlines()):
        best = {}
        for r in json.loads(line)["results"]:
            path = r["documentPath"]
            if q["judgments"].get(path, 0) >= 1:
                best[path] = max(best.get(path, 0.0), r["rankingSignals"]["semantic"])
        found.extend(best.values())
        missed += sum(1 for p, g in q["judgments"].items() if g >= 1 and p not in best)
    return found, missed


def pct(values, p):
    v = sorted(values)
    return v[int(p * (len(v) - 1))]


def report(name, values, missed):
    print(f"{name}: {len(values)} judged documents in the top 100 ({missed} not), best-chunk cosine "
          f"p1 {pct(values, .01):.3f}  p2.5 {pct(values, .025):.3f}  p5 {pct(values, .05):.3f}  "
          f"median {pct(values, .5):.3f}")


def main():
    qs = [json.loads(l) for l in open(QUESTIONS)]
    chosen = [q for q in qs if q["split"] in ("dev", "train")]
    by_corpus = {}
    for q in chosen:
        by_corpus.setdefault(q["corpus"], []).append(q)
    minilm, e5, missed = [], [], {"minilm": 0, "e5": 0}
    for corpus, questions in sorted(by_corpus.items()):
        if not os.path.exists(os.path.join(BENCH, "docs", corpus, "bundle.bundle")):
            print(f"{corpus}: no cached bundle, skipped")
            continue
        values, m = best_cosines(bundle(corpus), questions)
        report(corpus, values, m)
        model = "e5" if corpus.startswith("ru-") else "minilm"
        (e5 if model == "e5" else minilm).extend(values)
        missed[model] += m
    # Cross-language: the fastapi questions over the other language's docs, with E5.
    en_q = by_corpus.get("en-small-fastapi-docs", [])
    ru_q = by_corpus.get("ru-small-fastapi-docs", [])
    ru_docs = bundle("ru-small-fastapi-docs")
    en_docs = e5_bundle("en-small-fastapi-docs")
    def mapped(questions, src, dst):
        out = []
        for q in questions:
            j = {p.replace(src, dst, 1): g for p, g in q["judgments"].items()}
            out.append({**q, "judgments": j})
        return out
    values, m = best_cosines(ru_docs, mapped(en_q, "docs/en/", "docs/ru/"))
    report("en questions -> ru fastapi docs (E5)", values, m)
    e5.extend(values)
    values2, m2 = best_cosines(en_docs, mapped(ru_q, "docs/ru/", "docs/en/"))
    report("ru questions -> en fastapi docs (E5)", values2, m2)
    e5.extend(values2)
    print()
    report("MiniLM (all)", minilm, missed["minilm"])
    report("E5 (all, same- and cross-language)", e5, missed["e5"] + m + m2)


if __name__ == "__main__":
    main()
