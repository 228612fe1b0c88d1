//! Spec: the `/search` and `search_documents` user's day (issue 25) over a collection made for
//! it: `limit` counts documents, pages never repeat or skip a result, and identical files are
//! two documents with chunks of their own.

mod common;
mod formats;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use docloupe::search::documents::{self, DocumentsRequest};
use docloupe::{Calibration, Engine, SearchRequest, SearchResponse};
use serde_json::json;

/// Thirty harbor notes of three sections each (every section matches "harbor"), plus two
/// files with the same content.
fn collection() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(docs.join("copies")).unwrap();
        let words = [
            "pier", "crane", "tide", "ferry", "buoy", "dock", "quay", "anchor", "berth", "hull",
        ];
        for i in 0..30 {
            let w = words[i % words.len()];
            let body = format!(
                "# Harbor note {i}\n\n## Arrival\n\nThe harbor {w} log {i} lists arrivals at the harbor.\n\n\
                 ## Cargo\n\nHarbor cargo for {w} {i}: containers and the harbor crane schedule.\n\n\
                 ## Departure\n\nLeaving the harbor by the {w} {i} channel at high tide.\n"
            );
            write(&docs.join(format!("notes/note-{i:02}.md")), &body);
        }
        let twin = "# Lighthouse keeping\n\nThe lighthouse lamp is trimmed at dusk.\n";
        write(&docs.join("copies/a.md"), twin);
        write(&docs.join("copies/b.md"), twin);
        let out = dir.path().join("c.bundle");
        common::build(&docs, &out, &[]);
        std::fs::read(out).unwrap()
    })
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn engine() -> Engine {
    Engine::with_embedder(collection(), Some(common::embedder())).unwrap()
}

fn documents(e: &Engine, args: serde_json::Value) -> documents::DocumentsResponse {
    let req = DocumentsRequest::from_value(&args).unwrap();
    let r = e.search(&req.to_search_request()).unwrap();
    documents::shape(&req, &r)
}

fn ids(r: &documents::DocumentsResponse) -> Vec<String> {
    r.results.iter().map(|d| d.id.clone()).collect()
}

fn contract(e: &Engine, body: serde_json::Value) -> SearchResponse {
    e.search(&serde_json::from_value::<SearchRequest>(body).unwrap())
        .unwrap()
}

fn chunk_ids(r: &SearchResponse) -> Vec<String> {
    r.results.iter().map(|x| x.chunk_id.clone()).collect()
}

/// Issue 25 #3: 30 documents match with 3 fragments each; `limit` 20 gives 20 documents (a
/// hidden cap of 50 fragments gave 17).
#[test]
fn limit_counts_documents_whatever_the_fragments_per_document() {
    let e = engine();
    for mode in ["fulltext", "hybrid", "semantic"] {
        let r = documents(
            &e,
            json!({"query": "harbor", "limit": 20, "max_chunks": 3, "search_mode": mode}),
        );
        assert_eq!(r.results.len(), 20, "{mode}");
        if mode == "fulltext" {
            assert_eq!(r.total_results, 30, "{mode}");
            assert!(r.results.iter().all(|d| d
                .context_chunks
                .iter()
                .filter(|c| c.relevance_score.is_some())
                .count()
                == 3));
        }
    }
    let r = documents(
        &e,
        json!({"query": "harbor", "limit": 50, "max_chunks": 10}),
    );
    assert!(r.results.len() >= 30, "{}", r.results.len());
}

/// Issue 25 #2: pages of `search_documents` are cut from one ranking: three pages of 7 are
/// the first 21 documents, in order, without a repeat; a page past the end is empty.
#[test]
fn search_documents_pages_never_repeat_or_skip_a_document() {
    let e = engine();
    for mode in ["fulltext", "hybrid"] {
        let whole = ids(&documents(
            &e,
            json!({"query": "harbor crane", "limit": 21, "search_mode": mode}),
        ));
        assert_eq!(whole.len(), 21, "{mode}");
        let mut paged = Vec::new();
        let mut totals = BTreeSet::new();
        for page in 1..=3 {
            let r = documents(
                &e,
                json!({"query": "harbor crane", "limit": 7, "page": page, "search_mode": mode}),
            );
            totals.insert(r.total_results);
            paged.extend(ids(&r));
        }
        // The same total on every page, and only what matches: the 30 notes, not the
        // lighthouse twins the nearest-neighbour search also reaches (issue 25 #4).
        assert_eq!(totals, BTreeSet::from([30]), "{mode}");
        assert_eq!(paged, whole, "{mode}");
        let past = documents(
            &e,
            json!({"query": "harbor crane", "limit": 7, "page": 9, "search_mode": mode}),
        );
        assert!(past.results.is_empty(), "{mode}");
    }
}

/// Issue 25 #2: the contract's `offset` counts results; pages of 10 are the single answer of
/// 50 cut in five, and the pages through `total` list every result once.
#[test]
fn contract_offset_pages_through_every_result_once() {
    let e = engine();
    for mode in ["fulltext", "hybrid", "semantic"] {
        let base = json!({"query": "harbor cargo", "mode": mode, "includeContext": false});
        let with = |extra: serde_json::Value| {
            let mut b = base.clone();
            b.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            contract(&e, b)
        };
        let fifty = with(json!({"limit": 50}));
        let mut pages = Vec::new();
        let mut offset = 0;
        while offset < fifty.total {
            let page = with(json!({"limit": 10, "offset": offset}));
            assert_eq!(page.total, fifty.total, "{mode}");
            assert!(!page.results.is_empty(), "{mode} offset {offset}");
            pages.extend(chunk_ids(&page));
            offset += 10;
        }
        assert_eq!(
            &pages[..50.min(pages.len())],
            &chunk_ids(&fifty)[..],
            "{mode}"
        );
        assert_eq!(pages.len(), fifty.total, "{mode}");
        let unique: BTreeSet<&String> = pages.iter().collect();
        assert_eq!(unique.len(), pages.len(), "{mode}: no result twice");
        assert!(with(json!({"offset": fifty.total})).results.is_empty());
    }
    let bad = e
        .search_json(r#"{"query": "harbor", "offset": 10001}"#)
        .unwrap_err();
    assert_eq!(bad.details.unwrap()["field"], "offset");
    let bad = e
        .search_json(r#"{"query": "harbor", "offset": -1}"#)
        .unwrap_err();
    assert_eq!(bad.details.unwrap()["field"], "offset");
    // search_documents' `byDocument` switch is the adapter's, not a contract field.
    assert!(e
        .search_json(r#"{"query": "harbor", "byDocument": true}"#)
        .is_err());
}

/// Issue 25 #9: two files with the same content are two documents, each with its own chunk
/// ids, and both come back.
#[test]
fn identical_files_are_two_documents_with_their_own_chunk_ids() {
    let e = engine();
    for mode in ["fulltext", "hybrid"] {
        let r = contract(&e, json!({"query": "lighthouse lamp", "mode": mode}));
        let twins: Vec<_> = r
            .results
            .iter()
            .filter(|x| x.document_path.starts_with("copies/"))
            .collect();
        let paths: BTreeSet<&str> = twins.iter().map(|x| x.document_path.as_str()).collect();
        assert_eq!(
            paths,
            BTreeSet::from(["copies/a.md", "copies/b.md"]),
            "{mode}"
        );
        let ids: BTreeSet<&str> = r.results.iter().map(|x| x.chunk_id.as_str()).collect();
        assert_eq!(ids.len(), r.results.len(), "{mode}: chunk ids are unique");
    }
}

/// Issue 25 #4: `total` counts matches (a query word, or a semantic neighbour at least as
/// close as the model's calibrated floor), not every nearest neighbour; `score` (and so
/// `relevance_score`) is on 0..1 in every mode, fulltext ordered as BM25.
#[test]
fn totals_count_matches_and_every_mode_scores_on_zero_to_one() {
    let e = engine();
    let everything = engine().calibrate(Calibration {
        match_floor: Some(0.0),
        ..Default::default()
    });
    let floor = docloupe::embed::match_rule(&e.header().embedding.as_ref().unwrap().id).floor;
    assert!(floor > 0.0);
    let body = json!({"query": "lighthouse lamp at dusk", "mode": "semantic", "limit": 50});
    let all = contract(&everything, body.clone());
    let matched = contract(&e, body);
    assert!(
        all.total > matched.total,
        "{} vs {}",
        all.total,
        matched.total
    );
    assert!(matched.total >= 2, "the twins match");
    assert!(matched
        .results
        .iter()
        .all(|x| x.ranking_signals.semantic >= floor));
    for body in [
        json!({"query": "harbor crane", "mode": "fulltext", "limit": 50}),
        json!({"query": "harbor crane", "mode": "semantic", "limit": 50}),
        json!({"query": "harbor crane", "mode": "hybrid", "rerank": false, "limit": 50}),
        json!({"query": "harbor crane", "mode": "hybrid", "limit": 50}),
    ] {
        let r = contract(&e, body.clone());
        assert!(!r.results.is_empty(), "{body}");
        assert!(
            r.results.iter().all(|x| (0.0..=1.0).contains(&x.score)),
            "{body}"
        );
        assert!(r.results.windows(2).all(|w| w[0].score >= w[1].score));
        if body["mode"] == "fulltext" {
            assert!(r
                .results
                .windows(2)
                .all(|w| w[0].ranking_signals.lexical >= w[1].ranking_signals.lexical));
        }
    }
}

/// Issue 25 #10: `index-builder build FILE` builds one document (its path is the file name),
/// and `index-builder convert FILE --model M` shows the chunks that build cuts, with their spans.
#[test]
fn one_file_builds_and_convert_shows_the_builds_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("guide.md");
    let mut text = String::from("# Guide\n\nIntro line about the harbor.\n\n## Setup\n\n");
    for i in 0..40 {
        text.push_str(&format!(
            "Step {i}: moor the boat at berth {i}, check the lines, log the tide.\n\n"
        ));
    }
    text.push_str("## Tuning\n\nThe crane schedule is tuned weekly.\n");
    std::fs::write(&file, &text).unwrap();
    let out = dir.path().join("one.bundle");
    let report = common::build(&file, &out, &[]);
    assert_eq!(report["documentsProcessed"], 1, "{report}");
    let bytes = std::fs::read(&out).unwrap();
    let e = Engine::with_embedder(&bytes, Some(common::embedder())).unwrap();
    let r = contract(&e, json!({"query": "crane schedule", "mode": "fulltext"}));
    assert_eq!(r.results[0].document_path, "guide.md");

    let converted = std::process::Command::new(common::index_builder_bin())
        .args(["convert", file.to_str().unwrap(), "--model"])
        .arg(common::model_dir())
        .output()
        .unwrap();
    assert!(converted.status.success(), "{converted:?}");
    let v: serde_json::Value = serde_json::from_slice(&converted.stdout).unwrap();
    assert_eq!(v["tokenCounts"], "model");
    let shown: Vec<(Vec<String>, u64, u64)> = v["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                serde_json::from_value(c["sectionPath"].clone()).unwrap(),
                c["lineStart"].as_u64().unwrap(),
                c["lineEnd"].as_u64().unwrap(),
            )
        })
        .collect();
    let bundle = e.bundle().unwrap();
    let built: Vec<(Vec<String>, u64, u64)> = bundle
        .docs
        .chunks
        .iter()
        .map(|c| {
            (
                c.location.section_path.clone(),
                c.location.line_start as u64,
                c.location.line_end as u64,
            )
        })
        .collect();
    assert!(built.len() > 2, "the long section is cut: {built:?}");
    assert_eq!(shown, built);
    assert!(v["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["tokens"].as_u64().unwrap() <= 256));

    // A file the builder does not read is an error naming it, not an empty bundle.
    let odd = dir.path().join("notes.rtf");
    std::fs::write(&odd, "{\\rtf1 hi}").unwrap();
    let failed = std::process::Command::new(common::index_builder_bin())
        .args(["build", odd.to_str().unwrap(), "--no-embeddings", "--out"])
        .arg(dir.path().join("x.bundle"))
        .output()
        .unwrap();
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("notes.rtf"));
}

/// Issue 25 #1: every format is dated from the document itself (PDF info dates, DOCX core
/// properties, front matter `date` and `updated`), `created_at` and `updated_at` differ where
/// the document has both, `file_size` is the file's bytes, date filters find PDFs and Word
/// files, and the facets count what has no date.
#[test]
fn documents_are_dated_from_their_own_metadata_and_sized() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let pdf = formats::pdf_dated(
        &formats::pdf(
            &[&[
                &["Harbor survey"],
                &["The harbor survey of the north pier."],
            ]],
            &[],
            Some("Harbor survey"),
        ),
        "D:20230115093000+01'00'",
        "D:20240220",
    );
    let docx = formats::docx_dated(
        &[
            ("Title", "Harbor budget"),
            ("", "The harbor budget for dredging."),
        ],
        &[],
        Some(("2022-05-01T08:00:00Z", "2024-02-10T12:00:00Z")),
    );
    let epoch = formats::docx(&[("", "A harbor memo with no real date.")], &[]);
    let files: [(&str, &[u8]); 5] = [
        ("survey.pdf", &pdf),
        ("budget.docx", &docx),
        ("memo.docx", &epoch),
        ("notes.txt", b"Harbor notes without any date.\n"),
        (
            "page.md",
            b"---\ndate: 2020-01-01\nupdated: 2024-03-01\n---\n# Harbor page\n\nThe harbor page.\n",
        ),
    ];
    for (name, bytes) in files {
        std::fs::write(docs.join(name), bytes).unwrap();
    }
    let out = dir.path().join("dated.bundle");
    common::build(&docs, &out, &["--no-embeddings"]);
    let e = Engine::lexical(&std::fs::read(&out).unwrap()).unwrap();
    let all = documents(
        &e,
        json!({"query": "harbor", "search_mode": "fulltext", "limit": 10}),
    );
    // Built without vectors: a call that names no search_mode is answered in fulltext, not
    // refused (issue 62).
    let unnamed = documents(&e, json!({"query": "harbor", "limit": 10}));
    assert!(unnamed.success);
    assert_eq!(ids(&unnamed), ids(&all));
    let by_id = |id: &str| all.results.iter().find(|d| d.id == id).unwrap();
    let dates = |id: &str| {
        let d = by_id(id);
        (d.created_at.as_deref(), d.updated_at.as_deref())
    };
    assert_eq!(
        dates("survey.pdf"),
        (Some("2023-01-15"), Some("2024-02-20"))
    );
    assert_eq!(
        dates("budget.docx"),
        (Some("2022-05-01"), Some("2024-02-10"))
    );
    assert_eq!(dates("page.md"), (Some("2020-01-01"), Some("2024-03-01")));
    // The Unix epoch is what writers put for "no date"; a text file has none of its own.
    assert_eq!(dates("memo.docx"), (None, None));
    assert_eq!(dates("notes.txt"), (None, None));
    for (name, bytes) in files {
        assert_eq!(by_id(name).file_size, Some(bytes.len() as u64), "{name}");
    }
    assert_eq!(all.facets.undated, 2);
    assert_eq!(all.facets.date_distribution.get("2024-02"), Some(&2));
    let february = documents(
        &e,
        json!({"query": "harbor", "search_mode": "fulltext",
               "date_range": {"from": "2024-02-01", "to": "2024-02-29"}}),
    );
    let mut ids = ids(&february);
    ids.sort();
    assert_eq!(ids, ["budget.docx", "survey.pdf"]);
    assert_eq!(february.facets.undated, 0);
}
