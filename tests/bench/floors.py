#!/usr/bin/env python3
"""Chooses each embedding model's match rule (src/embed/mod.rs `match_rule`): when a chunk that
shares no word with the query still counts as a match — its cosine at least a floor, or at
most some distance below the query's best cosine.

Data: the docs-questions dev and train splits only (never test), in semantic mode, top 100
chunks, up to 10 per document. For every judged document (grade >= 1) found there, its best
chunk's cosine, and its gap to the query's best cosine; the floor is the 2.5th percentile of
the cosines, the relative rule the 97.5th percentile of the gaps (97.5 % of the answers pass
either way). Also printed: the median non-answer, which a floor must stay below to be worth
anything, and the share of non-answers each rule keeps. MiniLM: the English corpora. E5 (multilingual): the Russian corpora, and cross-language
pairs made from the same questions: English fastapi questions over the Russian fastapi docs
(judged pages mapped docs/en/ -> docs/ru/ where the translation exists), and Russian ones over
the English docs built with E5.

Needs the bundles `make bench-quality` caches (under $DOCLOUPE_CACHE/bench-quality) and
builds the English fastapi docs with E5 once (a few minutes). Prints the percentiles; the
constants in src/embed/mod.rs are set from its output by hand: MiniLM a floor, E5 the
relative rule (its answers' 2.5th percentile lies below the median non-answer, so no floor
separates them; docs/measurements/2026-11-26-fusion-and-match-rules.md).

    python3 -m tests.bench.floors      (from the repository root)

MiniLM's docs-tuned query tower (`--query-model docs`) puts questions elsewhere than the base
model does, so its floor is measured on its own, beside the base model's on the same questions:
each corpus searched with a tower that was *not* trained on it (a leave-one-corpus-out fold of
`prebuild/tuning/query.py`, a model directory from `prebuild.tuning.export --model-dir`), since
a tower's cosines on pages it was tuned on run higher than on a user's unseen site (measured:
the same 2.5th percentile as the base model's, so MiniLM keeps one floor):

    python3 -m tests.bench.floors --tower en-small-rust-book=DIR --tower en-small-fastapi-docs=DIR
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("DOCLOUPE_CACHE", os.path.expanduser("~/.cache/docloupe"))
BENCH = os.path.join(CACHE, "bench-quality")
# The calibration build (`make calibration`): the release binary has no --max-limit or --match-floor.
DOCLOUPE = os.path.join(ROOT, "target/calibration/release/docloupe")
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


def best_cosines(bundle_path, questions, stats=None, models=None):
    """The best chunk cosine of every judged document in each question's top 100; with
    `stats` (a dict), also its gap to the question's best cosine, and the non-answers'
    cosines and gaps."""
    lines = "".join(json.dumps({"query": q["question"], "mode": "semantic", "limit": 100,
                                "maxChunksPerDocument": 10, "includeContext": False}) + "\n"
                    for q in questions)
    out = subprocess.run([DOCLOUPE, "search", "--bundle", bundle_path, "--jsonl", "--max-limit", "100",
                          "--match-floor", "0"]
                         + (["--models", models, "--query-model", "docs"] if models else []),
                         input=lines, capture_output=True, text=True, check=True).stdout
    found, missed = [], 0
    for q, line in zip(questions, out.splitlines()):
        best = {}
        results = json.loads(line)["results"]
        top = results[0]["rankingSignals"]["semantic"] if results else 0.0
        for r in results:
            path, cos = r["documentPath"], r["rankingSignals"]["semantic"]
            if q["judgments"].get(path, 0) >= 1:
                best[path] = max(best.get(path, 0.0), cos)
            elif stats is not None:
                stats.setdefault("non", []).append(cos)
                stats.setdefault("non_gap", []).append(top - cos)
        found.extend(best.values())
        if stats is not None:
            stats.setdefault("gap", []).extend(top - c for c in best.values())
        missed += sum(1 for p, g in q["judgments"].items() if g >= 1 and p not in best)
    return found, missed


def pct(values, p):
    v = sorted(values)
    return v[int(p * (len(v) - 1))]


def report(name, values, missed):
    print(f"{name}: {len(values)} judged documents in the top 100 ({missed} not), best-chunk cosine "
          f"p1 {pct(values, .01):.3f}  p2.5 {pct(values, .025):.3f}  p5 {pct(values, .05):.3f}  "
          f"median {pct(values, .5):.3f}")


def main(argv):
    qs = [json.loads(l) for l in open(QUESTIONS)]
    chosen = [q for q in qs if q["split"] in ("dev", "train")]
    by_corpus = {}
    for q in chosen:
        by_corpus.setdefault(q["corpus"], []).append(q)
    ap = argparse.ArgumentParser()
    ap.add_argument("--tower", action="append", default=[], metavar="CORPUS=DIR",
                    help="the query tower's floor instead, from this corpus searched with this model directory")
    towers = dict(t.split("=", 1) for t in ap.parse_args(argv).tower)
    if towers:
        return tower_floor(by_corpus, towers)
    minilm, e5, missed = [], [], {"minilm": 0, "e5": 0}
    stats = {"minilm": {}, "e5": {}}
    for corpus, questions in sorted(by_corpus.items()):
        if not os.path.exists(os.path.join(BENCH, "docs", corpus, "bundle.bundle")):
            print(f"{corpus}: no cached bundle, skipped")
            continue
        model = "e5" if corpus.startswith("ru-") else "minilm"
        values, m = best_cosines(bundle(corpus), questions, stats[model])
        report(corpus, values, m)
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
    values, m = best_cosines(ru_docs, mapped(en_q, "docs/en/", "docs/ru/"), stats["e5"])
    report("en questions -> ru fastapi docs (E5)", values, m)
    e5.extend(values)
    values2, m2 = best_cosines(en_docs, mapped(ru_q, "docs/ru/", "docs/en/"), stats["e5"])
    report("ru questions -> en fastapi docs (E5)", values2, m2)
    e5.extend(values2)
    print()
    report("MiniLM (all)", minilm, missed["minilm"])
    report("E5 (all, same- and cross-language)", e5, missed["e5"] + m + m2)
    print()
    for model, st in stats.items():
        floor, gap = pct(minilm if model == "minilm" else e5, .025), pct(st["gap"], .975)
        kept_floor = sum(c >= floor for c in st["non"]) / len(st["non"])
        kept_gap = sum(g <= gap for g in st["non_gap"]) / len(st["non_gap"])
        print(f"{model}: floor {floor:.3f} (non-answers' median {pct(st['non'], .5):.3f}; it keeps "
              f"{kept_floor:.0%} of them) | within {gap:.3f} of the best (keeps {kept_gap:.0%} of them)")


def tower_floor(by_corpus, towers):
    """The query tower's floor, each corpus with its own held-out tower, and the base model's
    on the same MiniLM bundles and questions."""
    for label, use_tower in (("base model", False), ("query tower", True)):
        found, missed, stats = [], 0, {}
        for corpus, models in sorted(towers.items()):
            values, m = best_cosines(bundle(corpus), by_corpus[corpus], stats, models if use_tower else None)
            report(f"{corpus} ({label})", values, m)
            found.extend(values)
            missed += m
        report(f"{label} (all)", found, missed)
        floor = pct(found, .025)
        kept = sum(c >= floor for c in stats["non"]) / len(stats["non"])
        print(f"{label}: floor {floor:.3f} (non-answers' median {pct(stats['non'], .5):.3f}; "
              f"it keeps {kept:.0%} of them)\n")


if __name__ == "__main__":
    main(sys.argv[1:])
