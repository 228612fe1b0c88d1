//! Spec (issue 59): hostile input, round two. Each test rebuilds one way an independent probe
//! found to abort a build, write a bundle no reader loads, hang a converter, drop documents
//! silently, or reach a terminal as escape codes; each failed before its fix.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `index-builder build DIR --out OUT --no-embeddings --quiet EXTRA…`, stopped after
/// `seconds` (a build that blocks is a failure, not a hung test run). Returns the output.
fn build_within(dir: &Path, out: &Path, extra: &[&str], seconds: u64) -> Output {
    let child = Command::new(common::index_builder_bin())
        .arg("build")
        .arg(dir)
        .arg("--out")
        .arg(out)
        .args(["--no-embeddings", "--quiet"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("index-builder runs");
    wait_within(child, seconds)
}

fn wait_within(mut child: std::process::Child, seconds: u64) -> Output {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the command did not finish within {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn report(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "the build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("IngestResult JSON")
}

fn warning_for(report: &serde_json::Value, file: &str) -> String {
    common::warnings(report)
        .into_iter()
        .find(|w| w.starts_with(file))
        .unwrap_or_else(|| panic!("no warning for {file}: {report}"))
}

/// A temp folder with `docs/good.md`; returns (tempdir, docs, out bundle path).
fn docs_with_a_good_page() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("good.md"),
        "# Good\n\nThe cache keeps answers near readers.\n",
    )
    .unwrap();
    let out = tmp.path().join("docs.bundle");
    (tmp, docs, out)
}

/// `docloupe search --bundle B --mode fulltext ARGS… QUERY`: its stdout (it must succeed).
fn search(bundle: &Path, query: &str, args: &[&str]) -> String {
    let out = common::docloupe_search(bundle)
        .args(["--mode", "fulltext"])
        .args(args)
        .arg(query)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "search failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

use common::ask_jsonl as ask;

/// Finding 1: a 64 KiB title over 200 sections (and 16 KiB titles over 20,000) built with rc 0
/// into a bundle every reader refused ("chunk breadcrumbs expand far past their section's
/// size"). Labels are bounded now, and the bundle loads as a file and as a split folder.
#[test]
fn a_huge_title_over_many_sections_builds_a_bundle_every_reader_loads() {
    let (tmp, docs, out) = docs_with_a_good_page();
    let long = "x".repeat(64 * 1024);
    let mut a = format!("---\ntitle: {long}\n---\n# {long}\n\n");
    for i in 0..200 {
        a.push_str(&format!("## section {i}\n\nbody of section number{i}\n\n"));
    }
    std::fs::write(docs.join("a.md"), a).unwrap();
    let mut b = format!("---\ntitle: {}\n---\n", "y".repeat(16 * 1024));
    for i in 0..20_000 {
        b.push_str(&format!("## s{i}\n\nbody{i}\n\n"));
    }
    std::fs::write(docs.join("b.md"), b).unwrap();
    let r = report(&build_within(&docs, &out, &[], 120));
    assert_eq!(r["documentsProcessed"], 3, "{r}");
    let found = ask(
        &out,
        serde_json::json!({"query": "number199", "mode": "fulltext"}),
    );
    let title = found["results"][0]["title"].as_str().unwrap();
    assert!(
        title.chars().count() <= 257 && title.ends_with('…'),
        "{title}"
    );
    assert!(search(&out, "body19999", &[]).contains("b.md"));
    let split = tmp.path().join("split");
    let cut = Command::new(common::index_builder_bin())
        .arg("split")
        .arg(&out)
        .arg("--out")
        .arg(&split)
        .output()
        .unwrap();
    assert!(
        cut.status.success(),
        "{}",
        String::from_utf8_lossy(&cut.stderr)
    );
    assert!(search(&split, "number199", &[]).contains("a.md"));
}

/// Finding 2: 1 MB of tables with 362-column headers over one-character rows made the
/// markdown parser ask for 6.3 GB (every short row is padded to its header's width), in the
/// builder's own process. Such tables are read as plain text now, with a warning.
#[test]
fn tables_that_would_pad_to_millions_of_cells_are_read_as_text() {
    let (tmp, docs, out) = docs_with_a_good_page();
    let header = format!(
        "|{}|\n|{}|\n",
        vec!["h"; 362].join("|"),
        vec!["-"; 362].join("|")
    );
    let table = format!("{header}{}\n", "x\n".repeat(724));
    let page = format!("# Tables\n\nzebracorn\n\n{}", table.repeat(350));
    assert!(page.len() > 1_000_000);
    std::fs::write(docs.join("tables.md"), &page).unwrap();
    let r = report(&build_within(&docs, &out, &[], 120));
    assert_eq!(r["documentsProcessed"], 2, "{r}");
    assert!(warning_for(&r, "tables.md").contains("cells"), "{r}");
    assert!(search(&out, "zebracorn", &[]).contains("tables.md"));
    // The site renders the same page the same way, within the same bound.
    let site = Command::new(common::index_builder_bin())
        .arg("site")
        .arg(&docs)
        .arg("--out")
        .arg(tmp.path().join("site"))
        .output()
        .unwrap();
    assert!(
        site.status.success(),
        "{}",
        String::from_utf8_lossy(&site.stderr)
    );
    // An ordinary table is still a table.
    std::fs::write(
        docs.join("small.md"),
        "# Small\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    )
    .unwrap();
    let r = report(&build_within(&docs, &out, &[], 120));
    assert!(
        !common::warnings(&r)
            .iter()
            .any(|w| w.starts_with("small.md")),
        "{r}"
    );
}

/// Finding 3: 10 KB of nested `- ` (or a complex `? - - -` key) overflowed a worker's stack
/// in the YAML loader and aborted the build. Front matter that nests deeper than a small
/// bound is not loaded (its simple lines are), with a warning.
#[test]
fn deeply_nested_front_matter_is_refused_before_it_is_loaded() {
    let (_tmp, docs, out) = docs_with_a_good_page();
    let deep = "- ".repeat(20_000);
    std::fs::write(
        docs.join("seq.md"),
        format!("---\ntitle: Deep\nx:\n{deep}y\n---\n# Deep\n\nnested body\n"),
    )
    .unwrap();
    std::fs::write(
        docs.join("key.md"),
        format!("---\n? {deep}y\n: z\n---\n# Key\n\nkey body\n"),
    )
    .unwrap();
    let flow = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    std::fs::write(
        docs.join("flow.md"),
        format!("---\nx: {flow}\n---\n# Flow\n\nflow body\n"),
    )
    .unwrap();
    let r = report(&build_within(&docs, &out, &[], 60));
    assert_eq!(r["documentsProcessed"], 4, "{r}");
    assert!(warning_for(&r, "seq.md").contains("nests deeper"), "{r}");
    assert!(warning_for(&r, "key.md").contains("nests deeper"), "{r}");
    assert!(!warning_for(&r, "flow.md").is_empty(), "{r}");
    // The simple lines still count.
    assert!(search(&out, "nested body", &[]).contains("1. Deep"));
}

/// Finding 4: `--out /dev/null` replaced the device with a file (as root), `--out FIFO`
/// blocked forever, and any existing file shorter than 8 bytes was replaced without
/// `--force-rebuild`. `--out` must be a regular file or nothing.
#[test]
#[cfg(unix)]
fn out_must_be_a_regular_file_or_nothing() {
    let (tmp, docs, _) = docs_with_a_good_page();
    let fifo = tmp.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let link = tmp.path().join("link.bundle");
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &link).unwrap();
    for (out, why) in [
        (fifo.clone(), "not a regular file"),
        (link.clone(), "not a regular file"),
        (tmp.path().to_path_buf(), "not a regular file"),
    ] {
        let o = build_within(&docs, &out, &[], 20);
        assert!(!o.status.success(), "{} was accepted", out.display());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(why), "{err}");
    }
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo_like());
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    // A short file that is not a bundle is someone's: refused, untouched; replaced only
    // with --force-rebuild. An empty one holds nothing to lose.
    let short = tmp.path().join("short.bundle");
    std::fs::write(&short, b"abc").unwrap();
    let o = build_within(&docs, &short, &[], 20);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a docloupe bundle"));
    assert_eq!(std::fs::read(&short).unwrap(), b"abc");
    report(&build_within(&docs, &short, &["--force-rebuild"], 20));
    assert!(std::fs::read(&short).unwrap().starts_with(b"DOCLOUPE"));
    let empty = tmp.path().join("empty.bundle");
    std::fs::write(&empty, b"").unwrap();
    report(&build_within(&docs, &empty, &[], 20));
}

/// `FileType::is_fifo` under a name that reads in the test above.
trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}

#[cfg(unix)]
impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_fifo()
    }
}

/// The peak resident memory of the children this process has waited for, in KiB (Linux).
#[cfg(target_os = "linux")]
fn children_peak_rss_kib() -> i64 {
    // SAFETY: getrusage only writes the struct it is given.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss
    }
}

/// Finding 5: a sparse 2 GiB file cost 2 GiB of memory before "over the limit", and the
/// previous bundle at `--out` was read the same way. The size is checked on the opened file,
/// and at most the limit (or the bundle's header) is read.
#[test]
#[cfg(target_os = "linux")]
fn a_sparse_file_over_the_limit_is_never_read() {
    let (tmp, docs, out) = docs_with_a_good_page();
    let huge = std::fs::File::create(docs.join("huge.pdf")).unwrap();
    huge.set_len(2 << 30).unwrap();
    drop(huge);
    let r = report(&build_within(&docs, &out, &[], 60));
    assert!(warning_for(&r, "huge.pdf").contains("over the"), "{r}");
    // A bundle's header, then 2 GiB of nothing, at --out: its header is read, not the rest.
    let previous = tmp.path().join("previous.bundle");
    let mut bytes = std::fs::read(&out).unwrap();
    bytes.truncate(docloupe::bundle::HEADER_START + 64);
    std::fs::write(&previous, &bytes).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&previous)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    std::fs::remove_file(docs.join("huge.pdf")).unwrap();
    report(&build_within(&docs, &previous, &[], 60));
    let peak = children_peak_rss_kib();
    assert!(peak < 512 * 1024, "a build peaked at {peak} KiB");
}

/// A lopdf document of `pages` pages of one line each, every page inheriting the font and the
/// media box from the page tree's root; `self_parent` makes that root its own `/Parent` and
/// drops the media box (the 554-byte probe).
fn pdf_with_pages(pages: usize, self_parent: bool) -> Vec<u8> {
    use lopdf::{dictionary, Document, Object, Stream};
    let mut doc = Document::with_version("1.5");
    let root = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let mut kids = Vec::with_capacity(pages);
    for i in 0..pages {
        let text = format!("BT /F1 12 Tf 72 700 Td (page {i} of the manual about quokkas) Tj ET");
        let content = doc.add_object(Stream::new(dictionary! {}, text.into_bytes()));
        kids.push(Object::Reference(doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => root, "Contents" => content,
        })));
    }
    let mut tree = dictionary! {
        "Type" => "Pages",
        "Kids" => kids,
        "Count" => pages as i64,
        "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
    };
    if self_parent {
        tree.set("Parent", root);
    } else {
        tree.set("MediaBox", vec![0.into(), 0.into(), 595.into(), 842.into()]);
    }
    doc.objects.insert(root, Object::Dictionary(tree));
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => root });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// Finding 6: a PDF whose page-tree node is its own `/Parent` (its page without a media box)
/// spun the extractor until the converter was stopped. The tree is read with each node once;
/// the page is read.
#[test]
fn a_page_tree_that_is_its_own_parent_is_read_at_once() {
    let (_tmp, docs, out) = docs_with_a_good_page();
    std::fs::write(docs.join("loop.pdf"), pdf_with_pages(1, true)).unwrap();
    let r = report(&build_within(&docs, &out, &["--convert-timeout", "30"], 60));
    assert_eq!(r["documentsProcessed"], 2, "{r}");
    assert!(search(&out, "quokkas", &[]).contains("loop.pdf"));
}

/// Finding 7: extraction was quadratic in pages (pdf-extract fetched the page list again for
/// each page): 10,000 pages took about a minute, 25,000 never finished, so long manuals and
/// standards were dropped. 20,000 pages now convert well inside a 60 s limit (quadratic, they
/// took about 140 s on the machine this was measured on).
#[test]
fn a_pdf_of_twenty_thousand_pages_is_indexed() {
    let (_tmp, docs, out) = docs_with_a_good_page();
    std::fs::write(docs.join("manual.pdf"), pdf_with_pages(20_000, false)).unwrap();
    let r = report(&build_within(
        &docs,
        &out,
        &["--convert-timeout", "60"],
        180,
    ));
    assert_eq!(r["documentsProcessed"], 2, "{r}");
    let hits = ask(
        &out,
        serde_json::json!({"query": "page 19999 quokkas", "mode": "fulltext"}),
    );
    let top = &hits["results"][0];
    assert_eq!(top["documentPath"], "manual.pdf", "{hits}");
    assert!(top["pageEnd"].as_u64().unwrap() >= 20_000, "{top}");
}

/// Finding 8: a markdown page with CR-only line ends (`# Title\r\rtext`) was one heading with
/// no body, skipped as "no text". Lone CRs end lines, and the lines are numbered so.
#[test]
fn cr_only_line_ends_are_line_ends() {
    let (_tmp, docs, out) = docs_with_a_good_page();
    std::fs::write(
        docs.join("mac.md"),
        "# Classic\r\rwombat text here\r\r## Later\r\rsecond wombat\r",
    )
    .unwrap();
    let r = report(&build_within(&docs, &out, &[], 30));
    assert_eq!(r["documentsProcessed"], 2, "{r}");
    let hits = ask(
        &out,
        serde_json::json!({"query": "second wombat", "mode": "fulltext"}),
    );
    let top = &hits["results"][0];
    assert_eq!(top["documentPath"], "mac.md");
    assert_eq!(top["anchor"], "later");
    assert_eq!(top["lineStart"], 7, "{top}");
}

/// Finding 9: `docloupe search` printed escape sequences from documents raw (window title,
/// clear screen, OSC 52 clipboard, OSC 8 links; bidi overrides), in text and markdown, even
/// to a pipe. They are replaced in the human formats.
#[test]
fn search_output_never_carries_a_documents_escape_sequences() {
    let (_tmp, docs, out) = docs_with_a_good_page();
    let nasty = "\u{1b}]0;pwned\u{7} \u{1b}[2J \u{1b}]52;c;aGk=\u{7} \u{1b}]8;;http://x\u{1b}\\ \u{9b}31m \u{202e}txt.exe";
    std::fs::write(
        docs.join("esc.md"),
        format!("---\ntitle: Title {nasty}\n---\n# Head {nasty}\n\nplatypus {nasty} body\n"),
    )
    .unwrap();
    report(&build_within(&docs, &out, &[], 30));
    for format in ["text", "markdown"] {
        let shown = search(&out, "platypus", &["--format", format]);
        assert!(shown.contains("platypus"), "{shown}");
        for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
            assert!(!shown.contains(bad), "{format} shows {bad:?}: {shown:?}");
        }
    }
    // JSON keeps the text as it is (escaped by JSON itself).
    let json = search(&out, "platypus", &["--format", "json"]);
    assert!(json.contains("\\u001b"), "{json}");
}

/// Finding 10: `docloupe stats` printed logged queries raw; any client of the Worker or the
/// MCP server wrote into the operator's terminal. Finding 13: one line that was not UTF-8
/// ended the statistics, and a `durationMs` of 1e308 printed a 300-digit mean.
#[test]
fn stats_reads_every_line_and_prints_none_raw() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("q.log");
    let mut lines: Vec<u8> = Vec::new();
    let call = |q: &str, ms: &str| {
        format!(
            "{{\"time\":\"t\",\"tool\":\"search_docs\",\"params\":{{\"query\":{}}},\"durationMs\":{ms},\"results\":1,\"errorCode\":null}}\n",
            serde_json::to_string(q).unwrap()
        )
    };
    lines.extend(call("cache \u{1b}]0;pwned\u{7}\u{1b}[2J", "10").as_bytes());
    lines.extend(b"\xff\xfe not utf-8 at all\n");
    lines.extend(call("after the bad line", "30").as_bytes());
    lines.extend(call("huge", "1e308").as_bytes());
    std::fs::write(&log, lines).unwrap();
    let out = Command::new(common::docloupe_bin())
        .arg("stats")
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("after the bad line"), "{text}");
    assert!(text.contains("searches: 3"), "{text}");
    assert!(text.contains("mean 20.0 ms"), "{text}");
    assert!(text.contains("(1 lines were not search calls"), "{text}");
}

/// Finding 12: text after a request object was ignored (`{"query":"cache"} {"query":"x"}`
/// answered the first and dropped the second). It is `INVALID_REQUEST`.
#[test]
fn text_after_the_request_object_is_an_invalid_request() {
    for json in [
        r#"{"query":"cache"} {"query":"x"}"#,
        r#"{"query":"cache"}x"#,
        r#"{"query":"cache"}]"#,
    ] {
        let err = docloupe::SearchRequest::from_json(json).unwrap_err();
        assert_eq!(err.code(), docloupe::ErrorCode::InvalidRequest, "{json}");
    }
    assert!(docloupe::SearchRequest::from_json("{\"query\":\"cache\"}\n  ").is_ok());
    // And from the command line's --jsonl (the hosts' one parser).
    let (_tmp, bundle) = common::fixture_bundle_file();
    let mut child = common::docloupe_search(&bundle)
        .arg("--jsonl")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"query\":\"cache\"} {\"query\":\"x\"}\n")
        .unwrap();
    let out = wait_within(child, 60);
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["errorCode"], "INVALID_REQUEST", "{line}");
}

/// Finding 14: document paths could hold bidi and zero-width characters (`rtl-\u{202e}gnp.md` showed
/// as `rtl-dm.png`); only control characters were refused. Format characters are refused too.
#[test]
fn a_path_with_invisible_formatting_characters_is_skipped_with_a_warning() {
    let (_tmp, docs, out) = docs_with_a_good_page();
    for name in ["rtl-\u{202e}gnp.md", "zero\u{200b}width.md"] {
        std::fs::write(docs.join(name), "# Trick\n\ntext\n").unwrap();
    }
    let r = report(&build_within(&docs, &out, &[], 30));
    assert_eq!(r["documentsProcessed"], 1, "{r}");
    let w = common::warnings(&r);
    assert_eq!(
        w.iter()
            .filter(|w| w.contains("invisible formatting"))
            .count(),
        2,
        "{w:?}"
    );
}

/// Finding 15: `--incremental` reused the vectors of a previous bundle that had been changed
/// (its checksums recomputed), so the output differed from a clean build. A previous bundle is
/// reused only when this machine's builder wrote it there and it is unchanged since.
#[test]
fn an_incremental_build_reuses_nothing_from_a_changed_previous_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    // A cache of the test's own: the seals a build records live there.
    let cache = tmp.path().join("cache");
    let model = common::model_dir();
    let build = |out: &Path, extra: &[&str]| -> serde_json::Value {
        let o = Command::new(common::index_builder_bin())
            .arg("build")
            .arg(common::fixtures())
            .arg("--out")
            .arg(out)
            .arg("--model")
            .arg(&model)
            .arg("--quiet")
            .args(extra)
            .env("DOCLOUPE_CACHE", &cache)
            .output()
            .unwrap();
        report(&o)
    };
    let clean = tmp.path().join("clean.bundle");
    build(&clean, &[]);
    let out = tmp.path().join("docs.bundle");
    build(&out, &[]);
    // Unchanged: reused, and the same bytes as a clean build.
    let r = build(&out, &["--incremental"]);
    assert!(r["chunksReused"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&clean).unwrap());
    // A copy elsewhere on this machine is the same bundle.
    let copy = tmp.path().join("copy.bundle");
    std::fs::copy(&out, &copy).unwrap();
    assert!(
        build(&copy, &["--incremental"])["chunksReused"]
            .as_u64()
            .unwrap()
            > 0
    );
    // One vector value changed and every checksum written anew: a bundle that decodes, whose
    // answers differ.
    let tampered = tamper_one_vector(&std::fs::read(&out).unwrap());
    docloupe::bundle::decode(&tampered).expect("the tampered bundle still decodes");
    std::fs::write(&out, &tampered).unwrap();
    let r = build(&out, &["--incremental"]);
    assert_eq!(r["chunksReused"], 0, "{r}");
    assert!(
        common::warnings(&r)
            .iter()
            .any(|w| w.contains("nothing is reused")),
        "{r}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&clean).unwrap());
    // Unless told to trust it: then the changed vector is taken as it is.
    std::fs::write(&out, &tampered).unwrap();
    let r = build(&out, &["--incremental", "--trust-previous"]);
    assert!(r["chunksReused"].as_u64().unwrap() > 0, "{r}");
    assert_ne!(std::fs::read(&out).unwrap(), std::fs::read(&clean).unwrap());
    // The bundle built on another machine (another cache, so another key) is not trusted.
    let elsewhere = tmp.path().join("elsewhere.bundle");
    std::fs::copy(&clean, &elsewhere).unwrap();
    std::fs::remove_dir_all(cache.join("builder")).unwrap();
    let r = build(&elsewhere, &["--incremental"]);
    assert_eq!(r["chunksReused"], 0, "{r}");
}

/// `bundle` with one value of its first vector changed, encoded again so that every checksum
/// holds.
fn tamper_one_vector(bundle: &[u8]) -> Vec<u8> {
    use docloupe::index::vector::{VectorIndex, Vectors};
    let mut b = docloupe::bundle::decode(bundle).unwrap();
    let index = b.vectors.take().expect("a bundle with vectors");
    let mut qvecs: Vec<_> = index.vectors().collect();
    qvecs[0].data[0] = if qvecs[0].data[0] == 7 { -7 } else { 7 };
    b.vectors = Some(VectorIndex::Flat(Vectors::from_qvecs(qvecs).unwrap()));
    docloupe::bundle::encode(&b).unwrap()
}

/// The probe's inputs in one folder beside good pages: the build finishes, names every file it
/// skips, stays under 2 GiB, and answers for the good pages.
#[test]
#[cfg(target_os = "linux")]
fn every_hostile_input_in_one_folder_builds_within_two_gib() {
    let (tmp, docs, out) = docs_with_a_good_page();
    std::fs::write(
        docs.join("good-two.md"),
        "# Second\n\nThe vault rotates keys nightly.\n",
    )
    .unwrap();
    let long = "x".repeat(64 * 1024);
    let mut a = format!("---\ntitle: {long}\n---\n");
    for i in 0..200 {
        a.push_str(&format!("## section {i}\n\nbody {i}\n\n"));
    }
    std::fs::write(docs.join("long-title.md"), a).unwrap();
    let header = format!(
        "|{}|\n|{}|\n",
        vec!["h"; 362].join("|"),
        vec!["-"; 362].join("|")
    );
    std::fs::write(
        docs.join("tables.md"),
        format!(
            "# T\n\n{}",
            format!("{header}{}\n", "x\n".repeat(724)).repeat(350)
        ),
    )
    .unwrap();
    std::fs::write(
        docs.join("yaml.md"),
        format!("---\nx:\n{}y\n---\n# Y\n\nyaml body\n", "- ".repeat(20_000)),
    )
    .unwrap();
    std::fs::write(docs.join("cr.md"), "# Classic\r\rcr body\r").unwrap();
    std::fs::write(docs.join("loop.pdf"), pdf_with_pages(1, true)).unwrap();
    std::fs::write(docs.join("manual.pdf"), pdf_with_pages(2_000, false)).unwrap();
    std::fs::File::create(docs.join("sparse.pdf"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    std::fs::write(docs.join("rtl-\u{202e}dm.txt"), "tricky name\n").unwrap();
    std::fs::write(tmp.path().join("outside.md"), "# Outside\n\nsecret\n").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.md"), docs.join("link.md")).unwrap();
    let o = build_within(&docs, &out, &["--convert-timeout", "60"], 300);
    let r = report(&o);
    // Read: the two good pages, the long title, the tables, the YAML page (its body), the CR
    // page and both readable PDFs. Skipped, each named: the sparse file, the name, the link.
    assert_eq!(r["documentsProcessed"], 8, "{r}");
    for skipped in ["sparse.pdf", "\"rtl-", "link.md"] {
        assert!(
            warning_for(&r, skipped).contains("skipped"),
            "{skipped}: {r}"
        );
    }
    for name in ["tables.md", "yaml.md"] {
        assert!(!warning_for(&r, name).is_empty());
    }
    assert!(search(&out, "vault rotates keys", &[]).contains("good-two.md"));
    assert!(search(&out, "quokkas", &[]).contains("manual.pdf"));
    let peak = children_peak_rss_kib();
    assert!(peak < 2 << 20, "a build peaked at {peak} KiB");
}
