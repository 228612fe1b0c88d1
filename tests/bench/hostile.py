#!/usr/bin/env python3
"""Long PDFs and a folder of hostile inputs through the real builder (make bench-hostile).

Prints, for PDFs of 1,000 to 25,000 one-line pages, the build's wall time and peak memory (the
builder and its converter child, from wait4), and the same for a folder of issue 59's hostile
inputs beside good pages. Figures only: nothing here asserts a time.

Usage, from the repository root: python3 -m tests.bench.hostile
"""

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILDER = os.path.join(ROOT, "target", "release", "index-builder")


def pdf(pages):
    """A PDF of `pages` pages, each one line of Helvetica, the font and media box inherited."""
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(pages))
        + b"] /Count %d /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> >>" % pages,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i in range(pages):
        text = b"BT /F1 12 Tf 72 700 Td (Page %d: how the quota of a workspace is counted) Tj ET" % i
        objs.append(b"<< /Type /Page /Parent 2 0 R /Contents %d 0 R >>" % (5 + 2 * i))
        objs.append(b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offsets:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def build(folder, out, *extra):
    """Runs one build; returns (seconds, peak RSS MiB, report)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [BUILDER, "build", folder, "--out", out, "--no-embeddings", "--quiet", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    report = json.loads(stdout) if os.waitstatus_to_exitcode(status) == 0 else None
    return seconds, usage.ru_maxrss / 1024, report


def hostile_folder(root):
    docs = os.path.join(root, "hostile")
    os.makedirs(docs)
    write = lambda name, data: open(os.path.join(docs, name), "wb").write(
        data if isinstance(data, bytes) else data.encode()
    )
    write("good.md", "# Good\n\nThe cache keeps answers near readers.\n")
    long = "x" * 65536
    write("long-title.md", f"---\ntitle: {long}\n---\n" + "".join(f"## s{i}\n\nbody {i}\n\n" for i in range(200)))
    header = "|" + "|".join("h" * 1 for _ in range(362)) + "|\n|" + "|".join("-" for _ in range(362)) + "|\n"
    write("tables.md", "# T\n\n" + (header + "x\n" * 724 + "\n") * 350)
    write("yaml.md", "---\nx:\n" + "- " * 20000 + "y\n---\n# Y\n\nbody\n")
    write("cr.md", "# Classic\r\rtext\r")
    write("manual.pdf", pdf(10_000))
    with open(os.path.join(docs, "sparse.pdf"), "wb") as f:
        f.truncate(2 << 30)
    write("rtl-\u202edm.txt", "tricky\n")
    return docs


def main():
    if not os.path.exists(BUILDER):
        sys.exit("build the release binaries first (make build)")
    with tempfile.TemporaryDirectory() as tmp:
        print("== long PDFs (one line a page, --no-embeddings)")
        print(f"{'pages':>8} {'seconds':>8} {'peak MiB':>9} {'chunks':>7}")
        for pages in [1_000, 4_000, 10_000, 25_000]:
            folder = os.path.join(tmp, f"pdf{pages}")
            os.makedirs(folder)
            open(os.path.join(folder, "manual.pdf"), "wb").write(pdf(pages))
            seconds, rss, report = build(folder, os.path.join(tmp, f"pdf{pages}.bundle"))
            chunks = report["chunksWritten"] if report else "failed"
            print(f"{pages:>8} {seconds:>8.2f} {rss:>9.0f} {chunks:>7}")
        print("== issue 59's hostile inputs beside a good page")
        docs = hostile_folder(tmp)
        seconds, rss, report = build(docs, os.path.join(tmp, "hostile.bundle"))
        print(f"{seconds:.2f} s, peak {rss:.0f} MiB, {report['documentsProcessed']} documents read")
        for w in report["warnings"]:
            print("  warning:", w[:160])


if __name__ == "__main__":
    main()
