//! Spec: how `index-builder build` behaves on good and bad input.

use std::path::Path;
use std::process::{Command, Output};

fn builder(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_index-builder"))
        .args(args)
        .output()
        .expect("index-builder runs")
}

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// `index-builder build <docs> --out <out> --no-embeddings <extra...>`.
fn build_fulltext(docs: &Path, out: &Path, extra: &[&str]) -> Output {
    let (docs, out) = (docs.to_str().unwrap(), out.to_str().unwrap());
    builder(&[&["build", docs, "--out", out, "--no-embeddings"], extra].concat())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn reports_an_ingest_result_and_skips_unreadable_files_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    write(&docs, "guide.md", b"# Guide\n\nSome text about widgets.\n");
    write(&docs, "sub/more.md", b"# More\n\n## Part\n\nOther text.\n");
    write(&docs, "latin1.md", b"# Caf\xe9\n\nnot utf-8\n");
    write(&docs, "notes.rst", b"not a format docloupe reads");
    write(&docs, "ignored/x.md", b"# Ignored\n\nby .gitignore\n");
    write(&docs, ".gitignore", b"ignored/\n");
    let out = tmp.path().join("out.bundle");
    let o = build_fulltext(&docs, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["documentsProcessed"], 2);
    assert_eq!(report["chunksWritten"], 2);
    assert!(report["durationSeconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(report["embedModel"], serde_json::Value::Null);
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("latin1.md")
                && w.as_str().unwrap().contains("UTF-8")),
        "{warnings:?}"
    );
    assert!(out.is_file());
    // Nothing but the bundle is left beside it.
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    let engine = docloupe::Engine::from_bundle(&std::fs::read(&out).unwrap(), None).unwrap();
    let paths: Vec<&str> = engine
        .bundle()
        .expect("a whole bundle")
        .docs
        .documents
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(paths, vec!["guide.md", "sub/more.md"]);
}

#[test]
fn plain_text_files_are_documents_of_type_txt_with_paragraph_line_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    write(
        &docs,
        "notes/changes.txt",
        b"Release notes\n\n1.2 fixed the widget\ncache eviction.\n\n\nLast paragraph here.\n",
    );
    write(
        &docs,
        "long.txt",
        b"This first line is a sentence, so it is no title.\n",
    );
    let out = tmp.path().join("out.bundle");
    let o = build_fulltext(&docs, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let engine = docloupe::Engine::from_bundle(&std::fs::read(&out).unwrap(), None).unwrap();
    let docs = &engine.bundle().expect("a whole bundle").docs;
    let titles: Vec<(&str, &str, &str)> = docs
        .documents
        .iter()
        .map(|d| (d.path.as_str(), d.title.as_str(), d.doc_type.as_str()))
        .collect();
    assert_eq!(
        titles,
        vec![
            ("long.txt", "long", "txt"),
            ("notes/changes.txt", "Release notes", "txt")
        ]
    );
    let answer = engine
        .search_json(r#"{"query": "widget eviction", "mode": "fulltext", "filters": {"documentTypes": ["txt"]}}"#)
        .unwrap();
    let answer = serde_json::to_value(&answer).unwrap();
    let first = &answer["results"][0];
    assert_eq!(first["documentPath"], "notes/changes.txt", "{answer}");
    assert_eq!(first["documentType"], "txt");
    assert_eq!(first["anchor"], "");
    assert_eq!(answer["facets"]["documentTypes"]["txt"], 1, "{answer}");
}

#[test]
fn an_empty_folder_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = build_fulltext(tmp.path(), &tmp.path().join("b"), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no documents"), "{}", stderr(&o));
}

#[test]
fn an_unwritable_output_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.md", b"# A\n\ntext\n");
    let out = tmp.path().join("missing-dir/out.bundle");
    let o = build_fulltext(tmp.path(), &out, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
}

#[test]
fn a_missing_model_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.md", b"# A\n\ntext\n");
    let o = builder(&[
        "build",
        tmp.path().to_str().unwrap(),
        "--out",
        tmp.path().join("b").to_str().unwrap(),
        "--model",
        tmp.path().join("no-model-here").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("embedding model is missing"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_bad_project_id_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.md", b"# A\n\ntext\n");
    let o = build_fulltext(
        tmp.path(),
        &tmp.path().join("b"),
        &["--project", "no slash"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("namespace/name"), "{}", stderr(&o));
    let o = build_fulltext(
        tmp.path(),
        &tmp.path().join("b"),
        &["--project", "acme/docs"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let engine =
        docloupe::Engine::from_bundle(&std::fs::read(tmp.path().join("b")).unwrap(), None).unwrap();
    assert_eq!(engine.header().project_id.as_deref(), Some("acme/docs"));
}

#[test]
fn dump_prints_every_chunk_as_a_json_line() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    write(
        &docs,
        "guide.md",
        b"---\ndescription: All about widgets.\n---\n# Guide\n\nIntro.\n\n## Setup\n\nInstall the widget.\n",
    );
    let out = tmp.path().join("out.bundle");
    let o = build_fulltext(&docs, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let chunks: u64 = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
        ["chunksWritten"]
        .as_u64()
        .unwrap();
    let d = builder(&["dump", out.to_str().unwrap()]);
    assert!(d.status.success(), "{}", stderr(&d));
    let lines: Vec<serde_json::Value> = String::from_utf8(d.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, chunks);
    let setup = lines
        .iter()
        .find(|l| l["anchor"] == "setup")
        .expect("the Setup section");
    assert_eq!(setup["documentPath"], "guide.md");
    assert_eq!(setup["description"], "All about widgets.");
    assert_eq!(setup["sectionPath"], serde_json::json!(["Guide", "Setup"]));
    assert!(setup["text"]
        .as_str()
        .unwrap()
        .contains("Install the widget."));
    // A file that is not a bundle is a clear error.
    let bad = builder(&["dump", docs.join("guide.md").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("not a docloupe bundle"),
        "{}",
        stderr(&bad)
    );
}
