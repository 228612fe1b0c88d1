#!/usr/bin/env python3
"""Trains the learned second stage (src/search/ranker.json): gradient-boosted trees over the
features `src/search/rank.rs` computes for each candidate of the fused pool.

Usage, from the repository root:
  python -m prebuild.ranker.train [--out src/search/ranker.json] [--grid] [--trees N] ...
(run by `make ranker`; needs the release binaries, the embedding model and LightGBM from PyPI)

Data (no test split is ever read):
  * fitted on the train split of tests/questions/docs-questions.jsonl (250 developer questions
    over five documentation sets of ../shared/corpora, graded 2 = answers, 1 = related), and
    with --scifact BEIR SciFact's train qrels too;
  * settings chosen on its dev split (--grid prints dev top-3 for a few; --cv K scores them by
    K-fold cross-validation over the train and dev questions together, a less noisy reading);
  * with --typos W, also the typo and prefix forms of PowerShell-Docs page titles that no dev or
    test query is made from (the typos train split of prebuild/evaluation.py), each at weight W.
For every query the release `docloupe search --jsonl --explain-features` answers a hybrid,
reranked request over the fused top CANDIDATES (what the engine's second stage sees: with copies
of a page riding along, one chunk a page unless --max-chunks says otherwise); each result
carries its feature row, labelled with its document's grade. The bundles are the ones
`make bench-quality` builds (same cache).

Model: LightGBM lambdarank, shallow trees with many rows per leaf so that a few hundred
queries do not make it memorize; one thread, fixed seed, so a re-run writes the same file.
"""
import argparse
import json
import math
import os
import sys

from .. import evaluation  # the quality benchmark's datasets, bundles and `docloupe search --jsonl`

ROOT = evaluation.ROOT

CANDIDATES = 30
# The engine's pool holds CANDIDATES pages and up to 4 copies per candidate beside them
# (rank.rs `pool_len`, COPIES_PER_CANDIDATE): results beyond it carry no features.
POOL_MAX = CANDIDATES * 5
# Chunks a page may have in the pool: 1, the pool `make bench-quality` measures (30 distinct
# pages, each by its best chunk), so that `--grid`'s dev top-3 is the engine's, query for query,
# and the model is fitted on what it is judged on (the model judges pages; within a page the
# first stage orders the chunks). `--max-chunks 3` gives the contract's default pool.
MAX_CHUNKS = 1


def feature_names():
    """The engine's feature names (`FEATURES` in src/search/rank.rs), in order."""
    import re
    src = open(os.path.join(ROOT, "src", "search", "rank.rs"), encoding="utf-8").read()
    block = re.search(r"pub const FEATURES: \[&str; \d+\] = \[(.*?)\];", src, re.S).group(1)
    return re.findall(r'"([^"]+)"', block)


def collect(name, split, search_args, max_chunks=MAX_CHUNKS, text_chars=0):
    """Feature rows of one dataset: [(query id, rels, [(label, doc, row, copy key)])]; with
    `text_chars`, each row also ends with what a cross-encoder reads of the chunk (breadcrumb,
    newline, text), cut to that many characters."""
    bundle, queries, _ = evaluation.dataset(name, split, [], False)
    beir = not name.startswith(("docs:", "titles:", "typos:"))
    text = {"maxCharsPerChunk": text_chars} if text_chars else {}
    requests = [{"query": q["text"], "mode": "hybrid", "rerank": True, "limit": POOL_MAX,
                 "candidateLimit": CANDIDATES, "maxChunksPerDocument": max_chunks, "includeContext": False,
                 **text}
                for q in queries]
    out = evaluation.search_jsonl(bundle, requests, ["--explain-features", "--max-limit", str(POOL_MAX),
                                                     *search_args])
    groups = []
    for q, resp in zip(queries, out):
        if "errorCode" in resp:
            sys.exit(f"{name}: {resp}")
        rows = []
        for r in resp["results"]:
            f = r["rankingSignals"].get("features")
            if f is None:
                continue
            d = evaluation.doc_key(r["documentPath"], beir)
            # The page's key: title and file name (what makes copies), and how alike the title
            # is to the query (what puts titled pages first).
            key = (r["title"], r["documentPath"].rsplit("/", 1)[-1], title_similarity(q["text"], r["title"]))
            row = (q["rels"].get(d, 0), d, f, key)
            if text_chars:
                passage = " > ".join(r.get("sectionPath") or []) + "\n" + (r.get("text") or "")
                row += (passage[:text_chars],)
            rows.append(row)
        # In page-path order, not the engine's ranking of the pool: the fit then does not depend
        # on the model the binary was built with, and a re-run writes the same file.
        rows.sort(key=lambda r: (r[1], r[2]))
        groups.append((f"{name}/{q['id']}", q["rels"], rows))
    return groups


DISTINCT_HEAD, COPY_STEP = 3, 0.05  # src/search/rank.rs
TITLE_MATCH, TITLE_STEP, TITLED_PAGES = 0.6, 0.05, 50  # src/search/rank.rs


def trigrams(s):
    """rank.rs `trigrams`: lowercased, runs of non-alphanumerics one space, padded."""
    s = " " + " ".join("".join(c if c.isalnum() else " " for c in s.lower()).split()) + " "
    return {s[i:i + 3] for i in range(len(s) - 2)}


def title_similarity(query, title):
    """rank.rs `title_similarity`: Dice of the two strings' letter trigrams."""
    a, b = trigrams(query), trigrams(title)
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def doc_order(rows, scores, demote=True):
    """Documents in order of their best-scoring chunk, then what the engine does after scoring:
    pages whose title is at least TITLE_MATCH alike the query move above the rest, the most
    alike first (rank.rs `titled_pages_first`; a key without a similarity has none), and a
    copy (same title and file name as a document ranked above it) ranked among the first
    DISTINCT_HEAD distinct pages moves to just under them (`distinct_pages_first`). With
    `demote` false, the order of the scores alone."""
    best = {}
    for (label, d, f, key, *_), s in zip(rows, scores):
        best[d] = max(best.get(d, -1e30), s)
    keys = {r[1]: tuple(r[3][:2]) for r in rows}
    if not demote:
        return [d for d, _ in sorted(best.items(), key=lambda x: (-x[1], x[0]))]
    sims = {r[1]: r[3][2] for r in rows if len(r[3]) > 2 and r[3][2] >= TITLE_MATCH}
    if sims:
        top = max(best.values())
        titled = sorted(sims, key=lambda d: (-sims[d], -best[d], d))[:TITLED_PAGES]
        for j, d in enumerate(titled):
            best[d] = top + TITLE_STEP * (len(titled) - j)
    order = [d for d, _ in sorted(best.items(), key=lambda x: (-x[1], x[0]))]
    seen, copies, floor, above = set(), [], None, 0
    for d in order:
        if keys[d] in seen:
            copies.append(d)
            continue
        seen.add(keys[d])
        floor, above = best[d], len(copies)
        if len(seen) == DISTINCT_HEAD:
            break
    for j, c in enumerate(copies[:above]):
        best[c] = floor - COPY_STEP * (j + 1)
    return [d for d, _ in sorted(best.items(), key=lambda x: (-x[1], x[0]))]


def hit_rate(groups, score_fn, answer_grade, k=3, demote=True):
    """Share of queries with an answering document (grade >= answer_grade) in the first k."""
    hits = 0
    for _, rels, rows in groups:
        order = doc_order(rows, [score_fn(r) for r in rows], demote)
        answers = {d for d, g in rels.items() if g >= answer_grade}
        hits += any(d in answers for d in order[:k])
    return hits / max(len(groups), 1)


def train(groups, args, weights=None):
    """Fits the model; `weights` (per group, default 1) scale each query's say."""
    import lightgbm as lgb
    import numpy as np
    X, y, w, sizes = [], [], [], []
    for k, (_, _, rows) in enumerate(groups):
        if not rows or not any(r[0] > 0 for r in rows):
            continue  # nothing to learn from a query whose answer is not in the pool
        X += [r[2] for r in rows]
        y += [r[0] for r in rows]
        w += [weights[k] if weights else 1.0] * len(rows)
        sizes.append(len(rows))
    params = dict(objective="lambdarank", metric="ndcg", ndcg_eval_at=[3], learning_rate=args.learning_rate,
                  num_leaves=args.leaves, min_data_in_leaf=args.min_leaf, feature_fraction=1.0,
                  bagging_fraction=1.0, lambda_l2=args.l2, num_threads=1, deterministic=True,
                  force_row_wise=True, seed=20261125, verbose=-1, label_gain=[0, 1, 3])
    data = lgb.Dataset(np.array(X, dtype=np.float32), label=np.array(y), group=sizes, weight=np.array(w))
    return lgb.train(params, data, num_boost_round=args.trees)


def scorer(booster):
    """A feature row's score under `booster` (what `hit_rate`, `ndcg10` and `evaluate` take)."""
    return lambda r: float(booster.predict([r[2]])[0])


def export(booster, names, path, model_id):
    """Flattens LightGBM's trees into the engine's format (src/search/rank.rs `Tree`)."""
    dump = booster.dump_model()
    assert dump["feature_names"] == [f"Column_{i}" for i in range(len(names))] or dump["feature_names"] == names
    trees = []
    for t in dump["tree_info"]:
        feature, threshold, left, right, leaf = [], [], [], [], []

        def walk(node):
            if "leaf_value" in node:
                leaf.append(float(node["leaf_value"]))
                return ~(len(leaf) - 1)
            i = len(feature)
            feature.append(int(node["split_feature"]))
            threshold.append(float(node["threshold"]))
            left.append(0)
            right.append(0)
            assert node["decision_type"] == "<="
            left[i] = walk(node["left_child"])
            right[i] = walk(node["right_child"])
            return i

        root = t["tree_structure"]
        if "leaf_value" in root:
            leaf.append(float(root["leaf_value"]))
        else:
            walk(root)
        trees.append(dict(feature=feature, threshold=threshold, left=left, right=right, leaf=leaf))
    model = {"id": model_id, "features": names, "base": 0.0, "trees": trees}
    with open(path, "w") as f:
        json.dump(model, f, separators=(",", ":"))
        f.write("\n")


def ndcg10(groups, score_fn):
    """Mean nDCG@10 of the pool's documents ordered by `score_fn` (beyond the pool: none)."""
    total = 0.0
    for _, rels, rows in groups:
        order = doc_order(rows, [score_fn(r) for r in rows], demote=False)
        dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(order[:10]))
        ideal = sorted(rels.values(), reverse=True)[:10]
        total += dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return total / max(len(groups), 1)


def evaluate(dev, score_fn):
    """Top-3 per dev corpus (and all): the fused order, and `score_fn`'s with copies demoted."""
    fused = lambda r: r[2][0]  # noqa: E731  the first stage's score
    rows, n, f_all, r_all = [], 0, 0.0, 0.0
    for corpus, groups in dev.items():
        f3 = hit_rate(groups, fused, 2, demote=False)
        r3 = hit_rate(groups, score_fn, 2)
        rows.append((corpus, len(groups), f3, r3))
        n += len(groups)
        f_all += f3 * len(groups)
        r_all += r3 * len(groups)
    rows.append(("all", n, f_all / max(n, 1), r_all / max(n, 1)))
    return rows


def cross_validate(k, fit, weights, dev, settings, sci_dev):
    """K folds over the docs questions of train and dev together (by a hash of the question id):
    each fold is scored by models fitted on the other folds, once on their train questions only
    and once on their train and dev questions, so the 336 questions judge each setting (not the
    86 of dev alone) and the second figure says whether dev's questions would add anything to
    the fit. Rows that are not docs questions (SciFact, typo titles) are fitted in every fold."""
    import hashlib
    docs = {g[0] for groups in dev.values() for g in groups}
    train_ids = {g[0] for g in fit if g[0].startswith("docs:")}
    extra = [(g, w) for g, w in zip(fit, weights) if not g[0].startswith("docs:")]
    questions = [g for g in fit if g[0].startswith("docs:")] + [g for groups in dev.values() for g in groups]
    fold = {g[0]: hashlib.sha256(g[0].encode()).digest()[0] % k for g in questions}
    corpora = sorted({g[0].split("/")[0] for g in questions})
    fused = lambda r: r[2][0]  # noqa: E731
    n = {c: sum(g[0].startswith(c + "/") for g in questions) for c in corpora}
    print(f"{k}-fold cross-validation over {len(questions)} docs questions ({len(train_ids)} train, "
          f"{len(docs)} dev); top-3 per corpus, then all")
    print(f"  {'':<52}" + "".join(f"{c.split(':')[1][:14]:>15}" for c in corpora) + f"{'all':>8}")
    base = {c: hit_rate([g for g in questions if g[0].startswith(c + "/")], fused, 2, demote=False) for c in corpora}
    print(f"  {'fused first stage':<52}" + "".join(f"{base[c]:15.3f}" for c in corpora)
          + f"{sum(base[c] * n[c] for c in corpora) / len(questions):8.3f}")
    for st in settings:
        a = argparse.Namespace(**st)
        for label, with_dev in (("train", False), ("train + dev", True)):
            hits = {c: 0 for c in corpora}
            for f in range(k):
                rows = [g for g in questions if fold[g[0]] != f and (with_dev or g[0] in train_ids)]
                rows += [g for g, _ in extra]
                booster = train(rows, a, [1.0] * (len(rows) - len(extra)) + [w for _, w in extra])
                for c in corpora:
                    held = [g for g in questions if fold[g[0]] == f and g[0].startswith(c + "/")]
                    hits[c] += hit_rate(held, scorer(booster), 2) * len(held)
            name = f"{a.leaves} leaves, min {a.min_leaf}, {a.trees} trees, lr {a.learning_rate}; {label}"
            print(f"  {name:<52}" + "".join(f"{hits[c] / n[c]:15.3f}" for c in corpora)
                  + f"{sum(hits.values()) / len(questions):8.3f}")
        if sci_dev:
            booster = train(fit, a, weights)
            print(f"  {'':<52}SciFact (other half of train) nDCG@10 fused {ndcg10(sci_dev, fused):.4f} "
                  f"ranked {ndcg10(sci_dev, scorer(booster)):.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "src", "search", "ranker.json"))
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--leaves", type=int, default=2)
    ap.add_argument("--min-leaf", type=int, default=20)
    ap.add_argument("--learning-rate", type=float, default=0.1)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--scifact", action="store_true", help="also fit on half of SciFact's train split")
    ap.add_argument("--scifact-weight", type=float, default=0.25, help="a SciFact query's weight")
    ap.add_argument("--typos", type=float, default=0.0,
                    help="also fit on typo and prefix forms of PowerShell-Docs page titles (evaluation.py's "
                         "typos train split) at this weight a query, and print their dev top-5")
    ap.add_argument("--grid", action="store_true", help="try a few settings, print dev top-3 for each")
    ap.add_argument("--cv", type=int, default=0, metavar="K",
                    help="K-fold cross-validation over the train and dev questions together (folds by a hash "
                         "of the question id): top-3 for each setting, fitted on train only and on train + dev")
    ap.add_argument("--search-args", default="")
    ap.add_argument("--id", default="docloupe-ranker-1")
    ap.add_argument("--max-chunks", type=int, default=MAX_CHUNKS, help="maxChunksPerDocument of the pools")
    ap.add_argument("--corpora", default=",".join(evaluation.DOCS_CORPORA), help="docs sets to use")
    args = ap.parse_args()
    search_args = args.search_args.split()
    corpora = args.corpora.split(",")
    fit = [g for c in corpora for g in collect(f"docs:{c}", "train", search_args, args.max_chunks)]
    weights = [1.0] * len(fit)
    dev = {c: collect(f"docs:{c}", "dev", search_args, args.max_chunks) for c in corpora}
    if args.scifact:
        # SciFact's train queries: even ones fitted (at --scifact-weight), odd ones judge.
        sci = collect("scifact", "train", search_args, args.max_chunks)
        fit += sci[0::2]
        weights += [args.scifact_weight] * len(sci[0::2])
        sci_dev = sci[1::2]
    variants = ("exact", "edit1", "edit2", "prefix")
    typo_dev = []
    if args.typos:
        typo_fit = [g for v in variants for g in collect(f"typos:en-medium-powershell-docs/{v}", "train", search_args)]
        fit += typo_fit
        weights += [args.typos] * len(typo_fit)
        typo_dev = [collect(f"typos:{c}/{v}", "dev", search_args) for c in corpora for v in variants]
    settings = [vars(args)]
    if args.grid:
        settings = [dict(vars(args), **g) for g in (
            dict(leaves=2, min_leaf=20, trees=100, learning_rate=0.1),
            dict(leaves=2, min_leaf=20, trees=300, learning_rate=0.05),
            dict(leaves=4, min_leaf=20, trees=100, learning_rate=0.1),
            dict(leaves=4, min_leaf=50, trees=200, learning_rate=0.05),
            dict(leaves=8, min_leaf=20, trees=100, learning_rate=0.05),
        )]
    if args.cv:
        return cross_validate(args.cv, fit, weights, dev, settings, sci_dev if args.scifact else None)
    for st in settings:
        a = argparse.Namespace(**st)
        booster = train(fit, a, weights)
        score = scorer(booster)
        print(f"fit on {len(fit)} train queries; leaves {a.leaves}, min_leaf {a.min_leaf}, trees {a.trees}, "
              f"lr {a.learning_rate}")
        print(f"  {'dev corpus':<28} {'n':>3} {'fused top3':>10} {'ranked top3':>11}")
        for corpus, n, f3, r3 in evaluate(dev, score):
            print(f"  {corpus:<28} {n:>3} {f3:10.3f} {r3:11.3f}")
        if args.scifact:
            fused = lambda r: r[2][0]  # noqa: E731
            print(f"  scifact (other half of train) nDCG@10 fused {ndcg10(sci_dev, fused):.4f} "
                  f"ranked {ndcg10(sci_dev, score):.4f}")
        if typo_dev:
            print(f"  typo and prefix titles, dev top-5 (mean of {len(typo_dev)} sets): "
                  f"{sum(hit_rate(g, score, 1, k=5) for g in typo_dev) / len(typo_dev):.4f}")
    if not args.grid:
        export(booster, feature_names(), args.out, args.id)
        print(f"wrote {args.out}: {args.trees} trees")


if __name__ == "__main__":
    main()
