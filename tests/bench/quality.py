#!/usr/bin/env python3
"""Quality benchmark: retrieval quality of every search mode on public IR test sets.

Datasets (BEIR layout, read-only under ../shared/eval):
  scifact         5,183 abstracts, 300 test queries (qrels/test.tsv); qrels/train.tsv is used only
                  by `--split train` when comparing fusion methods, never the test split.
  xquad-r/en-paragraph, xquad-r/ru-paragraph   240 paragraphs, 1,190 questions each.

For each dataset the corpus is written out as one markdown file per document (`<_id>.md`: the title
as an H1, then the text) into the cache (never the repo), indexed by the release `index-builder`,
and every query is sent through `docloupe search --jsonl` (one engine, one process, the real batch
mode). Results are chunks; a document's rank is the rank of its first chunk (maxChunksPerDocument=1
makes every result a distinct document). Metrics are computed here, trec_eval style:
Rows: fulltext, semantic, hybrid (fused, no rerank) and hybrid+rerank (the project's reranker
over the fused top candidateLimit=30, the contract's default) on the same bundle and candidates.

  nDCG@10     gain = qrel grade, discount log2(rank + 1), ideal from the qrels
  Recall@100  relevant documents in the top 100 / relevant documents
  MRR@10      1 / rank of the first relevant document within 10
  Hit@3       share of queries with a relevant document in the top 3
and latency p50/p95 from the engine's own `timings.totalMs` per query (single thread).

Usage: python3 tests/bench/quality.py [--split test|train] [--modes m1,m2] [dataset ...]
"""
import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVAL = os.path.join(os.path.dirname(ROOT), "shared", "eval")
BIN = os.path.join(ROOT, "target", "release")
CACHE = os.environ.get("DOCLOUPE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "docloupe")
WORK = os.path.join(CACHE, "bench-quality")
DATASETS = ["scifact", "xquad-r/en-paragraph", "xquad-r/ru-paragraph"]
# (label, request fields); the rerank row is added when a reranker is available.
MODES = {
    "fulltext": {"mode": "fulltext"},
    "semantic": {"mode": "semantic"},
    "hybrid": {"mode": "hybrid", "rerank": False},
    "hybrid+rerank": {"mode": "hybrid", "rerank": True},
}
DEPTH = 100


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path):
    qrels = {}
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, g = line.rstrip("\n").split("\t")
            if int(g) > 0:
                qrels.setdefault(q, {})[d] = int(g)
    return qrels


def prepare(name, rebuild=False):
    """Writes the corpus as markdown and builds its bundle; reuses the bundle while the corpus is
    unchanged (pass --rebuild after changing the builder: relinking alone would not change it)."""
    src = os.path.join(EVAL, name)
    out = os.path.join(WORK, name.replace("/", "_"))
    docs = os.path.join(out, "docs")
    bundle = os.path.join(out, "corpus.bundle")
    h = hashlib.sha256()
    with open(os.path.join(src, "corpus.jsonl"), "rb") as f:
        h.update(f.read())
    stamp = os.path.join(out, "stamp")
    if not rebuild and os.path.exists(bundle) and os.path.exists(stamp) and open(stamp).read() == h.hexdigest():
        return bundle
    os.makedirs(docs, exist_ok=True)
    for doc in read_jsonl(os.path.join(src, "corpus.jsonl")):
        title = doc.get("title", "").strip()
        body = doc["text"].strip()
        text = f"# {title}\n\n{body}\n" if title else f"{body}\n"
        with open(os.path.join(docs, doc["_id"] + ".md"), "w", encoding="utf-8") as f:
            f.write(text)
    t = time.monotonic()
    print(f"  building {name} bundle ...", file=sys.stderr, flush=True)
    r = subprocess.run([os.path.join(BIN, "index-builder"), "build", docs, "--out", bundle, "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"index-builder failed on {name}:\n{r.stderr}")
    info = json.loads(r.stdout)
    print(f"  {info['documentsProcessed']} documents, {info['chunksWritten']} chunks in "
          f"{time.monotonic() - t:.0f} s", file=sys.stderr, flush=True)
    with open(stamp, "w") as f:
        f.write(h.hexdigest())
    return bundle


def search_jsonl(bundle, requests, extra_args):
    """Sends request objects through one `docloupe search --jsonl` process; returns the parsed
    response (or error) objects, in order."""
    lines = [json.dumps(req, ensure_ascii=False) for req in requests]
    r = subprocess.run([os.path.join(BIN, "docloupe"), "search", "--bundle", bundle, "--jsonl", *extra_args],
                       input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"docloupe search --jsonl failed:\n{r.stderr}")
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(out) == len(requests), (len(out), len(requests))
    return out


def run_queries(bundle, queries, fields, extra_args):
    """Sends every query through one `docloupe search --jsonl` process; returns
    (ranked document ids per query, totalMs per query, error count)."""
    requests = [{"query": q["text"], "limit": DEPTH, "maxChunksPerDocument": 1, "includeContext": False, **fields}
                for q in queries]
    out = search_jsonl(bundle, requests, ["--max-limit", str(DEPTH), *extra_args])
    ranked, latency, errors, fallbacks = [], [], 0, 0
    for resp in out:
        if "errorCode" in resp:
            errors += 1
            ranked.append([])
            continue
        fallbacks += bool(resp["fallbackApplied"])
        seen, ids = set(), []
        for res in resp["results"]:
            d = os.path.splitext(os.path.basename(res["documentPath"]))[0]
            if d not in seen:
                seen.add(d)
                ids.append(d)
        ranked.append(ids)
        latency.append(resp["timings"]["totalMs"])
    return ranked, latency, errors, fallbacks


def metrics(ranked, rels):
    ndcg = recall = mrr = hit3 = 0.0
    for ids, rel in zip(ranked, rels):
        dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ids[:10]))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        ndcg += dcg / idcg
        recall += len([d for d in ids[:DEPTH] if d in rel]) / len(rel)
        first = next((i for i, d in enumerate(ids[:10]) if d in rel), None)
        mrr += 0 if first is None else 1 / (first + 1)
        hit3 += any(d in rel for d in ids[:3])
    n = len(ranked)
    return ndcg / n, recall / n, mrr / n, hit3 / n


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="*", default=DATASETS)
    ap.add_argument("--split", default="test", help="qrels split (test, or train for SciFact)")
    ap.add_argument("--modes", help="comma list of " + ", ".join(MODES)
                    + " (default: all; hybrid+rerank only with --reranker)")
    ap.add_argument("--reranker", default=os.path.join(ROOT, "prebuild", "reranker", "model"),
                    help="cross-encoder directory for the hybrid+rerank row (default: the project's own)")
    ap.add_argument("--rerank-weight", help="engine rerank weight override, for comparisons")
    ap.add_argument("--no-reranker", action="store_true", help="skip the hybrid+rerank row")
    ap.add_argument("--fusion", help="engine fusion method override (rrf or weighted), for comparisons")
    ap.add_argument("--max-queries", type=int, help="only the first N queries (quick checks)")
    ap.add_argument("--no-latency", action="store_true", help="skip the rerank latency line")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the bundles")
    ap.add_argument("--json", help="also write the table as JSON to this file")
    args = ap.parse_args()
    extra = ["--fusion", args.fusion] if args.fusion else []
    if args.rerank_weight:
        extra += ["--rerank-weight", args.rerank_weight]
    rerank = not args.no_reranker and os.path.exists(os.path.join(args.reranker, "manifest.json"))
    extra += ["--reranker", args.reranker] if rerank else ["--no-reranker"]
    modes = args.modes or ",".join(m for m in MODES if rerank or m != "hybrid+rerank")
    table = []
    print(f"{'dataset':<22} {'mode':<14} {'nDCG@10':>8} {'R@100':>7} {'MRR@10':>7} {'Hit@3':>6} "
          f"{'p50 ms':>7} {'p95 ms':>7}  notes")
    for name in args.datasets:
        qrels_path = os.path.join(EVAL, name, "qrels", f"{args.split}.tsv")
        if not os.path.exists(qrels_path):
            print(f"{name}: no {args.split} split, skipped", file=sys.stderr)
            continue
        qrels = read_qrels(qrels_path)
        queries = [q for q in read_jsonl(os.path.join(EVAL, name, "queries.jsonl")) if q["_id"] in qrels]
        queries = queries[:args.max_queries] if args.max_queries else queries
        bundle = prepare(name, args.rebuild)
        rels = [qrels[q["_id"]] for q in queries]
        for label in modes.split(","):
            ranked, latency, errors, fallbacks = run_queries(bundle, queries, MODES[label], extra)
            ndcg, recall, mrr, hit3 = metrics(ranked, rels)
            notes = []
            if errors:
                notes.append(f"{errors} errors")
            if fallbacks:
                notes.append(f"{fallbacks} fallbacks")
            row = dict(dataset=name, split=args.split, mode=label, queries=len(queries), ndcg10=ndcg,
                       recall100=recall, mrr10=mrr, hit3=hit3, p50_ms=percentile(latency, 0.5),
                       p95_ms=percentile(latency, 0.95), errors=errors, fallbacks=fallbacks)
            table.append(row)
            print(f"{name:<22} {label:<14} {ndcg:8.4f} {recall:7.4f} {mrr:7.4f} {hit3:6.3f} "
                  f"{row['p50_ms']:7.1f} {row['p95_ms']:7.1f}  {', '.join(notes)}", flush=True)
    if rerank and not args.no_latency:
        # The rerank stage alone, at the size the issue budgets: 20 candidates per query,
        # one thread, timed by the engine (timings.rerankMs), on the first dataset's queries.
        name = args.datasets[0]
        queries = read_jsonl(os.path.join(EVAL, name, "queries.jsonl"))[:200]
        requests = [{"query": q["text"], "limit": 20, "candidateLimit": 20, "includeContext": False}
                    for q in queries]
        ms = [resp["timings"]["rerankMs"]
              for resp in search_jsonl(prepare(name), requests, ["--rerank-budget-ms", "60000", *extra])]
        print(f"rerank stage, 20 candidates, {len(ms)} {name} queries, native 1 thread: "
              f"p50 {percentile(ms, 0.5):.1f} ms, p95 {percentile(ms, 0.95):.1f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
