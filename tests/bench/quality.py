#!/usr/bin/env python3
"""Quality benchmark: retrieval quality and latency of every search mode, in one run.

Datasets:
  docs:<corpus>   the project's own developer questions (tests/questions/docs-questions.jsonl:
                  graded judgments, dev/test split by question) over real documentation sets
                  from ../shared/corpora: en-small-fastapi-docs, en-small-rust-book,
                  en-medium-powershell-docs, ru-small-fastapi-docs, ru-small-vue-docs.
  docs-html:<corpus>   the same questions over the corpus rendered to HTML by MkDocs (Material,
                  `use_directory_urls: false`; rendered once into the cache, built with
                  `--formats html`); a judged a/b.md is a/b.html, a/index.md and a/README.md
                  a/index.html. On request only (it needs MkDocs: the recipes' tools, or
                  $DOCLOUPE_MKDOCS); `docs-html` = every corpus.
  tuning:<corpus> the questions written to tune the query tower (prebuild/tuning/questions: 220
                  to 720 per English corpus, one answering page each, any --split). A fair
                  measure only of a tower that was never tuned on the corpus (a leave-one-corpus-
                  out fold, `--search-args "--models DIR"`), so on request only.
  titles:<corpus> generated: the exact title of 60 pages per corpus (every page with that exact
                  title is relevant), split dev/test by a hash of the path. A page's title must
                  bring the page itself.
  scifact         BEIR SciFact, 5,183 abstracts, 300 test queries (qrels/test.tsv); `--split
                  dev` reads qrels/train.tsv (809 queries), which is what weights are chosen on.
  xquad-r/en-paragraph, xquad-r/ru-paragraph   240 paragraphs, 1,190 questions each (no
                  split: regression checks only, never used to choose anything).
  xquad-x:ru-en, xquad-x:en-ru   cross-language XQuAD-R: Russian questions over the English
                  paragraphs and the other way round (shared ids), multilingual E5.
  docs-x:ru-en, docs-x:en-ru   cross-language developer questions: the FastAPI questions of
                  one language over the other language's FastAPI docs (the same pages under
                  docs/ru/ and docs/en/; judgments follow the path, pages the other side lacks
                  are dropped), multilingual E5; split as the questions. Unlike xquad-x it has a
                  dev split, so cross-language behaviour can be chosen on.
  typos:<corpus>/<exact|edit1|edit2|prefix>   generated from 60 page titles per corpus: the
                  title, with one or two random edits in its longest word, or with its last
                  word cut to 4 characters; notes give top-5 hit and how often the first
                  of the response's `suggestions` is the title (and among the first three,
                  and any suggestion at all: on `exact`, a false correction).
  NAME@MODEL      the same set built with `--model MODEL` (e5, minilm); plain names use auto.

The datasets, their bundles, the search and the metrics are in prebuild/evaluation.py, which the
learned ranker's trainer shares. Each corpus is indexed by the release `index-builder` into the
cache (never the repo), and every query goes through one `docloupe search --jsonl` process per
mode (the real batch mode). Results are chunks; a document's rank is that of its first chunk
(maxChunksPerDocument=1 makes every result a distinct document). Rows: fulltext, semantic,
hybrid (fused, no second stage) and hybrid+rerank (the default pipeline: the learned second
stage over the fused top candidateLimit), each model-backed one also with `:docs` (questions
embedded by the docs-tuned query tower instead of the base model, `--query-model docs`);
hybrid+xenc (the project's cross-encoder as the second stage) on request.

Metrics, at document level:
  Top3      share of queries with an answering document (grade 2; any relevant one for the
            BEIR sets) in the first 3
  P@5       relevant documents (grade >= 1) among the first 5, / 5
  MRR@10    1 / rank of the first answering document within 10
  nDCG@10   gain = grade, discount log2(rank + 1), ideal from the judgments
  R@100     relevant documents in the first 100 / relevant documents
and each stage's latency from the engine's own timings (embed, retrieve, rerank, total;
p50/p95 over the queries, one query at a time, one thread).

Usage, from the repository root (`make bench-quality`):
  python3 -m tests.bench.quality [--split test|dev] [--modes m1,m2] [dataset ...]
  (no dataset: all of them but docs-html; `docs` = every docs set, `titles` = every titles set)
"""
import argparse
import json
import math
import os

from prebuild.evaluation import (  # the datasets, bundles, search and metrics (shared with prebuild)
    DEPTH,
    DOCS_CORPORA,
    ROOT,
    dataset,
    doc_key,
    log,
    metrics,
    search_jsonl,
)

BEIR = ["scifact", "xquad-r/en-paragraph", "xquad-r/ru-paragraph"]
TYPO_CORPORA = DOCS_CORPORA
TYPOS = [f"typos:{c}/{v}" for c in TYPO_CORPORA for v in ("exact", "edit1", "edit2", "prefix")]
# Each model on the sets that tell them apart (the plain names use `--model auto`).
PER_MODEL = ["scifact@e5", "xquad-r/en-paragraph@e5", "xquad-r/ru-paragraph@minilm", "xquad-x:ru-en", "xquad-x:en-ru",
             "docs-x:ru-en", "docs-x:en-ru"]
DATASETS = ([f"docs:{c}" for c in DOCS_CORPORA] + [f"titles:{c}" for c in DOCS_CORPORA] + BEIR + TYPOS
            + PER_MODEL)
MODES = {
    "fulltext": {"mode": "fulltext"},
    "semantic": {"mode": "semantic"},
    "hybrid": {"mode": "hybrid", "rerank": False},
    "hybrid+rerank": {"mode": "hybrid", "rerank": True},
    # The optional second stage: the project's cross-encoder instead of the learned ranker.
    "hybrid+xenc": {"mode": "hybrid", "rerank": True},
    # The questions embedded by the docs-tuned query tower instead of the base model (MiniLM;
    # a model without a tower answers as in the rows above).
    "semantic:docs": {"mode": "semantic"},
    "hybrid:docs": {"mode": "hybrid", "rerank": False},
    "hybrid+rerank:docs": {"mode": "hybrid", "rerank": True},
}
# Extra `docloupe search` arguments per row.
TOWER = ["--query-model", "docs"]
MODE_ARGS = {
    "hybrid+xenc": ["--reranker", os.path.join(ROOT, "prebuild", "reranker", "model"), "--rerank-budget-ms", "60000"],
    "semantic:docs": TOWER,
    "hybrid:docs": TOWER,
    "hybrid+rerank:docs": TOWER,
}
DEFAULT_MODES = "fulltext,semantic,hybrid,hybrid+rerank,semantic:docs,hybrid:docs,hybrid+rerank:docs"


def run_queries(bundle, queries, fields, extra_args, beir):
    """(ranked document keys per query, timings per query, errors, fallbacks, the response's
    `suggestions` per query)"""
    requests = [{"query": q["text"], "limit": DEPTH, "maxChunksPerDocument": 1, "includeContext": False, **fields}
                for q in queries]
    out = search_jsonl(bundle, requests, ["--max-limit", str(DEPTH), *extra_args])
    ranked, timings, errors, fallbacks, suggestions = [], [], 0, 0, []
    for resp in out:
        suggestions.append(resp.get("suggestions") or [])
        if "errorCode" in resp:
            errors += 1
            ranked.append([])
            continue
        fallbacks += bool(resp["fallbackApplied"])
        seen, ids = set(), []
        for res in resp["results"]:
            d = doc_key(res["documentPath"], beir)
            if d not in seen:
                seen.add(d)
                ids.append(d)
        ranked.append(ids)
        timings.append(resp["timings"])
    return ranked, timings, errors, fallbacks, suggestions


def suggestion_metrics(queries, suggestions, titles):
    """For typo sets: the share of queries whose first suggestion is the page's title (case and
    spacing aside), whose suggestions hold it among the first three, and that got any
    suggestion at all (on `exact` titles that is the false-correction rate)."""
    norm = lambda s: " ".join(s.lower().split())
    first = among3 = some = 0
    for q, sugg, title in zip(queries, suggestions, titles):
        sugg = [norm(s) for s in sugg]
        first += bool(sugg) and sugg[0] == norm(title)
        among3 += norm(title) in sugg[:3]
        some += bool(sugg)
    n = max(len(queries), 1)
    return dict(suggestTitle=first / n, suggestTitle3=among3 / n, suggested=some / n)


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def expand(names):
    out = []
    for n in names:
        if n in ("docs", "docs-html", "titles"):
            out += [f"{n}:{c}" for c in DOCS_CORPORA]
        elif n == "typos":
            out += TYPOS
        elif n == "models":
            out += PER_MODEL
        else:
            out.append(n)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="*", default=DATASETS)
    ap.add_argument("--split", default="test", choices=["test", "dev", "train"],
                    help="test (reported), dev (what settings and models are chosen on; SciFact "
                         "train) or train (what the learned ranker is fitted on)")
    ap.add_argument("--modes", help="comma list of " + ", ".join(MODES) + f" (default: {DEFAULT_MODES})")
    ap.add_argument("--search-args", default="", help="extra `docloupe search` arguments, for comparisons")
    ap.add_argument("--build-args", default="", help="extra `index-builder build` arguments (e.g. --model DIR)")
    ap.add_argument("--max-queries", type=int, help="only the first N queries per dataset (quick checks)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the bundles")
    ap.add_argument("--json", help="also write the table as JSON to this file")
    ap.add_argument("--runs", help="write every ranking as JSON lines to this file (for analysis)")
    args = ap.parse_args()
    extra = args.search_args.split()
    extra_build = args.build_args.split()
    modes = (args.modes or DEFAULT_MODES).split(",")
    table, runs = [], []
    print(f"split: {args.split}   search args: {' '.join(extra) or '-'}   build args: {' '.join(extra_build) or '-'}")
    print(f"{'dataset':<36} {'mode':<18} {'n':>4} {'Top3':>6} {'P@5':>6} {'MRR@10':>6} {'nDCG@10':>7} {'R@100':>6}"
          f"  {'embed':>11} {'retrieve':>11} {'rerank':>11} {'total':>11}  (ms p50/p95)")
    groups = {}
    for name in expand(args.datasets):
        bundle, queries, lang = dataset(name, args.split, extra_build, args.rebuild)
        if not queries:
            log(f"{name}: no {args.split} queries, skipped")
            continue
        queries = queries[:args.max_queries] if args.max_queries else queries
        beir = not name.startswith(("docs:", "docs-html:", "docs-x:", "titles:", "typos:", "tuning:"))
        answer_grade = 1 if beir else 2
        # Typo queries are judged by top-5 hit (the column says Top3 elsewhere).
        typos = name.startswith("typos:")
        rels = [q["rels"] for q in queries]
        for label in modes:
            ranked, timings, errors, fallbacks, suggestions = run_queries(bundle, queries, MODES[label],
                                                                          extra + MODE_ARGS.get(label, []), beir)
            m = metrics(ranked, rels, answer_grade)
            if typos:
                m["top5"] = sum(any(d in rel for d in ids[:5]) for ids, rel in zip(ranked, rels)) / len(ranked)
                m.update(suggestion_metrics(queries, suggestions, [q["title"] for q in queries]))
            stage = {k: (percentile([t[k] for t in timings], 0.5), percentile([t[k] for t in timings], 0.95))
                     for k in ("embedMs", "retrieveMs", "rerankMs", "totalMs")}
            notes = ([f"{errors} errors"] if errors else []) + ([f"{fallbacks} fallbacks"] if fallbacks else [])
            row = dict(dataset=name, lang=lang, split=args.split, mode=label, queries=len(queries), **m,
                       latency={k: {"p50": v[0], "p95": v[1]} for k, v in stage.items()},
                       errors=errors, fallbacks=fallbacks)
            table.append(row)
            if name.startswith(("docs:", "docs-html:", "titles:")):
                g = groups.setdefault((name.split(":")[0], lang, label), [])
                g.append((len(queries), m))
            if typos:
                notes.append(f"top-5 hit {m['top5']:.3f}, suggestion = title {m['suggestTitle']:.3f} "
                             f"(in 3: {m['suggestTitle3']:.3f}), any suggestion {m['suggested']:.3f}")
            runs += [dict(dataset=name, mode=label, id=q["id"], text=q["text"], rels=sorted(q["rels"]), ranked=r[:20])
                     for q, r in zip(queries, ranked)]
            lat = "  ".join(f"{v[0]:5.1f}/{v[1]:5.1f}" for v in stage.values())
            print(f"{name:<36} {label:<18} {len(queries):>4} {m['top3']:6.3f} {m['p5']:6.3f} {m['mrr10']:6.3f} "
                  f"{m['ndcg10']:7.4f} {m['recall100']:6.3f}  {lat}  {', '.join(notes)}", flush=True)
    # Query-weighted means over the docs and titles sets, per language and in all.
    if groups:
        print()
        for key in sorted(groups, key=lambda k: (k[0], k[1], list(MODES).index(k[2]))):
            parts = groups[key]
            n = sum(p[0] for p in parts)
            mean = {k: sum(p[0] * p[1][k] for p in parts) / n for k in ("top3", "p5", "mrr10", "ndcg10", "recall100")}
            label = f"{key[0]} (all {key[1]})"
            table.append(dict(dataset=label, lang=key[1], split=args.split, mode=key[2], queries=n, **mean))
            print(f"{label:<36} {key[2]:<18} {n:>4} {mean['top3']:6.3f} {mean['p5']:6.3f} {mean['mrr10']:6.3f} "
                  f"{mean['ndcg10']:7.4f} {mean['recall100']:6.3f}")
        for kind in ("docs", "docs-html", "titles"):
            for label in modes:
                parts = [p for k, v in groups.items() if k[0] == kind and k[2] == label for p in v]
                if not parts:
                    continue
                n = sum(p[0] for p in parts)
                mean = {k: sum(p[0] * p[1][k] for p in parts) / n for k in ("top3", "p5", "mrr10", "ndcg10", "recall100")}
                table.append(dict(dataset=f"{kind} (all)", lang="*", split=args.split, mode=label, queries=n, **mean))
                print(f"{kind + ' (all)':<36} {label:<18} {n:>4} {mean['top3']:6.3f} {mean['p5']:6.3f} "
                      f"{mean['mrr10']:6.3f} {mean['ndcg10']:7.4f} {mean['recall100']:6.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    if args.runs:
        with open(args.runs, "w") as f:
            for r in runs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
