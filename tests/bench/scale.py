#!/usr/bin/env python3
"""make bench-scale: a collection of over 100,000 documents, built and queried (issue 23).

The collection (made once into $DOCLOUPE_CACHE/scale/docs, never into the repo): every page of
en-large-cpp-docs in VERSIONS distinct versions (`v1/` ... `v10/`, each page's front-matter
title and first `# ` heading suffixed " (version N)"), plus every other corpus of
../shared/corpora once, under its own name: 97,510 + 13,167 = 110,677 documents.

It is built with the release `index-builder` (by default `--no-embeddings`: with embeddings,
1.3M chunks take about 7.5 h on 2 cores; `--embeddings` does it), then measured:
- build wall time, chunks/s and peak RSS;
- bundle bytes per section, raw and gzip 6 (brotli 11 of 100+ MB sections takes minutes through
  Node, so it is left to `--brotli`);
- the split layout: files by kind, the largest file, against Cloudflare's 20,000 (Free) and
  100,000 (Paid) files of at most 25 MiB;
- `docloupe search`, over the bundle file and over the split folder: one process per query
  (wall time and peak RSS per call, median and max of QUERIES_COLD queries), and one `--jsonl`
  process for 200 queries (the engine's totalMs p50 / p95 per mode);
- `docloupe mcp`, serving the bundle file and then the split folder: 200 `search_docs` calls over
  stdio, one at a time (round trip p50 / p95 and the server's peak RSS);
- the Worker on plain workerd over the split layout (`tests/edge/bench.sh`: 100 connections,
  30 s, p50 / p99, errors, isolate memory; then the 200 queries and titles one at a time,
  each also with a random word, and the isolate's wasm memory after them), unless `--no-edge`.

With `--copies CORPUS:N` the collection is instead N copies of one corpus of ../shared/corpora
(`c01/` ... under $DOCLOUPE_CACHE/scale/copies-CORPUS-N): the paths change and the text does not,
so with `--embeddings` each distinct text goes through the model once and its copies share its
vector (the builder's `chunksShared`). That is how hybrid search over 100,000 documents is
measured on 2 cores: en-medium-powershell-docs in 33 copies is 102,168 documents and 2.24M
chunks (more than the versioned collection's 1.35M) from 24,014 distinct texts, a 16 min
build instead of 7.5 h. Its titles repeat, so it says nothing about quality; what it
measures is the cost of that many documents and vectors.

With `--browser` (and `--embeddings`) headless Chromium opens the split folder through the JS
API (`tests/bench/web/scale.mjs`: the first fulltext answer cold, then the model and every
vector file, then fulltext, hybrid and hybrid + second stage latency); it needs `make wasm`
and `tests/bench/web`'s npm packages.

Usage, from the repository root (`make bench-scale`):
  python3 -m tests.bench.scale [--versions N | --copies CORPUS:N] [--embeddings] [--brotli]
                               [--no-edge] [--browser]
"""
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "corpora")
CACHE = os.environ.get("DOCLOUPE_CACHE", os.path.expanduser("~/.cache/docloupe"))
BUILDER = os.path.join(ROOT, "target", "release", "index-builder")
SEARCH = os.path.join(ROOT, "target", "release", "docloupe")
BASE = "en-large-cpp-docs"
QUERIES_COLD = 10
QUERIES = [
    "prevent a class from being inherited", "null pointer constant", "declared type of an expression",
    "allow another class to access private members", "LNK2019 unresolved external symbol",
    "std::vector reserve", "lambda capture by reference", "compile with optimizations",
    "precompiled header", "warning C4996", "move constructor", "thread local storage",
    "inline assembly", "structured exception handling", "virtual destructor", "template specialization",
    "/EHsc", "dllexport", "constexpr function", "range-based for loop",
]


def make_collection(dest, versions):
    """The collection under dest (made afresh unless its marker says it was made the same way)."""
    marker = os.path.join(dest, ".made")
    want = json.dumps({"versions": versions, "corpora": sorted(os.listdir(SHARED))})
    if os.path.exists(marker) and open(marker).read() == want:
        return
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    with tempfile.TemporaryDirectory(prefix="docloupe-scale-") as tmp:
        for archive in sorted(f for f in os.listdir(SHARED) if f.endswith(".tar.gz")):
            name = archive[: -len(".tar.gz")]
            where = os.path.join(tmp, name) if name == BASE else os.path.join(dest, name)
            with tarfile.open(os.path.join(SHARED, archive)) as t:
                t.extractall(where, filter="data")
        base = os.path.join(tmp, BASE)
        for v in range(1, versions + 1):
            for d, _, files in os.walk(base):
                out_dir = os.path.join(dest, f"v{v}", os.path.relpath(d, base))
                os.makedirs(out_dir, exist_ok=True)
                for f in files:
                    src, dst = os.path.join(d, f), os.path.join(out_dir, f)
                    if f.endswith(".md"):
                        with open(src, encoding="utf-8", errors="surrogateescape") as fh:
                            text = fh.read()
                        with open(dst, "w", encoding="utf-8", errors="surrogateescape") as fh:
                            fh.write(versioned(text, v))
                    else:
                        shutil.copyfile(src, dst)
    with open(marker, "w") as fh:
        fh.write(want)


def make_copies(dest, corpus, copies):
    """dest/c01 ... dest/cNN, each the corpus as it is (made afresh unless its marker matches)."""
    marker = os.path.join(dest, ".made")
    want = json.dumps({"corpus": corpus, "copies": copies})
    if os.path.exists(marker) and open(marker).read() == want:
        return
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    first = os.path.join(dest, "c01")
    with tarfile.open(os.path.join(SHARED, corpus + ".tar.gz")) as t:
        t.extractall(first, filter="data")
    for c in range(2, copies + 1):
        shutil.copytree(first, os.path.join(dest, f"c{c:02}"))
    with open(marker, "w") as fh:
        fh.write(want)


def versioned(text, v):
    """The page with " (version v)" after its front-matter title and its first `# ` heading."""
    suffix = f" (version {v})"

    def title(m):
        value = m.group(2).rstrip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            return f"{m.group(1)}{value[:-1]}{suffix}{value[-1]}"
        return f"{m.group(1)}{value}{suffix}"

    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end > 0:
            head = re.sub(r"(?m)^(title:\s*)(.+)$", title, text[:end], count=1)
            text = head + text[end:]
    return re.sub(r"(?m)^(# )(.+)$", lambda m: m.group(1) + m.group(2).rstrip() + suffix, text, count=1)


def run(cmd, stdin=None, env=None):
    """Runs cmd; returns (stdout, wall seconds, peak RSS in MiB). The RSS comes from GNU time:
    a child's ru_maxrss seen from this process would count this process's own pages, which a
    fork copies before the exec."""
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        start = time.monotonic()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", *cmd], stdout=so, stderr=se,
                                stdin=subprocess.PIPE if stdin else None, env=env)
        if stdin:
            proc.stdin.write(stdin.encode())
            proc.stdin.close()
        proc.wait()
        wall = time.monotonic() - start
        so.seek(0)
        se.seek(0)
        err = se.read().decode()
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd[:3])} failed:\n{err[-3000:]}")
        return so.read().decode(), wall, int(err.strip().splitlines()[-1]) / 1024


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def brotli(data):
    js = ("const z=require('zlib');const b=require('fs').readFileSync(0);process.stdout.write(String("
          "z.brotliCompressSync(b,{params:{[z.constants.BROTLI_PARAM_QUALITY]:11,"
          "[z.constants.BROTLI_PARAM_SIZE_HINT]:b.length}}).length))")
    return int(subprocess.run(["node", "-e", js], input=data, capture_output=True, check=True).stdout)


def questions_of(corpus):
    """The corpus's train and dev questions of tests/questions (never its test ones)."""
    with open(os.path.join(ROOT, "tests", "questions", "docs-questions.jsonl")) as fh:
        rows = [json.loads(l) for l in fh if l.strip()]
    return [r["question"] for r in rows if r["corpus"] == corpus and r["split"] != "test"]


def queries_from(bundle, fixed=QUERIES):
    """200 queries: the fixed developer questions, then document titles in path order."""
    out = subprocess.run([BUILDER, "dump", bundle], capture_output=True, check=True).stdout.decode()
    titles = []
    for line in out.splitlines():
        c = json.loads(line)
        if c["chunkIndex"] == 0 and c["title"].strip() and len(titles) < 1000:
            titles.append(c["title"])
    return (fixed + titles[:: max(1, len(titles) // max(1, 200 - len(fixed)))])[:200]


def cli(bundle, queries, modes):
    print(f"docloupe search --bundle {os.path.basename(bundle)}   one process per query ({QUERIES_COLD} queries):")
    # Past 500,000 chunks the CLI keeps the decoded vectors for the next process
    # ($DOCLOUPE_CACHE/vectors): a fresh cache here (the models linked in), so the first
    # semantic or hybrid call decodes and writes them and is reported apart.
    with tempfile.TemporaryDirectory() as kept:
        os.symlink(os.path.join(CACHE, "models"), os.path.join(kept, "models"))
        env = dict(os.environ, DOCLOUPE_CACHE=kept)
        vectors = os.path.join(kept, "vectors")
        for mode in modes:
            walls, rss = [], []
            before = os.path.isdir(vectors) and os.listdir(vectors)
            for q in queries[:QUERIES_COLD]:
                _, wall, peak = run([SEARCH, "search", "--bundle", bundle, "--mode", mode, q], env=env)
                walls.append(wall)
                rss.append(peak)
            wrote = not before and os.path.isdir(vectors) and os.listdir(vectors)
            first = f" (the first, which kept the vectors: {walls[0]:.2f} s)" if wrote else ""
            print(f"  {mode:<9} wall median {statistics.median(walls):.2f} s, max {max(walls):.2f} s{first}; "
                  f"peak RSS median {statistics.median(rss):.0f} MiB, max {max(rss):.0f} MiB")
        print(f"docloupe search --jsonl   {len(queries)} queries in one process, engine totalMs"
              f"{' (the vectors kept by the calls above)' if os.path.isdir(vectors) else ''}:")
        for mode in modes:
            requests = "".join(json.dumps({"query": q, "mode": mode}) + "\n" for q in queries)
            out, wall, peak = run([SEARCH, "search", "--bundle", bundle, "--jsonl"], requests, env=env)
            times = [json.loads(l)["timings"]["totalMs"] for l in out.splitlines() if l.strip()]
            print(f"  {mode:<9} p50 {pct(times, 0.5):.1f} ms, p95 {pct(times, 0.95):.1f} ms, max {max(times):.1f} ms "
                  f"({wall:.1f} s in all, load included; peak RSS {peak:.0f} MiB)")


def mcp(bundle, queries, mode):
    """search_docs over stdio, one call at a time: round trips and the server's peak RSS. With
    a fresh vector cache (see `cli`), then once more over the vectors the first server kept."""
    with tempfile.TemporaryDirectory() as kept:
        os.symlink(os.path.join(CACHE, "models"), os.path.join(kept, "models"))
        env = dict(os.environ, DOCLOUPE_CACHE=kept)
        serve(bundle, queries, mode, env, "")
        if os.path.isdir(os.path.join(kept, "vectors")) and os.listdir(os.path.join(kept, "vectors")):
            serve(bundle, queries[:1], mode, env, ", the vectors kept by the server before")


def serve(bundle, queries, mode, env, note):
    proc = subprocess.Popen([SEARCH, "mcp", "--bundle", bundle, "--rate-limit", "0"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env)

    def call(msg):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        if "id" not in msg:
            return None
        while True:
            reply = json.loads(proc.stdout.readline())
            if reply.get("id") == msg["id"]:
                return reply

    started = time.monotonic()
    call({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench-scale", "version": "1"}}})
    call({"jsonrpc": "2.0", "method": "notifications/initialized"})
    trips, errors = [], 0
    for i, q in enumerate(queries, 1):
        t = time.monotonic()
        reply = call({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                      "params": {"name": "search_docs", "arguments": {"query": q, "mode": mode}}})
        trips.append((time.monotonic() - t) * 1000)
        if i == 1:
            first = time.monotonic() - started
        errors += bool(reply.get("error") or reply.get("result", {}).get("isError"))
    with open(f"/proc/{proc.pid}/status") as fh:
        peak = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) / 1024
    proc.stdin.close()
    proc.wait()
    where = "split folder" if os.path.isdir(bundle) else "bundle file"
    print(f"docloupe mcp      {len(queries)} search_docs calls ({mode}) over the {where}, one at a time: round trip p50 "
          f"{pct(trips, 0.5):.1f} ms, p95 {pct(trips, 0.95):.1f} ms; first answer {first:.1f} s after start "
          f"(load included{note}); {errors} errors; server peak RSS {peak:.0f} MiB")


def main():
    args = sys.argv[1:]
    versions = int(args[args.index("--versions") + 1]) if "--versions" in args else 10
    embeddings = "--embeddings" in args
    if not os.path.exists(BUILDER):
        sys.exit("build first: cargo build --release --workspace")
    work = os.path.join(CACHE, "scale")
    t = time.monotonic()
    fixed = QUERIES
    if "--copies" in args:
        corpus, copies = args[args.index("--copies") + 1].rsplit(":", 1)
        fixed = questions_of(corpus) or QUERIES
        work = os.path.join(work, f"copies-{corpus}-{copies}")
        docs = os.path.join(work, "docs")
        make_copies(docs, corpus, int(copies))
    else:
        docs = os.path.join(work, "docs")
        make_collection(docs, versions)
    print(f"collection        {docs} ({time.monotonic() - t:.0f} s to make or check)")
    bundle = os.path.join(work, "hybrid.bundle" if embeddings else "lexical.bundle")
    extra = [] if embeddings else ["--no-embeddings"]
    out, wall, peak = run([BUILDER, "build", docs, "--out", bundle, "--quiet", "--force-rebuild", *extra])
    report = json.loads(out)
    n_docs, chunks = report["documentsProcessed"], report["chunksWritten"]
    print(f"\n== bench-scale: {n_docs:,} documents, {chunks:,} chunks ({len(report['warnings'])} warnings)")
    if embeddings:
        print(f"embeddings        {report['chunksEmbedded']:,} texts through {report['embedModel']}, "
              f"{report['chunksShared']:,} chunks sharing their vector")
    print(f"build             {wall:.1f} s ({chunks / wall:,.0f} chunks/s, "
          f"{'embeddings' if embeddings else 'no embeddings'}, {os.cpu_count()} cores); peak RSS {peak:,.0f} MiB "
          f"(target 2,048)")
    info = json.loads(subprocess.run([BUILDER, "inspect", bundle], capture_output=True, check=True).stdout)
    print(f"{'bundle part':<12} {'raw bytes':>14} {'gzip bytes':>14}" + (f" {'brotli bytes':>14}" if "--brotli" in args else ""))
    totals = [0, 0, 0]
    with open(bundle, "rb") as fh:
        for s in info["sections"]:
            fh.seek(s["offset"])
            raw = fh.read(s["bytes"])
            sizes = [len(raw), len(gzip.compress(raw, 6, mtime=0)), brotli(raw) if "--brotli" in args else 0]
            totals = [a + b for a, b in zip(totals, sizes)]
            print(f"{s['kind']:<12} {sizes[0]:>14,} {sizes[1]:>14,}" + (f" {sizes[2]:>14,}" if "--brotli" in args else ""))
    print(f"{'sections':<12} {totals[0]:>14,} {totals[1]:>14,}" + (f" {totals[2]:>14,}" if "--brotli" in args else "")
          + f"   (the file: {os.path.getsize(bundle):,} bytes)")
    split = os.path.join(work, "edge", "docs")
    shutil.rmtree(os.path.dirname(split), ignore_errors=True)
    out, wall, peak = run([BUILDER, "split", bundle, "--out", split])
    r = json.loads(out)
    largest = max(os.path.getsize(os.path.join(split, f)) for f in os.listdir(split))
    kinds = ", ".join(f"{k} {r[k]['files']:,}" for k in ("fragments", "lexical", "vocabulary", "vectors") if r[k]["files"])
    print(f"split layout      {r['files']:,} files ({kinds}) in {wall:.1f} s, peak RSS {peak:,.0f} MiB; "
          f"largest file {largest:,} B; Cloudflare: {'within' if r['files'] <= 20_000 else 'over'} Free's 20,000 "
          f"files, {'within' if r['files'] <= 100_000 else 'over'} Paid's 100,000; "
          f"{'every file within' if largest <= 25 * 2**20 else 'a file over'} 25 MiB")
    queries = queries_from(bundle, fixed)
    modes = ["fulltext", "hybrid"] if embeddings else ["fulltext"]
    cli(bundle, queries, modes)
    cli(split, queries, modes)
    for mode in modes:
        mcp(bundle, queries, mode)
        mcp(split, queries, mode)
    if "--browser" in args and embeddings:
        model = info["embedding"]["id"]
        where = os.path.join(CACHE, "models")
        model_dir = next(os.path.join(where, d) for d in sorted(os.listdir(where))
                         if json.load(open(os.path.join(where, d, "manifest.json")))["id"] == model)
        with open(os.path.join(work, "queries-browser.txt"), "w") as fh:
            fh.write("\n".join(queries[:40]) + "\n")
        subprocess.run(["node", os.path.join(ROOT, "tests", "bench", "web", "scale.mjs"), "--split", split,
                        "--model-dir", model_dir, "--queries", os.path.join(work, "queries-browser.txt")], check=True)
    if "--no-edge" not in args:
        with open(os.path.join(work, "queries.txt"), "w") as fh:
            fh.write("\n".join(fixed) + "\n")
        with open(os.path.join(work, "queries-wide.txt"), "w") as fh:
            fh.write("\n".join(queries) + "\n")
        env = dict(os.environ, DEMO_DIR=os.path.join(work, "edge"), LOAD_QUERIES=os.path.join(work, "queries.txt"),
                   MEMORY_QUERIES=os.path.join(work, "queries-wide.txt"))
        print("the Worker on plain workerd over the split layout (tests/edge/bench.sh):", flush=True)
        subprocess.run(["bash", os.path.join(ROOT, "tests", "edge", "bench.sh")], env=env, check=True)


if __name__ == "__main__":
    main()
