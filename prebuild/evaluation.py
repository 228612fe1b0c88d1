"""What the benchmarks and the fitting scripts share: the evaluation datasets, their bundles,
`docloupe search --jsonl` and the ranking metrics.

The quality benchmark (tests/bench/quality.py, `make bench-quality`) reports on them; the
learned second stage's trainer (prebuild/ranker/train.py, `make ranker`) and the reranker's
calibration (prebuild/reranker/calibrate.py) fit and choose on their train and dev splits. The
datasets are described in tests/bench/quality.py's docstring.

Every corpus is indexed by the release `index-builder` into the cache (never the repo), and
every query goes through one `docloupe search --jsonl` process per call (the real batch mode).
Standard library only.
"""
import functools
import hashlib
import json
import math
import os
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
EVAL = os.path.join(SHARED, "eval")
CORPORA = os.path.join(SHARED, "corpora")
QUESTIONS = os.path.join(ROOT, "tests", "questions", "docs-questions.jsonl")
BIN = os.path.join(ROOT, "target", "release")
# `docloupe` with the benchmarks' settings (--max-limit, --explain-features, ...): the
# `calibration` build `make calibration` writes apart from the release binary.
SEARCH_BIN = os.environ.get("DOCLOUPE_CALIBRATION_BIN",
                            os.path.join(ROOT, "target", "calibration", "release", "docloupe"))
CACHE = os.environ.get("DOCLOUPE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "docloupe")
# MkDocs with mkdocs-material, for the `docs-html:` sets (the recipes' tools install it).
MKDOCS = os.environ.get("DOCLOUPE_MKDOCS") or os.path.join(CACHE, "recipes", "tools", "pyenv", "bin", "mkdocs")
WORK = os.path.join(CACHE, "bench-quality")
DOCS_CORPORA = ["en-small-fastapi-docs", "en-small-rust-book", "en-medium-powershell-docs",
                "ru-small-fastapi-docs", "ru-small-vue-docs"]
DEPTH = 100  # results asked for per query; R@100 counts within them
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


def corpus_stamp(corpus):
    # By content: a fresh copy of ../shared (new mtimes) reuses the bundles built from it.
    with open(os.path.join(CORPORA, corpus + ".tar.gz"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def docs_bundle(corpus, extra_build, rebuild):
    out = os.path.join(WORK, "docs", corpus)
    os.makedirs(out, exist_ok=True)
    return build(corpus_dir(corpus), os.path.join(out, tag_of(extra_build) + ".bundle"), corpus_stamp(corpus),
                 extra_build, rebuild)


def mkdocs_config(corpus):
    """The MkDocs settings a corpus is rendered with (`docs-html:`): Material in the corpus's
    language (its `<html lang>`; Material's default is en), one .html file per page, and
    attr_list, which reads the `## Title { #id }` heading ids the sources write. JSON is YAML,
    so it is written as mkdocs.yml as it is."""
    lang = "ru" if corpus.startswith("ru-") else "en"
    return {"site_name": corpus, "docs_dir": corpus_dir(corpus), "theme": {"name": "material", "language": lang},
            "use_directory_urls": False, "markdown_extensions": ["attr_list"]}


def html_site(corpus):
    """Renders a docs corpus to HTML with MkDocs (not --strict: the corpora's broken links and
    mdBook/VitePress includes stay as MkDocs leaves them) into the cache once; returns the
    site folder."""
    out = os.path.join(WORK, "docs-html", corpus)
    site, stamp = os.path.join(out, "site"), os.path.join(out, "site.stamp")
    config = mkdocs_config(corpus)
    key = corpus_stamp(corpus) + json.dumps(config)
    if os.path.isdir(site) and os.path.exists(stamp) and open(stamp).read() == key:
        return site
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "mkdocs.yml"), "w") as f:
        json.dump(config, f, indent=1)
    t = time.monotonic()
    log(f"  rendering {corpus} with MkDocs into {site} ...")
    r = subprocess.run([MKDOCS, "build", "--quiet", "--config-file", os.path.join(out, "mkdocs.yml"),
                        "--site-dir", site], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mkdocs build failed on {corpus}:\n{r.stderr}")
    log(f"  rendered in {time.monotonic() - t:.0f} s")
    with open(stamp, "w") as f:
        f.write(key)
    return site


def html_page(path):
    """The page MkDocs (use_directory_urls: false) writes for a markdown source: a/b.md →
    a/b.html, a/index.md and a/README.md → a/index.html."""
    stem = os.path.splitext(path)[0]
    folder, name = os.path.split(stem)
    return os.path.join(folder, "index.html") if name in ("index", "README") else stem + ".html"


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
    if kind == "tuning":
        # The questions written for tuning the query tower (prebuild/tuning/questions): more
        # than the docs questions, and one page each, but a measure only of a model that was
        # not tuned on the corpus (a leave-one-corpus-out fold), so on request only; no split.
        bundle = docs_bundle(rest, extra_build, rebuild)
        qdir = os.path.join(ROOT, "prebuild", "tuning", "questions")
        qs = [t for f in sorted(os.listdir(qdir)) if f.startswith(rest + "-")
              for t in read_jsonl(os.path.join(qdir, f))]
        return bundle, [{"id": f"tuning-{i}", "text": t["question"], "rels": {t["path"]: 2}}
                        for i, t in enumerate(qs)], "ru" if rest.startswith("ru-") else "en"
    if kind == "docs-html":
        # The same corpus and questions, indexed from the pages MkDocs renders; the judged
        # sources are mapped to their pages (one without a page stays judged, and is missed).
        site = html_site(rest)
        out = os.path.join(WORK, "docs-html", rest)
        html_build = extra_build + ["--formats", "html"]
        bundle = build(site, os.path.join(out, tag_of(html_build) + ".bundle"), corpus_stamp(rest) + json.dumps(
            mkdocs_config(rest)), html_build, rebuild)
        qs = [q for q in read_jsonl(QUESTIONS) if q["corpus"] == rest and q["split"] == split]
        judged = {p for q in qs for p in q["judgments"]}
        missing = sorted(p for p in judged if not os.path.isfile(os.path.join(site, html_page(p))))
        log(f"  {name}: {len(judged) - len(missing)} of {len(judged)} judged pages have an HTML page"
            + (f"; none for {', '.join(missing)}" if missing else ""))
        return bundle, [{"id": q["id"], "text": q["question"], "rels": {html_page(p): g for p, g in q["judgments"].items()}}
                        for q in qs], qs[0]["lang"] if qs else "?"
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
    r = subprocess.run([SEARCH_BIN, "search", "--bundle", bundle, "--jsonl", *extra_args],
                       input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"docloupe search --jsonl failed:\n{r.stderr}")
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(out) == len(requests), (len(out), len(requests))
    return out


def doc_key(path, beir):
    return os.path.splitext(os.path.basename(path))[0] if beir else path


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
