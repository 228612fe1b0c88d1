#!/usr/bin/env python3
"""Build benchmark: index real documentation corpora and print build figures.

For each corpus in ../shared/corpora (extracted to a temp dir, never into the repo) it runs the
release `index-builder` and prints documents, chunks, chunks/s, peak RSS, and bundle bytes
(raw and gzip) per document, split into the bundle's sections: docs (metadata), text (chunk
text), lexical (terms + postings), vectors (int8 vectors + graph). Then it changes one file
(a paragraph appended to the first markdown file) and rebuilds with `--incremental` over a copy
of the bundle: wall time, chunks embedded and reused, and the speed-up over the clean build.

Usage: python3 tests/bench/build_bench.py [corpus-name ...]   (default: both below)
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
        sizes[s["kind"]] = (len(raw), len(gzip.compress(raw, 6, mtime=0)))
    sizes["total"] = (len(data), len(gzip.compress(data, 6, mtime=0)))
    return info, sizes


def first_markdown(root):
    """The first markdown file under root in path order (what a docs edit usually touches)."""
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".md") and not any(p.startswith(".") for p in os.path.relpath(os.path.join(d, f), root).split(os.sep)):
                return os.path.join(d, f)
    sys.exit(f"no markdown file under {root}")


def main():
    names = sys.argv[1:] or DEFAULT
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
            report, wall, peak = run_build(dest, out, [])
            info, sizes = section_sizes(out)
            docs, chunks = report["documentsProcessed"], report["chunksWritten"]
            print(f"\n== {name} ({len(report['warnings'])} warnings)")
            print(f"documents        {docs}")
            print(f"chunks           {chunks}")
            print(f"build time       {wall:.1f} s  ({chunks / wall:.1f} chunks/s, embeddings on {os.cpu_count()} cores)")
            print(f"peak RSS         {peak / 1024:.0f} MiB")
            print(f"vector index     {'HNSW' if info['flags']['hnsw'] else 'exact scan'}")
            print(f"{'bundle part':<12} {'raw bytes':>12} {'gzip bytes':>12} {'raw/doc':>10} {'gzip/doc':>10}")
            for part in ["docs", "text", "lexical", "vectors", "total"]:
                if part in sizes:
                    raw, gz = sizes[part]
                    print(f"{part:<12} {raw:>12,} {gz:>12,} {raw / docs:>10,.0f} {gz / docs:>10,.0f}")
            changed = first_markdown(dest)
            with open(changed, "a", encoding="utf-8") as f:
                f.write("\n\nAn added paragraph: the incremental build embeds this file's chunks again.\n")
            incremental = out + ".incremental"
            shutil.copyfile(out, incremental)
            r2, wall2, _ = run_build(dest, incremental, ["--incremental"])
            print(f"incremental      {wall2:.1f} s after changing 1 file ({os.path.relpath(changed, dest)}): "
                  f"{r2['chunksEmbedded']} chunks embedded, {r2['chunksReused']} reused; "
                  f"{wall / wall2:.1f}x faster than the clean build")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
