#!/usr/bin/env python3
"""Build benchmark: index real documentation corpora and print build and query figures.

For each corpus in ../shared/corpora (extracted to a temp dir, never into the repo) it runs the
release `index-builder` and prints:
- documents, chunks, build time, chunks/s, peak RSS of the build;
- the build's embedding work as a fraction of this machine's matmul peak
  (`examples/build_efficiency`, which `make bench` builds);
- bundle bytes (raw, gzip 6, brotli 11 through Node's zlib) per section: docs (metadata),
  text (chunk text), lexical (terms + postings), vectors (int8 vectors + compact codes);
- the split layout (`index-builder split`): file count, shard bytes, largest shard;
- `docloupe search --jsonl` latency per mode over the first 200 documents' titles as queries
  (p50 / p95 of the engine's own `timings.totalMs`, one query at a time after one load);
- an incremental rebuild after changing one file (a paragraph appended to the first markdown
  file) over a copy of the bundle: wall time, chunks embedded and reused, speed-up.

Usage, from the repository root (`make bench`):
  python3 -m tests.bench.build_bench [--lexical] [corpus-name ...]   (default: both below)
`--lexical` builds without embeddings (`--no-embeddings`: minutes instead of ~40 min for
en-large-cpp-docs on 2 cores; no matmul, semantic or hybrid figures).
Corpora: see ../shared/corpora/SOURCES.md for sources and licenses.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "corpora")
BUILDER = os.path.join(ROOT, "target", "release", "index-builder")
SEARCH = os.path.join(ROOT, "target", "release", "docloupe")
EFFICIENCY = os.path.join(ROOT, "target", "release", "examples", "build_efficiency")
BROTLI_JS = ("const z=require('zlib');const b=require('fs').readFileSync(0);"
             "process.stdout.write(String(z.brotliCompressSync(b,{params:{[z.constants.BROTLI_PARAM_QUALITY]:11,"
             "[z.constants.BROTLI_PARAM_SIZE_HINT]:b.length}}).length))")
DEFAULT = ["en-small-rust-book", "en-large-cpp-docs"]


def run_build(docs, out, extra):
    """Runs one build; returns (IngestResult, wall seconds, peak RSS in KiB of that process)."""
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        start = time.monotonic()
        proc = subprocess.Popen([BUILDER, "build", docs, "--out", out, "--quiet", *extra], stdout=so, stderr=se)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        if proc.returncode != 0:
            sys.exit(f"index-builder failed on {docs}:\n{se.read().decode()}")
        # ru_maxrss is in KiB on Linux.
        return json.loads(so.read()), wall, usage.ru_maxrss


def section_sizes(bundle):
    info = json.loads(subprocess.run([BUILDER, "inspect", bundle], capture_output=True, text=True, check=True).stdout)
    data = open(bundle, "rb").read()
    sizes = {}
    for s in info["sections"]:
        raw = data[s["offset"]: s["offset"] + s["bytes"]]
        sizes[s["kind"]] = (len(raw), len(gzip.compress(raw, 6, mtime=0)), brotli(raw))
    sizes["total"] = (len(data), len(gzip.compress(data, 6, mtime=0)), brotli(data))
    return info, sizes


def brotli(data):
    """Brotli quality 11 size (Node's zlib; Python has no brotli in its standard library)."""
    out = subprocess.run(["node", "-e", BROTLI_JS], input=data, capture_output=True, check=True)
    return int(out.stdout)


def split_figures(bundle, tmp):
    out = os.path.join(tmp, "split")
    report = json.loads(subprocess.run([BUILDER, "split", bundle, "--out", out], capture_output=True,
                                       text=True, check=True).stdout)
    shards = {k: report[k] for k in ("fragments", "lexical", "vocabulary", "vectors") if report[k]["files"]}
    # The largest file of the layout, which a static host caps (Cloudflare: 25 MiB).
    largest = max(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    shutil.rmtree(out)
    return report["files"], shards, largest


def query_latency(bundle, hybrid):
    """p50 / p95 of timings.totalMs per mode, the first 200 document titles as queries."""
    dump = subprocess.run([BUILDER, "dump", bundle], capture_output=True, text=True, check=True).stdout
    titles = []
    for line in dump.splitlines():
        c = json.loads(line)
        if c["chunkIndex"] == 0 and c["title"].strip():
            titles.append(c["title"])
        if len(titles) == 200:
            break
    figures = {}
    for mode in (["fulltext", "semantic", "hybrid"] if hybrid else ["fulltext"]):
        requests = "".join(json.dumps({"query": t, "mode": mode}) + "\n" for t in titles)
        out = subprocess.run([SEARCH, "search", "--bundle", bundle, "--jsonl"], input=requests,
                             capture_output=True, text=True, check=True).stdout
        times = sorted(json.loads(l)["timings"]["totalMs"] for l in out.splitlines() if l.strip())
        figures[mode] = (times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.95))])
    return len(titles), figures


def first_markdown(root):
    """The first markdown file under root in path order (what a docs edit usually touches)."""
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".md") and not any(p.startswith(".") for p in os.path.relpath(os.path.join(d, f), root).split(os.sep)):
                return os.path.join(d, f)
    sys.exit(f"no markdown file under {root}")


def main():
    args = sys.argv[1:]
    extra = ["--no-embeddings"] if "--lexical" in args else []
    names = [a for a in args if a != "--lexical"] or DEFAULT
    if not os.path.exists(BUILDER):
        sys.exit("build first: cargo build --release --workspace")
    with tempfile.TemporaryDirectory(prefix="docloupe-bench-") as tmp:
        for name in names:
            archive = os.path.join(SHARED, f"{name}.tar.gz")
            if not os.path.exists(archive):
                sys.exit(f"missing corpus {archive}")
            dest = os.path.join(tmp, name)
            os.makedirs(dest)
            with tarfile.open(archive) as t:
                t.extractall(dest, filter="data")
            out = os.path.join(tmp, f"{name}.bundle")
            report, wall, peak = run_build(dest, out, extra)
            info, sizes = section_sizes(out)
            docs, chunks = report["documentsProcessed"], report["chunksWritten"]
            print(f"\n== {name} ({len(report['warnings'])} warnings)")
            print(f"documents        {docs}")
            print(f"chunks           {chunks}")
            print(f"build time       {wall:.1f} s  ({chunks / wall:.1f} chunks/s, {'no embeddings' if extra else f'embeddings on {os.cpu_count()} cores'})")
            print(f"peak RSS         {peak / 1024:.0f} MiB")
            print(f"vector index     {info.get('vectorIndex') or 'none (built without embeddings)'}")
            if info["flags"]["hybrid"] and os.path.exists(EFFICIENCY):
                eff = subprocess.run([EFFICIENCY, out, f"{wall:.3f}"], capture_output=True, text=True,
                                     check=True).stdout.strip().splitlines()
                print(f"matmul           {eff[-2]}\n                 {eff[-1]}")
            elif info["flags"]["hybrid"]:
                print("matmul           (build examples/build_efficiency for the fraction of the matmul peak)")
            print(f"{'bundle part':<12} {'raw bytes':>12} {'gzip bytes':>12} {'brotli bytes':>13} {'raw/doc':>10} {'brotli/doc':>10}")
            for part in ["docs", "text", "lexical", "vectors", "total"]:
                if part in sizes:
                    raw, gz, br = sizes[part]
                    print(f"{part:<12} {raw:>12,} {gz:>12,} {br:>13,} {raw / docs:>10,.0f} {br / docs:>10,.0f}")
            files, shards, largest = split_figures(out, tmp)
            print(f"split layout     {files:,} files: " + ", ".join(
                f"{k} {v['files']:,} ({v['bytes']:,} B, largest {v['largest']:,})" for k, v in shards.items())
                + f"; largest file {largest:,} B (limit 25 MiB: {'ok' if largest <= 25 * 2**20 else 'over'})")
            n, latency = query_latency(out, info["flags"]["hybrid"])
            print(f"query latency    {n} titles as queries, engine totalMs p50 / p95: " + ", ".join(
                f"{mode} {p50:.1f} / {p95:.1f} ms" for mode, (p50, p95) in latency.items()))
            changed = first_markdown(dest)
            with open(changed, "a", encoding="utf-8") as f:
                f.write("\n\nAn added paragraph: the incremental build embeds this file's chunks again.\n")
            incremental = out + ".incremental"
            shutil.copyfile(out, incremental)
            r2, wall2, _ = run_build(dest, incremental, ["--incremental", *extra])
            print(f"incremental      {wall2:.1f} s after changing 1 file ({os.path.relpath(changed, dest)}): "
                  f"{r2['chunksEmbedded']} chunks embedded, {r2['chunksReused']} reused; "
                  f"{wall / wall2:.1f}x faster than the clean build")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
