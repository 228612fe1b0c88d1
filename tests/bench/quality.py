#!/usr/bin/env python3
"""Quality benchmark: retrieval quality and latency of every search mode, in one run.

Datasets:
  docs:<corpus>   the project's own developer questions (tests/questions/docs-questions.jsonl:
                  graded judgments, dev/test split by question) over real documentation sets
                  from ../shared/corpora: en-small-fastapi-docs, en-small-rust-book,
                  en-medium-powershell-docs, ru-small-fastapi-docs, ru-small-vue-docs.
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

Each corpus is indexed by the release `index-builder` into the cache (never the repo), and every
query goes through one `docloupe search --jsonl` process per mode (the real batch mode). Results
are chunks; a document's rank is that of its first chunk (maxChunksPerDocument=1 makes every
result a distinct document). Rows: fulltext, semantic, hybrid (fused, no second stage) and
hybrid+rerank (the default pipeline: the learned second stage over the fused top
candidateLimit); hybrid+xenc (the project's cross-encoder as the second stage) on request.

Metrics, at document level:
  Top3      share of queries with an answering document (grade 2; any relevant one for the
            BEIR sets) in the first 3
  P@5       relevant documents (grade >= 1) among the first 5, / 5
  MRR@10    1 / rank of the first answering document within 10
  nDCG@10   gain = grade, discount log2(rank + 1), ideal from the judgments
  R@100     relevant documents in the first 100 / relevant documents
and each stage's latency from the engine's own timings (embed, retrieve, rerank, total;
p50/p95 over the queries, one query at a time, one thread).

Usage: python3 tests/bench/quality.py [--split test|dev] [--modes m1,m2] [dataset ...]
  (no dataset: all of them; `docs` = every docs set, `titles` = every titles set)
"""
import argparse
import functools
import hashlib
import json
import math
import os
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
EVAL = os.path.join(SHARED, "eval")
CORPORA = os.path.join(SHARED, "corpora")
QUESTIONS = os.path.join(ROOT, "tests", "questions", "docs-questions.jsonl")
BIN = os.path.join(ROOT, "target", "release")
CACHE = os.environ.get("DOCLOUPE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "docloupe")
WORK = os.path.join(CACHE, "bench-quality")
DOCS_CORPORA = ["en-small-fastapi-docs", "en-small-rust-book", "en-medium-powershell-docs",
                "ru-small-fastapi-docs", "ru-small-vue-docs"]
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
}
# Extra `docloupe search` arguments per row.
MODE_ARGS = {
    "hybrid+xenc": ["--reranker", os.path.join(ROOT, "prebuild", "reranker", "model"), "--rerank-budget-ms", "60000"],
}
DEFAULT_MODES = "fulltext,semantic,hybrid,hybrid+rerank"
DEPTH = 100
TITLES_PER_CORPUS = 60


def log(msg):
    print(msg, file=sys.stderr, flush=True)


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


@functools.cache
def builder_id():
    """sha256 of the release index-builder: a bundle made by another build of it (other
    analysis or chunking rules) is made again."""
    with open(os.path.join(BIN, "index-builder"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build(docs, bundle, stamp_value, extra_build, rebuild):
    """Builds `docs` into `bundle` unless the stamp says this builder already did. A bundle
    already there lends its vectors (`--incremental`: only changed text is embedded again,
    and the result is what a clean build writes), so a new builder costs minutes, not the
    hours of embedding every corpus; `--rebuild` builds from scratch."""
    stamp = bundle + ".stamp"
    key = stamp_value + json.dumps(extra_build) + builder_id()
    if not rebuild and os.path.exists(bundle) and os.path.exists(stamp) and open(stamp).read() == key:
        return bundle
    t = time.monotonic()
    log(f"  building {bundle} ...")
    reuse = ["--incremental"] if os.path.exists(bundle) and not rebuild and "--incremental" not in extra_build else []
    r = subprocess.run([os.path.join(BIN, "index-builder"), "build", docs, "--out", bundle, "--quiet",
                        "--force-rebuild", *reuse, *extra_build], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"index-builder failed on {docs}:\n{r.stderr}")
    info = json.loads(r.stdout)
    log(f"  {info['documentsProcessed']} documents, {info['chunksWritten']} chunks in {time.monotonic() - t:.0f} s")
    with open(stamp, "w") as f:
        f.write(key)
    return bundle


def beir_bundle(name, extra_build, rebuild):
    """Writes a BEIR corpus as one markdown file per document (title as H1) and builds it."""
    src = os.path.join(EVAL, name)
    out = os.path.join(WORK, name.replace("/", "_"))
    docs = os.path.join(out, "docs")
    h = hashlib.sha256()
    with open(os.path.join(src, "corpus.jsonl"), "rb") as f:
        h.update(f.read())
    if not os.path.isdir(docs):
        os.makedirs(docs + ".tmp", exist_ok=True)
        for doc in read_jsonl(os.path.join(src, "corpus.jsonl")):
            title = doc.get("title", "").strip()
            body = doc["text"].strip()
            with open(os.path.join(docs + ".tmp", doc["_id"] + ".md"), "w", encoding="utf-8") as f:
                f.write(f"# {title}\n\n{body}\n" if title else f"{body}\n")
        os.rename(docs + ".tmp", docs)
    return build(docs, os.path.join(out, tag_of(extra_build) + ".bundle"), h.hexdigest(), extra_build, rebuild)


def corpus_dir(corpus):
    """Extracts a docs corpus into the cache once; returns the folder it unpacks to."""
    base = os.path.join(WORK, "corpora")
    folder = os.path.join(base, corpus)
    if not os.path.isdir(folder):
        os.makedirs(base, exist_ok=True)
        with tarfile.open(os.path.join(CORPORA, corpus + ".tar.gz")) as t:
            t.extractall(base, filter="data")
    return folder


def docs_bundle(corpus, extra_build, rebuild):
    # By content: a fresh copy of ../shared (new mtimes) reuses the bundles built from it.
    with open(os.path.join(CORPORA, corpus + ".tar.gz"), "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest()
    out = os.path.join(WORK, "docs", corpus)
    os.makedirs(out, exist_ok=True)
    return build(corpus_dir(corpus), os.path.join(out, tag_of(extra_build) + ".bundle"), stamp, extra_build, rebuild)


def tag_of(extra_build):
    return "bundle-" + hashlib.sha256(json.dumps(extra_build).encode()).hexdigest()[:8] if extra_build else "bundle"


def split_of(key):
    """dev or test, by a hash (for generated queries)."""
    return "dev" if hashlib.sha256(key.encode()).digest()[0] % 2 == 0 else "test"


@functools.cache
def dumped(bundle):
    """(documentPath, chunkIndex, title) of every chunk, from `index-builder dump` (the text,
    which most of its bytes are, is not kept)."""
    r = subprocess.run([os.path.join(BIN, "index-builder"), "dump", bundle], capture_output=True, text=True, check=True)
    return [(c["documentPath"], c["chunkIndex"], c["title"]) for c in map(json.loads, r.stdout.splitlines())]


def page_titles(bundle):
    """{title: the paths of the pages titled so}."""
    titles = {}
    for path, index, title in dumped(bundle):
        if index == 0 and title.strip():
            titles.setdefault(title.strip(), set()).add(path)
    return titles


def title_queries(corpus, bundle):
    """Exact page titles as queries; every page with that exact title is relevant."""
    titles = page_titles(bundle)
    # Titles of up to 8 words that name few pages (a title shared by many is no target).
    usable = sorted((t, p) for t, p in titles.items() if len(t.split()) <= 8 and len(p) <= 6)
    usable.sort(key=lambda tp: hashlib.sha256((corpus + tp[0]).encode()).hexdigest())
    return [{"id": f"title-{i}", "text": t, "rels": {p: 2 for p in paths}, "split": split_of(t)}
            for i, (t, paths) in enumerate(usable[:TITLES_PER_CORPUS])]


TYPO_PAGES = 60


def typo_queries(corpus, bundle, variant, split):
    """Generated from page titles: for each of TYPO_PAGES sampled pages (titles of 2–6 words
    with a word of 5+ letters), the title as it is (`exact`), with one random edit (insert,
    delete, substitute or swap neighbours) in its longest word (`edit1`), with two (`edit2`),
    or with its last word cut to 4 characters (`prefix`, as typed). Every page with that exact
    title is relevant. Pages are split dev/test by a hash of the title (the edit parameters are
    chosen on dev); a fixed seed per corpus and page: the same queries on every run. `train`
    (what the second stage is fitted on) takes the dev half's pages beyond the first TYPO_PAGES:
    pages no dev or test query is made from (only PowerShell-Docs has that many)."""
    import random
    titles = page_titles(bundle)
    usable = sorted((t, p) for t, p in titles.items()
                    if 2 <= len(t.split()) <= 6 and len(p) <= 6 and any(len(w) >= 5 and w.isalpha() for w in t.split())
                    and split_of(t) == ("dev" if split == "train" else split))
    usable.sort(key=lambda tp: hashlib.sha256((corpus + "typo" + tp[0]).encode()).hexdigest())
    pages = usable[TYPO_PAGES:] if split == "train" else usable[:TYPO_PAGES]
    out = []
    for i, (title, paths) in enumerate(pages, start=TYPO_PAGES if split == "train" else 0):
        rng = random.Random(f"{corpus}/{title}")
        words = title.split()
        k = max(range(len(words)), key=lambda j: (len(words[j]) if words[j].isalpha() else 0, -j))
        alphabet = "abcdefghijklmnopqrstuvwxyz" if words[k].isascii() else "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"

        def edit(w):
            j = rng.randrange(len(w))
            op = rng.choice(["insert", "delete", "substitute", "swap"] if len(w) > 1 else ["insert"])
            if op == "insert":
                return w[:j] + rng.choice(alphabet) + w[j:]
            if op == "delete":
                return w[:j] + w[j + 1:]
            if op == "substitute":
                return w[:j] + rng.choice([c for c in alphabet if c != w[j].lower()]) + w[j + 1:]
            j = min(j, len(w) - 2)
            return w[:j] + w[j + 1] + w[j] + w[j + 2:]
        if variant == "exact":
            text = title
        elif variant == "edit1":
            text = " ".join(edit(w) if j == k else w for j, w in enumerate(words))
        elif variant == "edit2":
            text = " ".join(edit(edit(w)) if j == k else w for j, w in enumerate(words))
        else:  # prefix: the last word as typed so far
            last = max(j for j, w in enumerate(words) if len(w) >= 5 and w.isalpha())
            text = " ".join(words[:last] + [words[last][:4]])
        out.append({"id": f"typo-{i}", "text": text, "title": title, "rels": {p: 2 for p in paths}})
    return out


def dataset(name, split, extra_build, rebuild):
    """(bundle, queries: [{id, text, rels}], lang). A name ending in @MODEL (`scifact@e5`)
    builds with `--model MODEL` (e5 = e5-multilingual)."""
    name, _, model = name.partition("@")
    if model:
        extra_build = extra_build + ["--model", {"e5": "e5-multilingual"}.get(model, model)]
    kind, _, rest = name.partition(":")
    if kind == "xquad-x":
        # Cross-language XQuAD-R: questions in one language, paragraphs in the other (the
        # ids are shared); both built with the multilingual model.
        q_lang, _, p_lang = rest.partition("-")
        if split != "test":
            return None, [], ""
        qrels = read_qrels(os.path.join(EVAL, f"xquad-r/{q_lang}-paragraph", "qrels", "test.tsv"))
        bundle = beir_bundle(f"xquad-r/{p_lang}-paragraph", extra_build or ["--model", "e5-multilingual"], rebuild)
        qs = [{"id": q["_id"], "text": q["text"], "rels": qrels[q["_id"]]}
              for q in read_jsonl(os.path.join(EVAL, f"xquad-r/{q_lang}-paragraph", "queries.jsonl")) if q["_id"] in qrels]
        return bundle, qs, f"{q_lang}→{p_lang}"
    if kind == "docs-x":
        q_lang, _, p_lang = rest.partition("-")
        target = f"{p_lang}-small-fastapi-docs"
        bundle = docs_bundle(target, extra_build or ["--model", "e5-multilingual"], rebuild)
        pages = {path for path, _, _ in dumped(bundle)}
        qs = []
        for q in read_jsonl(QUESTIONS):
            if q["corpus"] != f"{q_lang}-small-fastapi-docs" or q["split"] != split:
                continue
            rels = {p.replace(f"docs/{q_lang}/", f"docs/{p_lang}/", 1): g for p, g in q["judgments"].items()}
            rels = {p: g for p, g in rels.items() if p in pages}
            if 2 in rels.values():
                qs.append({"id": q["id"], "text": q["question"], "rels": rels})
        return bundle, qs, f"{q_lang}→{p_lang}"
    if kind == "typos":
        corpus, _, variant = rest.partition("/")
        bundle = docs_bundle(corpus, extra_build, rebuild)
        return bundle, typo_queries(corpus, bundle, variant, split), "ru" if corpus.startswith("ru-") else "en"
    if kind == "docs":
        bundle = docs_bundle(rest, extra_build, rebuild)
        qs = [q for q in read_jsonl(QUESTIONS) if q["corpus"] == rest and q["split"] == split]  # train: the ranker's
        lang = qs[0]["lang"] if qs else "?"
        return bundle, [{"id": q["id"], "text": q["question"], "rels": q["judgments"]} for q in qs], lang
    if kind == "titles":
        bundle = docs_bundle(rest, extra_build, rebuild)
        qs = [q for q in title_queries(rest, bundle) if q["split"] == split]
        return bundle, qs, "ru" if rest.startswith("ru-") else "en"
    qrels_split = {"dev": "train", "train": "train"}.get(split, split) if name == "scifact" else "test"
    qrels_path = os.path.join(EVAL, name, "qrels", f"{qrels_split}.tsv")
    if name != "scifact" and split != "test":
        return None, [], ""
    qrels = read_qrels(qrels_path)
    bundle = beir_bundle(name, extra_build, rebuild)
    qs = [{"id": q["_id"], "text": q["text"], "rels": qrels[q["_id"]]}
          for q in read_jsonl(os.path.join(EVAL, name, "queries.jsonl")) if q["_id"] in qrels]
    return bundle, qs, "ru" if "/ru-" in name else "en"


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


def doc_key(path, beir):
    return os.path.splitext(os.path.basename(path))[0] if beir else path


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


def metrics(ranked, rels, answer_grade):
    """Top3, P@5, MRR@10, nDCG@10, R@100 averaged over queries."""
    top3 = p5 = mrr = ndcg = recall = 0.0
    for ids, rel in zip(ranked, rels):
        answers = {d for d, g in rel.items() if g >= answer_grade}
        top3 += any(d in answers for d in ids[:3])
        p5 += sum(1 for d in ids[:5] if rel.get(d, 0) > 0) / 5
        first = next((i for i, d in enumerate(ids[:10]) if d in answers), None)
        mrr += 0 if first is None else 1 / (first + 1)
        dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ids[:10]))
        ideal = sorted(rel.values(), reverse=True)[:10]
        ndcg += dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        positive = [d for d, g in rel.items() if g > 0]
        recall += len([d for d in ids[:DEPTH] if rel.get(d, 0) > 0]) / len(positive)
    n = max(len(ranked), 1)
    return dict(top3=top3 / n, p5=p5 / n, mrr10=mrr / n, ndcg10=ndcg / n, recall100=recall / n)


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
        if n in ("docs", "titles"):
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
    print(f"{'dataset':<36} {'mode':<14} {'n':>4} {'Top3':>6} {'P@5':>6} {'MRR@10':>6} {'nDCG@10':>7} {'R@100':>6}"
          f"  {'embed':>11} {'retrieve':>11} {'rerank':>11} {'total':>11}  (ms p50/p95)")
    groups = {}
    for name in expand(args.datasets):
        bundle, queries, lang = dataset(name, args.split, extra_build, args.rebuild)
        if not queries:
            log(f"{name}: no {args.split} queries, skipped")
            continue
        queries = queries[:args.max_queries] if args.max_queries else queries
        beir = not name.startswith(("docs:", "docs-x:", "titles:", "typos:"))
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
            if name.startswith(("docs:", "titles:")):
                g = groups.setdefault((name.split(":")[0], lang, label), [])
                g.append((len(queries), m))
            if typos:
                notes.append(f"top-5 hit {m['top5']:.3f}, suggestion = title {m['suggestTitle']:.3f} "
                             f"(in 3: {m['suggestTitle3']:.3f}), any suggestion {m['suggested']:.3f}")
            runs += [dict(dataset=name, mode=label, id=q["id"], text=q["text"], rels=sorted(q["rels"]), ranked=r[:20])
                     for q, r in zip(queries, ranked)]
            lat = "  ".join(f"{v[0]:5.1f}/{v[1]:5.1f}" for v in stage.values())
            print(f"{name:<36} {label:<14} {len(queries):>4} {m['top3']:6.3f} {m['p5']:6.3f} {m['mrr10']:6.3f} "
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
            print(f"{label:<36} {key[2]:<14} {n:>4} {mean['top3']:6.3f} {mean['p5']:6.3f} {mean['mrr10']:6.3f} "
                  f"{mean['ndcg10']:7.4f} {mean['recall100']:6.3f}")
        for kind in ("docs", "titles"):
            for label in modes:
                parts = [p for k, v in groups.items() if k[0] == kind and k[2] == label for p in v]
                if not parts:
                    continue
                n = sum(p[0] for p in parts)
                mean = {k: sum(p[0] * p[1][k] for p in parts) / n for k in ("top3", "p5", "mrr10", "ndcg10", "recall100")}
                table.append(dict(dataset=f"{kind} (all)", lang="*", split=args.split, mode=label, queries=n, **mean))
                print(f"{kind + ' (all)':<36} {label:<14} {n:>4} {mean['top3']:6.3f} {mean['p5']:6.3f} "
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
