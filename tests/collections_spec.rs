//! Spec: citable, multi-format, project-scoped collections. A folder of PDF, DOCX, XLSX,
//! markdown and text files (written here by real writer crates, see `tests/formats/`) builds
//! into one bundle whose results carry pages, sections, rows and citations; broken files are
//! skipped with a reason; projects and embedding models are checked; incremental builds
//! re-embed only what changed and write the same bytes as a clean build.

mod common;
mod formats;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use docloupe::{Engine, ErrorCode, ErrorResponse, ModelFiles, SearchResponse};
use serde_json::{json, Value};

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

const SMITH_PAGES: &[formats::Page] = &[
    &[
        &["Introduction"],
        &[
            "Edge caches keep copies of content",
            "close to the readers who ask for it.",
        ],
    ],
    &[
        &["Cache eviction"],
        &[
            "Eviction policies decide which object",
            "leaves a full cache first.",
        ],
    ],
    &[
        &["LRU results"],
        &[
            "The least recently used policy reached a hit",
            "ratio of 93 percent on the zebrafish trace.",
        ],
    ],
    &[&["Across both traces the policy stayed ahead of FIFO."]],
];

/// The mixed collection: a paper (PDF, 4 pages, outline), a report (DOCX), a workbook (XLSX),
/// a note (markdown with a citekey), a text file, a corrupt PDF and a scanned (textless) one.
fn mixed_folder(dir: &Path) {
    write(
        dir,
        "papers/smith2020.pdf",
        &formats::pdf(
            SMITH_PAGES,
            &[
                (1, "Introduction", 0),
                (1, "Cache eviction", 1),
                (2, "LRU results", 2),
            ],
            Some("Caching at the Edge"),
        ),
    );
    write(
        dir,
        "reports/quarterly.docx",
        &formats::docx(
            &[
                ("Title", "Quarterly report"),
                ("Heading1", "Revenue"),
                (
                    "",
                    "Revenue grew in the northern region thanks to the heliotrope campaign.",
                ),
                ("Heading2", "Costs & risks"),
                ("", "Logistics costs fell after the depot moved."),
            ],
            &[&["Region", "Growth"], &["North", "12%"]],
        ),
    );
    write(
        dir,
        "data/inventory.xlsx",
        &formats::xlsx(&[
            (
                "Stock",
                &[
                    &["Item", "Warehouse", "Quantity", "Counted"],
                    &["Widget", "Oslo", "42", "2024-03-15"],
                    &["Gizmo", "Lima", "7", "2024-02-29"],
                ],
            ),
            ("Notes", &[&["Reorder gizmos when stock is under ten"]]),
        ]),
    );
    write(
        dir,
        "notes/guide.md",
        b"---\ncitekey: doe2019\n---\n# Setup guide\n\nInstall the quokka agent on every node.\n",
    );
    write(
        dir,
        "notes/plain.txt",
        b"Plain notes\n\nThe archive rotates every night.\n",
    );
    let mut corrupt = formats::pdf(SMITH_PAGES, &[], None);
    corrupt.truncate(corrupt.len() / 3);
    corrupt.extend_from_slice(b"garbage that is not PDF");
    write(dir, "broken/corrupt.pdf", &corrupt);
    write(
        dir,
        "broken/scanned.pdf",
        &formats::pdf(&[&[], &[]], &[], None),
    );
    write(
        dir,
        "broken/locked.pdf",
        &formats::encrypted_pdf(&formats::pdf(SMITH_PAGES, &[], None), "reader secret"),
    );
}

const REFS: &str = r#"[
  {"id": "smith2020", "type": "article-journal", "title": "Caching at the Edge",
   "author": [{"family": "Smith", "given": "Ada"}], "issued": {"date-parts": [[2020, 5]]},
   "DOI": "10.1000/edge.2020", "keyword": "caching, systems", "collections": ["Thesis"]},
  {"id": "doe2019", "type": "book", "title": "Operating Quokka",
   "author": [{"family": "Doe", "given": "Jo"}], "issued": {"raw": "2019"},
   "URL": "https://example.org/quokka"}
]"#;

fn builder(args: &[&str]) -> Output {
    Command::new(common::index_builder_bin())
        .args(args)
        .output()
        .expect("index-builder runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Builds `docs` into `out` with `extra` flags; the report on success, stderr on failure.
fn build(docs: &Path, out: &Path, extra: &[&str]) -> Result<Value, String> {
    let o = builder(
        &[
            &[
                "build",
                docs.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ][..],
            extra,
        ]
        .concat(),
    );
    if o.status.success() {
        Ok(serde_json::from_slice(&o.stdout).expect("IngestResult JSON"))
    } else {
        Err(stderr(&o))
    }
}

struct Collection {
    _tmp: tempfile::TempDir,
    bundle: PathBuf,
    report: Value,
}

/// The mixed folder built without embeddings, as project `acme/library`, with references.
fn fulltext_collection() -> Collection {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    mixed_folder(&docs);
    let refs = tmp.path().join("refs.json");
    std::fs::write(&refs, REFS).unwrap();
    let bundle = tmp.path().join("library.bundle");
    let report = build(
        &docs,
        &bundle,
        &[
            "--no-embeddings",
            "--project",
            "acme/library",
            "--references",
            refs.to_str().unwrap(),
        ],
    )
    .unwrap();
    Collection {
        _tmp: tmp,
        bundle,
        report,
    }
}

fn engine(bundle: &Path) -> Engine {
    Engine::from_bundle(&std::fs::read(bundle).unwrap(), None).unwrap()
}

fn ask(e: &Engine, body: Value) -> Result<SearchResponse, ErrorResponse> {
    e.search_json(&body.to_string())
}

#[test]
fn every_format_is_read_and_broken_files_are_skipped_with_their_reason() {
    let c = fulltext_collection();
    let r = &c.report;
    assert_eq!(r["documentsProcessed"], 5, "{r:#}");
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let about = |file: &str| warnings.iter().find(|w| w.starts_with(file)).copied();
    let corrupt = about("broken/corrupt.pdf").expect("a warning for the corrupt PDF");
    assert!(
        corrupt.contains("skipped") && corrupt.contains("PDF"),
        "{corrupt}"
    );
    let scanned = about("broken/scanned.pdf").expect("a warning for the scanned PDF");
    assert!(scanned.contains("no extractable text"), "{scanned}");
    let locked = about("broken/locked.pdf").expect("a warning for the encrypted PDF");
    assert!(locked.contains("encrypted"), "{locked}");

    let e = engine(&c.bundle);
    let docs = &e.bundle().unwrap().docs.documents;
    let types: Vec<(&str, &str)> = docs
        .iter()
        .map(|d| (d.path.as_str(), d.doc_type.as_str()))
        .collect();
    assert_eq!(
        types,
        vec![
            ("data/inventory.xlsx", "xlsx"),
            ("notes/guide.md", "md"),
            ("notes/plain.txt", "txt"),
            ("papers/smith2020.pdf", "pdf"),
            ("reports/quarterly.docx", "docx"),
        ]
    );
    // documentType is the format, and the type filter uses it.
    let r = ask(
        &e,
        json!({"query": "policy cache revenue", "mode": "fulltext", "filters": {"documentTypes": ["docx"]}}),
    )
    .unwrap();
    assert!(!r.results.is_empty());
    assert!(r.results.iter().all(|x| x.document_type == "docx"));
}

#[test]
fn a_pdf_protected_by_an_owner_password_only_is_read() {
    // Many PDFs are encrypted with an empty user password (printing/copy restrictions): any
    // reader opens them, and so does the builder.
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let pdf = formats::pdf(SMITH_PAGES, &[], Some("Caching at the Edge"));
    write(&docs, "restricted.pdf", &formats::encrypted_pdf(&pdf, ""));
    let out = tmp.path().join("r.bundle");
    let report = build(&docs, &out, &["--no-embeddings"]).unwrap();
    assert_eq!(report["documentsProcessed"], 1, "{report:#}");
    let r = ask(
        &engine(&out),
        json!({"query": "zebrafish", "mode": "fulltext"}),
    )
    .unwrap();
    // No outline: the short paper is one section, one chunk over all four pages.
    let top = &r.results[0];
    assert_eq!((top.page_start, top.page_end), (Some(1), Some(4)));
    assert_eq!(top.title, "Caching at the Edge");
}

#[test]
fn a_multi_page_pdf_answers_with_its_pages_its_outline_and_a_page_anchor() {
    let c = fulltext_collection();
    let e = engine(&c.bundle);
    let r = ask(
        &e,
        json!({"query": "zebrafish hit ratio", "mode": "fulltext"}),
    )
    .unwrap();
    let top = &r.results[0];
    assert_eq!(top.document_path, "papers/smith2020.pdf");
    assert_eq!(top.document_type, "pdf");
    assert_eq!(top.title, "Caching at the Edge");
    assert_eq!(
        top.section_path,
        vec!["Caching at the Edge", "Cache eviction", "LRU results"]
    );
    // The LRU section runs from page 3 onto page 4.
    assert_eq!((top.page_start, top.page_end), (Some(3), Some(4)));
    assert_eq!(top.anchor, "page=3");
    assert!(top.line_start <= top.line_end);

    // Every chunk of the PDF has a page span inside the document, start <= end.
    let b = e.bundle().unwrap();
    let d = b
        .docs
        .documents
        .iter()
        .position(|d| d.path == "papers/smith2020.pdf")
        .unwrap();
    let spans: Vec<(u32, u32)> = b
        .docs
        .chunks
        .iter()
        .filter(|ch| ch.doc as usize == d)
        .map(|ch| {
            let p = ch.location.page_span.expect("PDF chunks have pages");
            (p.start, p.end)
        })
        .collect();
    assert_eq!(spans, vec![(1, 1), (2, 2), (3, 4)]);

    let eviction = ask(
        &e,
        json!({"query": "eviction policies", "mode": "fulltext"}),
    )
    .unwrap();
    assert_eq!(eviction.results[0].page_start, Some(2));
    // Formats without pages say nothing about pages.
    let txt = ask(&e, json!({"query": "archive rotates", "mode": "fulltext"})).unwrap();
    assert_eq!(txt.results[0].document_path, "notes/plain.txt");
    assert_eq!(txt.results[0].page_start, None);
    let json = serde_json::to_value(&txt.results[0]).unwrap();
    assert!(
        json.get("pageStart").is_none() && json.get("citation").is_none(),
        "{json}"
    );
}

#[test]
fn docx_headings_become_the_section_path_and_table_rows_are_text() {
    let c = fulltext_collection();
    let e = engine(&c.bundle);
    let r = ask(
        &e,
        json!({"query": "heliotrope campaign", "mode": "fulltext"}),
    )
    .unwrap();
    let top = &r.results[0];
    assert_eq!(top.document_path, "reports/quarterly.docx");
    assert_eq!(top.document_type, "docx");
    assert_eq!(top.title, "Quarterly report");
    assert_eq!(top.section_path, vec!["Quarterly report", "Revenue"]);
    assert_eq!(top.anchor, "revenue");
    assert_eq!(top.page_start, None);

    let r = ask(&e, json!({"query": "depot logistics", "mode": "fulltext"})).unwrap();
    assert_eq!(
        r.results[0].section_path,
        vec!["Quarterly report", "Revenue", "Costs & risks"]
    );
    let r = ask(
        &e,
        json!({"query": "North growth", "mode": "fulltext", "maxCharsPerChunk": 500}),
    )
    .unwrap();
    let text = r.results[0].text.as_deref().unwrap();
    assert!(
        text.contains("Region | Growth") && text.contains("North | 12%"),
        "{text}"
    );
}

#[test]
fn spreadsheet_rows_are_searchable_with_their_column_names_and_row_numbers() {
    let c = fulltext_collection();
    let e = engine(&c.bundle);
    let r = ask(
        &e,
        json!({"query": "Lima gizmo", "mode": "fulltext", "maxCharsPerChunk": 2000}),
    )
    .unwrap();
    let top = &r.results[0];
    assert_eq!(top.document_path, "data/inventory.xlsx");
    assert_eq!(top.document_type, "xlsx");
    assert_eq!(top.section_path, vec!["inventory", "Stock"]);
    let text = top.text.as_deref().unwrap();
    assert!(
        text.contains("Item: Gizmo; Warehouse: Lima; Quantity: 7; Counted: 2024-02-29"),
        "{text}"
    );
    // A date cell (a serial number with a date format) reads as its ISO date.
    assert!(
        text.contains("Item: Widget; Warehouse: Oslo; Quantity: 42; Counted: 2024-03-15"),
        "{text}"
    );
    // Lines are the sheet's row numbers: header on row 1, Gizmo on row 3.
    assert_eq!((top.line_start, top.line_end), (1, 3));
    let notes = ask(&e, json!({"query": "reorder", "mode": "fulltext"})).unwrap();
    assert_eq!(notes.results[0].section_path, vec!["inventory", "Notes"]);
}

#[test]
fn csl_json_references_become_citations_and_unmatched_documents_get_a_hint() {
    let c = fulltext_collection();
    assert_eq!(c.report["documentsCited"], 2);
    let missing: Vec<(&str, &str)> = c.report["metadataWarnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            assert!(w["hint"].as_str().unwrap().contains("citekey"), "{w}");
            (
                w["code"].as_str().unwrap(),
                w["documentPath"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        missing,
        vec![
            ("MetadataMissing", "data/inventory.xlsx"),
            ("MetadataMissing", "notes/plain.txt"),
            ("MetadataMissing", "reports/quarterly.docx"),
        ]
    );

    let e = engine(&c.bundle);
    let r = ask(&e, json!({"query": "zebrafish", "mode": "fulltext"})).unwrap();
    let cite = serde_json::to_value(&r.results[0].citation).unwrap();
    assert_eq!(
        cite,
        json!({"citekey": "smith2020", "title": "Caching at the Edge", "authors": ["Smith, Ada"],
               "year": 2020, "doi": "10.1000/edge.2020", "url": null,
               "tags": ["caching", "systems"], "collections": ["Thesis"]})
    );
    assert_eq!(
        r.results[0].cite().as_deref(),
        Some("[@smith2020, pp. 3–4]")
    );
    // Matched by the citekey in front matter; no pages in markdown.
    let r = ask(&e, json!({"query": "quokka agent", "mode": "fulltext"})).unwrap();
    assert_eq!(r.results[0].cite().as_deref(), Some("[@doe2019]"));
    // The entry's tags join the document's, for the tags filter.
    let r = ask(
        &e,
        json!({"query": "policy", "mode": "fulltext", "filters": {"tags": ["systems"]}}),
    )
    .unwrap();
    assert!(r
        .results
        .iter()
        .all(|x| x.document_path == "papers/smith2020.pdf"));
    assert!(!r.results.is_empty());
}

#[test]
fn the_cli_renders_citations_with_pages_in_every_format() {
    let c = fulltext_collection();
    let run = |format: &str| {
        let o = common::docloupe_search(&c.bundle)
            .args(["--mode", "fulltext", "-f", format, "zebrafish hit ratio"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = run("text");
    assert!(text.contains("[@smith2020, pp. 3–4]"), "{text}");
    assert!(
        text.contains("papers/smith2020.pdf pp. 3–4#page=3"),
        "{text}"
    );
    let md = run("markdown");
    assert!(md.contains("[@smith2020, pp. 3–4]"), "{md}");
    let json: Value = serde_json::from_str(&run("json")).unwrap();
    let doc = &json["results"][0];
    assert_eq!(doc["citation"]["citekey"], "smith2020");
    // The fragment (scored) is on pages 3–4, its neighbour before it on page 2.
    let pages: Vec<(Value, bool)> = doc["context_chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["page_number"].clone(), c["relevance_score"].is_number()))
        .collect();
    assert_eq!(pages, vec![(json!(2), false), (json!(3), true)]);
    // --max-chars-per-chunk: each fragment carries its text trimmed, for quoting.
    let o = common::docloupe_search(&c.bundle)
        .args([
            "--mode",
            "fulltext",
            "-f",
            "json",
            "--max-chars-per-chunk",
            "30",
            "zebrafish",
        ])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    let fragment = json["results"][0]["context_chunks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["relevance_score"].is_number())
        .unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        fragment.chars().count() <= 30 && fragment.ends_with('…'),
        "{fragment:?}"
    );
}

#[test]
fn result_text_for_citing_is_trimmed_to_max_chars_per_chunk() {
    let c = fulltext_collection();
    let e = engine(&c.bundle);
    let r = ask(
        &e,
        json!({"query": "zebrafish", "mode": "fulltext", "maxCharsPerChunk": 40}),
    )
    .unwrap();
    let text = r.results[0].text.as_deref().unwrap();
    assert!(
        text.chars().count() <= 40 && text.ends_with('…'),
        "{text:?}"
    );
    assert!(
        text.starts_with("LRU results The least recently"),
        "{text:?}"
    );
    for ctx in r.results[0].context.iter().flatten() {
        assert!(ctx.text.chars().count() <= 40, "{:?}", ctx.text);
    }
    // Without it, results carry no text (the snippet only) and context in full.
    let r = ask(&e, json!({"query": "zebrafish", "mode": "fulltext"})).unwrap();
    assert!(r.results[0].text.is_none());
    for bad in [json!(0), json!(20_001), json!("40")] {
        let x = ask(
            &e,
            json!({"query": "zebrafish", "mode": "fulltext", "maxCharsPerChunk": bad}),
        )
        .unwrap_err();
        assert_eq!(x.error_code, ErrorCode::InvalidRequest);
        assert_eq!(x.details.unwrap()["field"], "maxCharsPerChunk");
    }
}

#[test]
fn projects_are_recorded_and_checked() {
    let c = fulltext_collection();
    let e = engine(&c.bundle);
    assert_eq!(e.header().project_id.as_deref(), Some("acme/library"));
    assert!(ask(
        &e,
        json!({"query": "zebrafish", "mode": "fulltext", "projectId": "acme/library"})
    )
    .is_ok());
    let x = ask(
        &e,
        json!({"query": "zebrafish", "mode": "fulltext", "projectId": "acme/other"}),
    )
    .unwrap_err();
    assert_eq!(x.error_code, ErrorCode::DocsCollectionUnavailable);
    let d = x.details.unwrap();
    assert_eq!(
        (d["reason"].as_str(), d["available"].as_str()),
        (Some("ProjectNotFound"), Some("acme/library"))
    );
    // Built --no-embeddings: hybrid and semantic are refused, naming why.
    for mode in ["hybrid", "semantic"] {
        let x = ask(&e, json!({"query": "zebrafish", "mode": mode})).unwrap_err();
        assert_eq!(x.error_code, ErrorCode::InvalidRequest, "{mode}");
        assert_eq!(x.details.unwrap()["reason"], "HybridNotSupported");
    }
    // A project name that is not namespace/name is refused before anything is read.
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["library", "Acme/Library", "acme/", "a/b/c", "acme/lib rary"] {
        let err = build(
            &common::fixtures(),
            &tmp.path().join("x.bundle"),
            &["--no-embeddings", "--project", bad],
        )
        .unwrap_err();
        assert!(err.contains("namespace/name"), "{bad}: {err}");
    }
}

/// A copy of the embedding model under another identity: the fp32 weights of the same
/// network (a different file, so a different sha256) and its own id.
fn other_model(dir: &Path) -> PathBuf {
    let src = common::model_dir();
    let dst = dir.join("other-model");
    std::fs::create_dir_all(&dst).unwrap();
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(src.join("manifest.json")).unwrap()).unwrap();
    manifest["id"] = json!(format!("{}-fp32", manifest["id"].as_str().unwrap()));
    std::fs::write(dst.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::copy(src.join("tokenizer.json"), dst.join("tokenizer.json")).unwrap();
    std::fs::copy(src.join("model.fp32.onnx"), dst.join("model.int8.onnx")).unwrap();
    dst
}

#[test]
fn embedding_models_are_recorded_and_a_different_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    write(
        &docs,
        "a.md",
        b"# Alpha\n\nThe quokka agent rotates logs.\n",
    );
    write(&docs, "b.txt", b"Beta\n\nThe archive is kept for a year.\n");
    let model = common::model_dir();
    let other = other_model(tmp.path());
    let out = tmp.path().join("m.bundle");
    build(&docs, &out, &["--model", model.to_str().unwrap()]).unwrap();

    // Loading the bundle with another model: a typed error naming both.
    let bytes = std::fs::read(&out).unwrap();
    let files = ModelFiles::from_dir(&other).unwrap();
    let err = Engine::from_bundle(&bytes, Some(&files)).unwrap_err();
    match &err {
        docloupe::Error::EmbeddingModelMismatch { expected, provided } => {
            assert!(
                expected.contains("all-MiniLM-L6-v2") && !expected.contains("-fp32"),
                "{expected}"
            );
            assert!(provided.contains("-fp32"), "{provided}");
        }
        e => panic!("expected EmbeddingModelMismatch, got {e:?}"),
    }
    assert_eq!(err.code(), ErrorCode::DocsCollectionUnavailable);

    // Rebuilding it with another model needs --force-rebuild; the old bundle stays as it was.
    let refused = build(&docs, &out, &["--model", other.to_str().unwrap()]).unwrap_err();
    assert!(
        refused.contains("--force-rebuild") && refused.contains("-fp32"),
        "{refused}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let forced = build(
        &docs,
        &out,
        &["--model", other.to_str().unwrap(), "--force-rebuild"],
    )
    .unwrap();
    assert!(forced["embedModel"].as_str().unwrap().ends_with("-fp32"));
    let rebuilt = Engine::from_bundle(&std::fs::read(&out).unwrap(), Some(&files)).unwrap();
    assert!(rebuilt
        .header()
        .embedding
        .as_ref()
        .unwrap()
        .id
        .ends_with("-fp32"));

    // A file that is not a bundle is never overwritten without --force-rebuild.
    let notes = tmp.path().join("notes.txt");
    std::fs::write(&notes, "my notes").unwrap();
    let refused = build(&docs, &notes, &["--no-embeddings"]).unwrap_err();
    assert!(refused.contains("not a docloupe bundle"), "{refused}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");
}

#[test]
fn an_incremental_build_re_embeds_only_changed_chunks_and_equals_a_clean_build() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    mixed_folder(&docs);
    let model = common::model_dir();
    let m = ["--model", model.to_str().unwrap()];
    let first = tmp.path().join("first.bundle");
    let r0 = build(&docs, &first, &m).unwrap();
    let total = r0["chunksWritten"].as_u64().unwrap();
    assert_eq!(r0["chunksEmbedded"].as_u64().unwrap(), total);

    // Nothing changed: nothing is embedded, the bytes stay.
    let again = tmp.path().join("again.bundle");
    std::fs::copy(&first, &again).unwrap();
    let r1 = build(&docs, &again, &[&m[..], &["--incremental"]].concat()).unwrap();
    assert_eq!(
        (r1["chunksEmbedded"].as_u64(), r1["chunksReused"].as_u64()),
        (Some(0), Some(total))
    );
    // …and no file is cut into chunks again: unchanged files take their chunks over.
    assert_eq!(r0["documentsChunked"], r0["documentsProcessed"]);
    assert_eq!(r1["documentsChunked"], 0, "{r1:#}");
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&first).unwrap()
    );

    // One document changes (a paragraph more) and one is added.
    write(
        &docs,
        "notes/plain.txt",
        b"Plain notes\n\nThe archive rotates every night.\n\nOld archives move to cold storage.\n",
    );
    write(
        &docs,
        "notes/new.md",
        b"# New\n\nA page that was not there before.\n",
    );
    let incremental = tmp.path().join("incremental.bundle");
    std::fs::copy(&first, &incremental).unwrap();
    let r2 = build(&docs, &incremental, &[&m[..], &["--incremental"]].concat()).unwrap();
    let clean = tmp.path().join("clean.bundle");
    let r3 = build(&docs, &clean, &m).unwrap();
    assert_eq!(
        std::fs::read(&incremental).unwrap(),
        std::fs::read(&clean).unwrap(),
        "an incremental build must write the clean build's bytes"
    );
    // Exactly the chunks of the changed and the new document were embedded.
    let e = engine(&clean);
    let b = e.bundle().unwrap();
    let chunks_of = |path: &str| {
        let d = b.docs.documents.iter().find(|d| d.path == path).unwrap();
        d.chunk_count as u64
    };
    let changed = chunks_of("notes/plain.txt") + chunks_of("notes/new.md");
    assert_eq!(r2["chunksEmbedded"].as_u64().unwrap(), changed, "{r2:#}");
    assert_eq!(
        r2["chunksReused"].as_u64().unwrap(),
        r3["chunksWritten"].as_u64().unwrap() - changed
    );
    assert_eq!(r3["chunksEmbedded"], r3["chunksWritten"]);
    // Only the changed and the new file were chunked again.
    assert_eq!(r2["documentsChunked"], 2, "{r2:#}");
}

#[test]
fn an_incremental_build_with_compact_codes_equals_a_clean_build_too() {
    // Large collections get compact first-pass codes (from 10k chunks), computed from the
    // collection's mean: one changed chunk changes the mean, and every code is recomputed from
    // the same int8 vectors in the same order, so reusing vectors keeps the bundle identical.
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    mixed_folder(&docs);
    let model = common::model_dir();
    let args = [
        "--model",
        model.to_str().unwrap(),
        "--compact-threshold",
        "2",
    ];
    let first = tmp.path().join("first.bundle");
    build(&docs, &first, &args).unwrap();
    assert!(matches!(
        engine(&first).bundle().unwrap().vectors,
        Some(docloupe::index::vector::VectorIndex::Coded(_))
    ));
    write(
        &docs,
        "notes/plain.txt",
        b"Plain notes\n\nThe archive rotates every hour now.\n",
    );
    let r = build(&docs, &first, &[&args[..], &["--incremental"]].concat()).unwrap();
    assert_eq!(r["chunksEmbedded"], 1, "{r:#}");
    let clean = tmp.path().join("clean.bundle");
    build(&docs, &clean, &args).unwrap();
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&clean).unwrap()
    );
}

#[test]
fn identical_sections_are_embedded_once_and_share_their_vector() {
    // Versioned documentation repeats pages word for word under other paths: each distinct
    // text runs through the model once, and every copy gets the very same vector.
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let page = b"# Archive\n\nThe archive rotates every night.\n\n## Restore\n\nCopy a day back from cold storage.\n";
    write(&docs, "5.1/archive.md", page);
    write(&docs, "7.4/archive.md", page);
    // Same body under another title: another breadcrumb, so another text.
    write(
        &docs,
        "7.5/archive.md",
        b"# Archives\n\nThe archive rotates every night.\n\n## Restore\n\nCopy a day back from cold storage.\n",
    );
    let model = common::model_dir();
    let out = tmp.path().join("v.bundle");
    let r = build(&docs, &out, &["--model", model.to_str().unwrap()]).unwrap();
    let written = r["chunksWritten"].as_u64().unwrap();
    let per_page = written / 3;
    assert_eq!(written, 3 * per_page, "{r:#}");
    assert_eq!(r["chunksEmbedded"].as_u64().unwrap(), 2 * per_page, "{r:#}");
    assert_eq!(r["chunksShared"].as_u64().unwrap(), per_page, "{r:#}");
    assert_eq!(r["chunksReused"], 0, "{r:#}");

    let e = engine(&out);
    let b = e.bundle().unwrap();
    let chunks_of = |path: &str| -> Vec<u32> {
        let d = b.docs.documents.iter().find(|d| d.path == path).unwrap();
        (d.first_chunk..d.first_chunk + d.chunk_count).collect()
    };
    let vectors = b.vectors.as_ref().expect("an embedding build has vectors");
    let by_chunk: HashMap<u32, docloupe::index::vector::QVec> =
        vectors.vectors().map(|q| (q.chunk, q)).collect();
    for (a, c) in chunks_of("5.1/archive.md")
        .into_iter()
        .zip(chunks_of("7.4/archive.md"))
    {
        assert_eq!(by_chunk[&a].data, by_chunk[&c].data);
        assert_eq!(by_chunk[&a].scale, by_chunk[&c].scale);
    }
    // The retitled copy was embedded on its own.
    let (a, c) = (
        chunks_of("5.1/archive.md")[0],
        chunks_of("7.5/archive.md")[0],
    );
    assert_ne!(by_chunk[&a].data, by_chunk[&c].data);

    // A build of one copy alone gives that copy the same vectors: sharing changes no value.
    let alone = tmp.path().join("alone");
    write(&alone, "5.1/archive.md", page);
    let one = tmp.path().join("one.bundle");
    build(&alone, &one, &["--model", model.to_str().unwrap()]).unwrap();
    let e1 = engine(&one);
    let b1 = e1.bundle().unwrap();
    let solo: Vec<_> = b1.vectors.as_ref().unwrap().vectors().collect();
    for q in &solo {
        let shared = &by_chunk[&(chunks_of("5.1/archive.md")[0] + q.chunk)];
        assert_eq!((&shared.data, shared.scale), (&q.data, q.scale));
    }
}
