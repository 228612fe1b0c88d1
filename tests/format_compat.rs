//! Spec: the engine reads the current bundle format and the one before it, the same for the
//! file, the split layout and the lexical build; anything older is refused with the typed
//! error that names the index-builder to rebuild with.
//!
//! Frozen files (never regenerate them; add new ones for a new version):
//! - `tests/fixtures/bundles/v8-coded.bundle`: format 8, written from `tests/fixtures/docs`
//!   with `--model` (all-MiniLM-L6-v2 int8), `--compact-threshold 1` (compact first-pass
//!   codes) and `--project docloupe/fixtures`.
//! - `v9-coded.bundle`: format 9 (documents say where their dates come from), the same
//!   documents and arguments.
//! - `v9-mixed.bundle`: format 9, the same documents plus `papers/smith2020.pdf` (the
//!   four-page paper of `tests/collections_spec.rs`, written by `tests/formats::pdf` with its
//!   outline and title), with `--model`, `--project docloupe/fixtures` and `--references`
//!   holding two CSL-JSON entries: `smith2020` (article-journal "Caching at the Edge", Smith,
//!   Ada, 2020, DOI 10.1000/edge.2020) and `caching` (webpage "Caching guide", URL
//!   https://example.org/caching).
//! - `v7-coded.bundle`: format 7 (chunk texts deflated in blocks), the arguments of
//!   `v8-coded`: the newest format no longer read.
//! - `tests/fixtures/splits/v11-coded/`: split layout 11, cut from `v8-coded.bundle` by
//!   the index-builder of format 8 (`index-builder split`); `v12-coded/`: layout 12, cut from
//!   `v9-coded.bundle`.

mod common;

use std::collections::HashMap;
use std::path::Path;

use docloupe::bundle::{self, FORMAT_VERSION, OLDEST_FORMAT_VERSION, REBUILD_WITH};
use docloupe::{Engine, Error, ErrorResponse, Mode, SearchRequest};

/// Format 8: every section deflated; the compact codes computed when read.
const V8: &[u8] = include_bytes!("fixtures/bundles/v8-coded.bundle");
/// Format 9: the same documents, whose dates say where they come from.
const V9: &[u8] = include_bytes!("fixtures/bundles/v9-coded.bundle");
/// Format 9: a PDF with page spans and two documents with citations.
const V9_MIXED: &[u8] = include_bytes!("fixtures/bundles/v9-mixed.bundle");
/// Format 7: no longer read.
const V7: &[u8] = include_bytes!("fixtures/bundles/v7-coded.bundle");

#[test]
fn the_engine_reads_the_current_format_and_the_one_before() {
    assert_eq!(
        FORMAT_VERSION, 9,
        "a new format adds its frozen bundle here"
    );
    assert_eq!(OLDEST_FORMAT_VERSION, FORMAT_VERSION - 1);
    for (bytes, version) in [(V8, 8u32), (V9, 9), (V9_MIXED, 9)] {
        assert_eq!(bytes[8..12], version.to_le_bytes());
    }
}

#[test]
fn frozen_v8_and_v9_bundles_load_and_answer() {
    for bytes in [V8, V9] {
        let engine = Engine::from_bundle(bytes, None).unwrap();
        assert_eq!(
            engine.header().project_id.as_deref(),
            Some("docloupe/fixtures")
        );
        assert_eq!(engine.header().counts.documents, 7);
        let r = engine
            .search(&SearchRequest::new("размер кэша").mode(Mode::Fulltext))
            .unwrap();
        assert_eq!(r.results[0].document_path, "ru/документация.md");
        searches_its_compact_codes(bytes);
    }
}

/// Format 9 stores what format 8 did, and where each document's dates come from: the same
/// chunks, postings and texts, the same answers.
#[test]
fn a_v9_bundle_holds_the_v8_data_and_the_dates_sources() {
    let (v8, v9) = (bundle::decode(V8).unwrap(), bundle::decode(V9).unwrap());
    assert_eq!(v9.docs.chunks, v8.docs.chunks);
    assert_eq!(v9.lexical, v8.lexical);
    assert_eq!(v9.text, v8.text);
    assert!(v8.docs.documents.iter().all(|d| d.date_source.is_none()));
    let dated = |b: &bundle::Bundle| {
        b.docs
            .documents
            .iter()
            .filter(|d| d.date.is_some())
            .map(|d| d.path.clone())
            .collect::<Vec<_>>()
    };
    assert!(!dated(&v9).is_empty());
    assert_eq!(dated(&v9), dated(&v8));
    assert!(v9
        .docs
        .documents
        .iter()
        .all(|d| d.date.is_none() || d.date_source.is_some()));
    // The fulltext answers differ only by the field format 9 adds (the vectors were embedded
    // on different machines, whose kernels differ in the last bits).
    let sources =
        ["front_matter", "document", "metadata"].map(|s| format!(r#""dateSource":"{s}","#));
    for query in ["cache size", "размер кэша", "how do I install it"] {
        let v9 = sources
            .iter()
            .fold(fulltext(V9, query), |a, s| a.replace(s, ""));
        assert_eq!(v9, fulltext(V8, query), "{query}");
    }
}

#[test]
fn a_frozen_v9_bundle_answers_with_pages_and_citations() {
    let engine = Engine::from_bundle(V9_MIXED, None).unwrap();
    assert_eq!(engine.header().counts.documents, 8);
    let r = engine
        .search(&SearchRequest::new("zebrafish").mode(Mode::Fulltext))
        .unwrap();
    let top = &r.results[0];
    assert_eq!(top.document_path, "papers/smith2020.pdf");
    assert_eq!((top.page_start, top.page_end), (Some(3), Some(4)));
    assert_eq!(top.cite().as_deref(), Some("[@smith2020, pp. 3–4]"));
    let r = engine
        .search(&SearchRequest::new("cache size").mode(Mode::Fulltext))
        .unwrap();
    assert_eq!(r.results[0].document_path, "en/caching.md");
    let c = r.results[0].citation.as_ref().unwrap();
    assert_eq!(
        (c.citekey.as_str(), c.url.as_deref()),
        ("caching", Some("https://example.org/caching"))
    );
}

/// A frozen bundle with compact codes (48 bytes a chunk) answers a semantic question.
fn searches_its_compact_codes(bytes: &[u8]) {
    use docloupe::index::vector::VectorIndex;
    let engine = Engine::from_bundle(bytes, Some(common::model_files())).unwrap();
    let Some(VectorIndex::Coded(coded)) = &engine.bundle().unwrap().vectors else {
        panic!("the fixture holds compact codes");
    };
    assert_eq!(coded.row_codes().len(), coded.vectors.len() * 48);
    let r = engine
        .search(&SearchRequest {
            query: "how big may the cache grow".into(),
            mode: Some(Mode::Semantic),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.results[0].document_path, "en/caching.md");
}

/// The v8 bundle was indexed with analyzer version 2, which reads a soft hyphen inside a word
/// as a break; the v9 one with version 3, which reads the word as displayed. Each is queried
/// with its own rules, so a query matches the text the way the text was indexed.
#[test]
fn a_bundle_is_queried_with_the_analyzer_rules_it_was_built_with() {
    assert_eq!(bundle::decode(V8).unwrap().header.analyzer.version, 2);
    assert_eq!(bundle::decode(V9).unwrap().header.analyzer.version, 3);
    let shown = "ca\u{AD}che size";
    assert_eq!(fulltext(V9, shown), fulltext(V9, "cache size"));
    assert_eq!(fulltext(V8, shown), fulltext(V8, "ca che size"));
    assert_ne!(fulltext(V8, shown), fulltext(V8, "cache size"));
}

#[test]
fn the_current_format_reencodes_its_frozen_bundle_byte_for_byte() {
    // While FORMAT_VERSION is 9 the encoder must still write exactly these bytes, from the
    // text blocks as read and from the texts as plain strings; when the format changes, this
    // test moves to the new version's frozen file.
    for frozen in [V9, V9_MIXED] {
        let read = bundle::decode(frozen).unwrap();
        assert_eq!(bundle::encode(&read).unwrap(), frozen);
        // Written in pieces (as the builder writes a file), the same bytes.
        let mut pieces = Vec::new();
        bundle::encode_pieces(&read)
            .unwrap()
            .write_to(&mut pieces)
            .unwrap();
        assert_eq!(pieces, frozen);
        let texts = read
            .text
            .all()
            .unwrap()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let plain = bundle::Bundle {
            text: bundle::TextSection::new(texts),
            ..read
        };
        assert_eq!(bundle::encode(&plain).unwrap(), frozen);
    }
}

/// What a bundle answers to `query` in fulltext, as JSON.
fn fulltext(bytes: &[u8], query: &str) -> String {
    let r = Engine::from_bundle(bytes, None)
        .unwrap()
        .search(&SearchRequest::new(query).mode(Mode::Fulltext))
        .unwrap();
    serde_json::to_string(&r.results).unwrap()
}

/// What a bundle answers to `query` in each mode, as JSON.
fn answers(bytes: &[u8], query: &str) -> Vec<String> {
    let engine = Engine::from_bundle(bytes, Some(common::model_files())).unwrap();
    [Mode::Fulltext, Mode::Semantic, Mode::Hybrid]
        .into_iter()
        .map(|mode| {
            let r = engine
                .search(&SearchRequest {
                    query: query.into(),
                    mode: Some(mode),
                    ..Default::default()
                })
                .unwrap();
            serde_json::to_string(&r.results).unwrap()
        })
        .collect()
}

/// The refusal every reader gives a bundle of format 1 to 7: `OlderFormat`, naming the
/// index-builder to rebuild with, for the full engine and the lexical build's decoder alike.
#[test]
fn older_formats_are_refused_naming_the_index_builder_to_rebuild_with() {
    let refused = |bytes: &[u8], found: u32| {
        for e in [
            Engine::from_bundle(bytes, None).unwrap_err(),
            bundle::decode_lexical(bytes).unwrap_err(),
        ] {
            let m = e.to_string();
            assert!(
                m.contains(&format!("version {found} is older"))
                    && m.contains("(8 and newer)")
                    && m.contains(REBUILD_WITH),
                "{m}"
            );
            let r = ErrorResponse::from(e);
            assert_eq!(r.error_code, docloupe::ErrorCode::DocsCollectionUnavailable);
            let d = r.details.unwrap();
            assert_eq!(
                (&d["reason"], &d["found"], &d["oldest"], &d["rebuildWith"]),
                (
                    &"OlderFormat".into(),
                    &found.into(),
                    &8.into(),
                    &REBUILD_WITH.into()
                )
            );
        }
    };
    // The frozen format-7 bundle, and every older version number on a current prefix.
    refused(V7, 7);
    for old in 0..OLDEST_FORMAT_VERSION {
        let mut bytes = V8.to_vec();
        bytes[8..12].copy_from_slice(&old.to_le_bytes());
        refused(&bytes, old);
    }
    assert_eq!(
        REBUILD_WITH,
        concat!("index-builder ", env!("CARGO_PKG_VERSION"))
    );
}

const BUILD_ARGS: [&str; 7] = [
    "--compact-threshold",
    "1",
    "--project",
    "docloupe/fixtures",
    "--quiet",
    "--incremental",
    // A frozen bundle carries no seal of this machine's builder (`trust.rs`).
    "--trust-previous",
];

/// `--incremental` over a format-8 bundle embeds nothing: it takes its vectors, and writes
/// the current format, which is what a clean build writes.
#[test]
fn an_incremental_build_over_a_v8_bundle_reuses_its_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v8.bundle");
    std::fs::write(&out, V8).unwrap();
    let args = &BUILD_ARGS;
    let report = common::build(&common::fixtures(), &out, args);
    assert_eq!(report["chunksEmbedded"], 0, "{report}");
    assert_eq!(report["chunksReused"], 14, "{report}");
    let bytes = std::fs::read(&out).unwrap();
    let (built, v8) = (bundle::decode(&bytes).unwrap(), bundle::decode(V8).unwrap());
    assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
    let vectors =
        |b: &bundle::Bundle| -> Vec<_> { b.vectors.as_ref().unwrap().vectors().collect() };
    assert_eq!(vectors(&built), vectors(&v8));
    // And the rest is what a clean build of the current format writes (its vectors are this
    // machine's, which the fast kernels make differ from the frozen ones in the last bits).
    let clean = dir.path().join("clean.bundle");
    common::build(&common::fixtures(), &clean, &args[..args.len() - 2]);
    let clean = bundle::decode(&std::fs::read(&clean).unwrap()).unwrap();
    assert_eq!(built.docs, clean.docs);
    assert_eq!(built.lexical, clean.lexical);
    assert_eq!(built.text, clean.text);
    assert_eq!(built.header.analyzer, clean.header.analyzer);
}

/// `--incremental` over a bundle too old to read builds clean, saying why.
#[test]
fn an_incremental_build_over_a_v7_bundle_embeds_everything_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v7.bundle");
    std::fs::write(&out, V7).unwrap();
    let report = common::build(&common::fixtures(), &out, &BUILD_ARGS);
    let embedded =
        report["chunksEmbedded"].as_u64().unwrap() + report["chunksShared"].as_u64().unwrap();
    assert_eq!(embedded, 14, "{report}");
    assert_eq!(report["chunksReused"], 0, "{report}");
    let warned = common::warnings(&report)
        .iter()
        .any(|w| w.contains("cannot be reused") && w.contains("version 7 is older"));
    assert!(warned, "{report}");
    assert!(Engine::from_bundle(&std::fs::read(&out).unwrap(), None).is_ok());
}

/// What an incremental build keeps of the previous bundle, read apart from a whole decode:
/// the chunk metadata as written, a document at a time, the texts, and the vectors give back
/// what the whole decode does, from every frozen format read.
#[test]
fn every_format_reads_back_apart_as_it_decodes_whole() {
    for (k, bytes) in [V8, V9, V9_MIXED].into_iter().enumerate() {
        let whole = bundle::decode(bytes).unwrap();
        let docs = bundle::packed_docs(bytes).unwrap();
        assert_eq!(docs.documents(), whole.docs.documents.as_slice());
        for (d, doc) in whole.docs.documents.iter().enumerate() {
            let run = doc.first_chunk as usize..(doc.first_chunk + doc.chunk_count) as usize;
            assert_eq!(docs.chunks(d).unwrap(), whole.docs.chunks[run]);
        }
        assert_eq!(
            bundle::decode_text(bytes).unwrap(),
            whole.text,
            "fixture {k}"
        );
        let vectors = bundle::decode_vectors(bytes).unwrap();
        assert_eq!(
            vectors.map(|v| v.vectors().collect::<Vec<_>>()),
            whole.vectors.map(|v| v.vectors().collect::<Vec<_>>()),
            "fixture {k}"
        );
    }
}

/// A frozen split layout's files by name.
fn split_files(name: &str) -> HashMap<String, Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/splits")
        .join(name);
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// The contract's answers of a split engine, fetching the files it names, in each mode.
fn split_answers(files: &HashMap<String, Vec<u8>>, query: &str) -> Vec<String> {
    let mut engine = Engine::split(&files["core.bin"]).unwrap();
    engine
        .install_embedder(docloupe::Embedder::new(common::model_files()).unwrap())
        .unwrap();
    [Mode::Fulltext, Mode::Semantic, Mode::Hybrid]
        .into_iter()
        .map(|mode| {
            let req = SearchRequest {
                query: query.into(),
                mode: Some(mode),
                ..Default::default()
            };
            let r = engine
                .search_fetching(&req, |name| {
                    files
                        .get(name)
                        .cloned()
                        .ok_or_else(|| Error::Internal(format!("no file {name}")))
                })
                .unwrap();
            serde_json::to_string(&r.results).unwrap()
        })
        .collect()
}

/// Split layouts 11 and 12, cut from the v8 and v9 bundles, answer as their bundles do.
#[test]
fn frozen_split_layouts_11_and_12_answer_as_their_bundles() {
    for (split, whole) in [("v11-coded", V8), ("v12-coded", V9)] {
        let files = split_files(split);
        for query in ["cache size", "размер кэша", "how do I install it"] {
            assert_eq!(
                split_answers(&files, query),
                answers(whole, query),
                "{split}: {query}"
            );
        }
    }
}

/// A split core older than layout 11 is refused as `OlderFormat`, naming the index-builder
/// whose `split` cuts it again.
#[test]
fn older_split_layouts_are_refused_naming_the_index_builder() {
    let files = split_files("v11-coded");
    let mut core = files["core.bin"].clone();
    core[8..12].copy_from_slice(&10u32.to_le_bytes());
    let m = Engine::split(&core).unwrap_err().to_string();
    assert!(
        m.contains("split layout version 10 is older than this engine reads (11 and newer)")
            && m.contains(REBUILD_WITH),
        "{m}"
    );
}
