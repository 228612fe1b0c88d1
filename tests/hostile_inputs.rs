//! Spec (issue 24): hostile documents never stop a build. Each file here once aborted
//! `index-builder build` (out of memory, stack overflow, a hang); now it is skipped (or read)
//! with a warning naming it, and every other document is indexed.

mod common;
mod formats;

use std::path::Path;
use std::process::Command;

/// Builds `dir` (no embeddings: conversion is what is under test) with extra arguments and
/// environment; returns (success, IngestResult or stderr).
fn build(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> (bool, serde_json::Value, String) {
    let out = dir.with_extension("bundle");
    let mut cmd = Command::new(common::index_builder_bin());
    cmd.arg("build")
        .arg(dir)
        .arg("--out")
        .arg(&out)
        .args(["--no-embeddings", "--quiet"])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("index-builder runs");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let report = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.success(), report, stderr)
}

/// A `docs` folder in a temp dir (keep the `TempDir`) holding one good page, beside which a
/// test puts its hostile files: the build must still read that page.
fn folder_with_a_good_page() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("docs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("good.md"),
        "# Good\n\nThe cache keeps answers near readers.\n",
    )
    .unwrap();
    (tmp, dir)
}

fn warning_for<'a>(report: &'a serde_json::Value, file: &str) -> &'a str {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.starts_with(file))
        .unwrap_or_else(|| panic!("no warning for {file}: {report}"))
}

fn paper() -> Vec<u8> {
    formats::pdf(
        &[
            &[&["Introduction", "Caching keeps answers near readers."]],
            &[&["Results", "It works."]],
        ],
        &[(1, "Introduction", 0), (1, "Results", 1)],
        Some("Caching"),
    )
}

#[test]
fn one_hostile_file_of_each_kind_never_stops_the_build() {
    let (_tmp, dir) = folder_with_a_good_page();
    std::fs::write(
        dir.join("corners.xlsx"),
        formats::hostile::xlsx_far_corners(),
    )
    .unwrap();
    std::fs::write(
        dir.join("first-cycle.pdf"),
        formats::hostile::pdf_outline_cycle(&paper(), "First"),
    )
    .unwrap();
    std::fs::write(
        dir.join("next-cycle.pdf"),
        formats::hostile::pdf_outline_cycle(&paper(), "Next"),
    )
    .unwrap();
    let mut bomb = String::from("---\ntitle: Bomb\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (name, prev) in "bcdefghi".chars().zip("abcdefgh".chars()) {
        bomb.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    bomb.push_str("---\n# Bomb\n\ntext\n");
    std::fs::write(dir.join("yaml-bomb.md"), &bomb).unwrap();
    let mut slugs = String::new();
    for i in 1..=5_000 {
        slugs.push_str(&format!("## a-{i}\n\nx\n\n"));
    }
    for _ in 0..5_000 {
        slugs.push_str("## a\n\nx\n\n");
    }
    std::fs::write(dir.join("slugs.md"), slugs).unwrap();

    let (ok, report, stderr) = build(
        &dir,
        &["--convert-memory-mb", "1024", "--convert-timeout", "120"],
        &[],
    );
    assert!(ok, "{stderr}");
    // Read: the two corner cells, both cyclic outlines (each entry once), the bomb's simple
    // lines, every colliding heading.
    assert_eq!(report["documentsProcessed"], 6, "{report}");
    assert!(warning_for(&report, "yaml-bomb.md").contains("aliases"));
    let dump = Command::new(common::index_builder_bin())
        .arg("dump")
        .arg(dir.with_extension("bundle"))
        .output()
        .unwrap();
    let dump = String::from_utf8(dump.stdout).unwrap();
    assert!(dump.contains("far corner"));
    assert!(
        dump.contains("\"sectionPath\":[\"Caching\",\"Introduction\"]"),
        "{dump}"
    );
}

#[test]
fn files_that_made_a_parser_crate_panic_under_fuzzing_are_skipped_with_a_warning() {
    // Found by `make fuzz` (fuzz/): pdf-extract 0.12 unwraps a missing font entry, calamine
    // 0.35 a malformed sheet dimension. The converter catches the panic (and runs in a child
    // process besides); the file is skipped, named, and the build goes on.
    let (_tmp, dir) = folder_with_a_good_page();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    for name in [
        "fuzz-pdf-extract-unwrap.pdf",
        "fuzz-calamine-dimension.xlsx",
    ] {
        std::fs::copy(fixtures.join(name), dir.join(name)).unwrap();
    }
    let (ok, report, stderr) = build(&dir, &[], &[]);
    assert!(ok, "{stderr}");
    assert_eq!(report["documentsProcessed"], 1, "{report}");
    for name in [
        "fuzz-pdf-extract-unwrap.pdf",
        "fuzz-calamine-dimension.xlsx",
    ] {
        assert!(!warning_for(&report, name).is_empty(), "{report}");
    }
}

/// Writes one file of each converted format (the fixtures' writers) into $DOCLOUPE_FUZZ_SEEDS
/// for the fuzzers' seed corpora (`make fuzz`); ignored otherwise.
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("DOCLOUPE_FUZZ_SEEDS") else {
        return;
    };
    let dir = Path::new(&dir);
    for sub in ["pdf", "docx", "xlsx", "markdown"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    // Markdown in the shapes issue 59's probe used: nested and aliased front matter, tables
    // that pad, CR-only, CRLF and UTF-16 line ends, long headings.
    let header = format!(
        "|{}|\n|{}|\n",
        vec!["h"; 40].join("|"),
        vec!["-"; 40].join("|")
    );
    for (name, text) in [
        (
            "front-matter.md",
            "---\ntitle: T\ntags: [a, b]\nx:\n  - - y\n? - k\n: v\n---\n# T\n\nbody\n".to_owned(),
        ),
        (
            "aliases.md",
            "---\na: &a [1, 2]\nb: *a\n---\ntext\n".to_owned(),
        ),
        (
            "tables.md",
            format!("# Tables\n\n{header}{}\n> {header}> x\n", "x\n".repeat(40)),
        ),
        ("cr.md", "# Title\r\rtext\r\r## Sub\r\rmore\r".to_owned()),
        (
            "crlf.md",
            "---\r\ntitle: W\r\n---\r\n# W\r\n\r\ntext {#id}\r\n".to_owned(),
        ),
        (
            "long-heading.md",
            format!(
                "# {}\n\n## {} {{#{}}}\n\ntext\n",
                "t".repeat(300),
                "h ".repeat(200),
                "i".repeat(300)
            ),
        ),
    ] {
        std::fs::write(dir.join("markdown").join(name), text).unwrap();
    }
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "# Заголовок\r\n\r\nтекст\r\n".encode_utf16() {
        utf16.extend(u.to_le_bytes());
    }
    std::fs::write(dir.join("markdown/utf16.md"), utf16).unwrap();
    std::fs::write(dir.join("pdf/paper.pdf"), paper()).unwrap();
    std::fs::write(
        dir.join("pdf/encrypted.pdf"),
        formats::encrypted_pdf(&paper(), ""),
    )
    .unwrap();
    std::fs::write(
        dir.join("docx/report.docx"),
        formats::docx(
            &[
                ("Title", "Report"),
                ("Heading1", "Revenue"),
                ("", "Revenue grew."),
            ],
            &[&["Region", "Sales"], &["North", "12"]],
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("xlsx/inventory.xlsx"),
        formats::xlsx(&[(
            "Stock",
            &[&["Item", "Count", "Date"], &["gizmo", "4", "2024-03-15"]],
        )]),
    )
    .unwrap();
}

/// Regression (hostile requests): `--jsonl` stopped the whole batch at the first line that
/// was not UTF-8. Each such line now gets an error object and the batch goes on.
#[test]
fn a_jsonl_line_that_is_not_utf8_is_answered_and_the_batch_goes_on() {
    use std::io::Write;
    let (_tmp, bundle) = common::fixture_bundle_file();
    let mut child = common::docloupe_search(&bundle)
        .args([
            "--jsonl",
            "--no-reranker",
            "--models",
            common::model_dir().to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"query\":\"cache\",\"mode\":\"fulltext\"}\n");
    input.extend_from_slice(b"{\"query\":\"\xff\xfe cache\"}\n");
    input.extend_from_slice(&[b'x'; 2 << 20]);
    input.extend_from_slice(b"\n{\"query\":\"purge\",\"mode\":\"fulltext\"}\n");
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[0]["query"], "cache");
    assert_eq!(lines[1]["errorCode"], "INVALID_REQUEST");
    assert!(lines[1]["message"].as_str().unwrap().contains("not UTF-8"));
    assert_eq!(lines[2]["errorCode"], "INVALID_REQUEST");
    assert!(lines[2]["message"]
        .as_str()
        .unwrap()
        .contains("longer than"));
    assert_eq!(lines[3]["query"], "purge");
}

/// Regression (hostile requests): suggestions compared every unknown word with the whole
/// vocabulary, allocating per pair; a 500-character nonsense query took seconds. At most
/// four words are looked up now, and the answer still suggests for those. A query of mostly
/// unknown words is not taken for typos at all (`expand::looks_misspelt`): nothing is looked
/// up for it.
#[test]
fn a_long_nonsense_query_looks_up_a_bounded_number_of_words() {
    let engine = docloupe::Engine::from_bundle(common::fixture_bundle(), None).unwrap();
    let search = |query: &str| {
        assert!(query.chars().count() <= 500);
        engine
            .search(&docloupe::SearchRequest::new(query).mode(docloupe::Mode::Fulltext))
            .unwrap()
    };
    let words: Vec<String> = (0..60).map(|i| format!("qzxv{i:02}kwyj")).collect();
    let nonsense: String = format!("cahce {}", words.join(" "))
        .chars()
        .take(500)
        .collect();
    assert!(search(&nonsense).suggestions.is_empty());
    // As many known words as unknown ones: taken for typos, and only four are looked up.
    let mixed = format!(
        "cache cahce {}",
        words[..25]
            .iter()
            .map(|w| format!("cache {w}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let r = search(&mixed);
    // The misspelling comes first, so it is among the words looked up.
    assert!(
        r.suggestions.iter().any(|s| s.starts_with("cache cache ")),
        "{:?}",
        r.suggestions
    );
}

/// Regression: `inspect` and `dump` piped into `head` panicked on the closed pipe.
#[test]
fn inspect_and_dump_end_quietly_on_a_closed_pipe() {
    let (_tmp, bundle) = common::fixture_bundle_file();
    for cmd in ["inspect", "dump"] {
        let script = format!(
            "'{}' {cmd} '{}' | head -c 1 >/dev/null; echo \"${{PIPESTATUS[0]}}\"",
            common::index_builder_bin().display(),
            bundle.display()
        );
        let out = Command::new("bash").args(["-c", &script]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{cmd}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "0",
            "{cmd}: {stderr}"
        );
    }
}

/// Regression (files): `split` and `site --out` deleted whatever the folder held. A folder
/// that is not empty and not an earlier output of the same command is refused, untouched.
#[test]
fn split_and_site_never_replace_a_folder_of_someone_elses_files() {
    let (_tmp, bundle) = common::fixture_bundle_file();
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("thesis.tex"), "years of work").unwrap();
    let run = |args: &[&str]| {
        Command::new(common::index_builder_bin())
            .args(args)
            .output()
            .unwrap()
    };
    let t = theirs.to_str().unwrap();
    let split = run(&["split", bundle.to_str().unwrap(), "--out", t]);
    assert!(!split.status.success());
    assert!(String::from_utf8_lossy(&split.stderr).contains("refusing to replace"));
    let site = run(&["site", common::fixtures().to_str().unwrap(), "--out", t]);
    assert!(!site.status.success());
    assert_eq!(
        std::fs::read_to_string(theirs.join("thesis.tex")).unwrap(),
        "years of work"
    );
    // An earlier output, or an empty folder, is replaced.
    let ours = tmp.path().join("ours");
    let o = ours.to_str().unwrap();
    for _ in 0..2 {
        assert!(run(&["split", bundle.to_str().unwrap(), "--out", o])
            .status
            .success());
    }
    assert!(ours.join("core.bin").is_file());
    // A site over a split output is refused too: each command replaces only its own.
    assert!(
        !run(&["site", common::fixtures().to_str().unwrap(), "--out", o])
            .status
            .success()
    );
}
