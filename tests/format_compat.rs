//! Spec: the engine reads the current bundle format and the one before it, the same for the
//! file, the split layout and the lexical build; anything older is refused with the typed
//! error that names the index-builder to rebuild with.
//!
//! Frozen files (never regenerate them; add new ones for a new version):
//! - `tests/fixtures/bundles/v9-coded.bundle`: format 9 (documents say where their dates
//!   come from), written from `tests/fixtures/docs` with `--model` (all-MiniLM-L6-v2 int8),
//!   `--compact-threshold 1` (compact first-pass codes) and `--project docloupe/fixtures`.
//! - `v9-mixed.bundle`: format 9, the same documents plus `papers/smith2020.pdf` (the
//!   four-page paper of `tests/collections_spec.rs`, written by `tests/formats::pdf` with its
//!   outline and title), with `--model`, `--project docloupe/fixtures` and `--references`
//!   holding two CSL-JSON entries: `smith2020` (article-journal "Caching at the Edge", Smith,
//!   Ada, 2020, DOI 10.1000/edge.2020) and `caching` (webpage "Caching guide", URL
//!   https://example.org/caching).
//! - `v10-coded.bundle`: format 10, the arguments of `v9-coded`: no document restricted, so
//!   no access section.
//! - `v10-access.bundle`: format 10, the same arguments and `--access` with two rules:
//!   `ru/` for group `ru-team`, `en/caching.md` for `ops` or `sre` (an access section).
//! - `v8-coded.bundle`: format 8 (every section deflated), the arguments of `v9-coded`: the
//!   newest format no longer read.
//! - `tests/fixtures/splits/v11-coded/`: split layout 11, cut from `v8-coded.bundle` by
//!   the index-builder of format 8 (`index-builder split`); `v12-coded/`: layout 12, cut from
//!   `v9-coded.bundle`.

mod common;

use std::collections::HashMap;
use std::path::Path;

use docloupe::bundle::{self, FORMAT_VERSION, OLDEST_FORMAT_VERSION, REBUILD_WITH};
use docloupe::{Access, Engine, Error, ErrorResponse, Mode, SearchRequest};

/// Format 9: documents say where their dates come from.
const V9: &[u8] = include_bytes!("fixtures/bundles/v9-coded.bundle");
/// Format 9: a PDF with page spans and two documents with citations.
const V9_MIXED: &[u8] = include_bytes!("fixtures/bundles/v9-mixed.bundle");
/// Format 10: the same documents as `V9`, none restricted.
const V10: &[u8] = include_bytes!("fixtures/bundles/v10-coded.bundle");
/// Format 10: three documents restricted to groups of readers.
const V10_ACCESS: &[u8] = include_bytes!("fixtures/bundles/v10-access.bundle");
/// Format 8: no longer read.
const V8: &[u8] = include_bytes!("fixtures/bundles/v8-coded.bundle");

#[test]
fn the_engine_reads_the_current_format_and_the_one_before() {
    assert_eq!(
        FORMAT_VERSION, 10,
        "a new format adds its frozen bundle here"
    );
    assert_eq!(OLDEST_FORMAT_VERSION, FORMAT_VERSION - 1);
    for (bytes, version) in [(V9, 9u32), (V9_MIXED, 9), (V10, 10), (V10_ACCESS, 10)] {
        assert_eq!(bytes[8..12], version.to_le_bytes());
    }
}

#[test]
fn frozen_v9_and_v10_bundles_load_and_answer() {
    for bytes in [V9, V10] {
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

/// Format 10 stores what format 9 did (and an access section where some document is
/// restricted): the same documents, chunks, postings and texts, the same answers.
#[test]
fn a_v10_bundle_holds_the_v9_data() {
    let (v9, v10) = (bundle::decode(V9).unwrap(), bundle::decode(V10).unwrap());
    assert_eq!(v10.docs, v9.docs);
    assert_eq!(v10.lexical, v9.lexical);
    assert_eq!(v10.text, v9.text);
    assert!(v9.access.is_none() && v10.access.is_none());
    for query in ["cache size", "размер кэша", "how do I install it"] {
        assert_eq!(fulltext(V10, query), fulltext(V9, query), "{query}");
    }
}

/// The frozen access bundle: each reader finds the documents their groups open, and the
/// owner every one.
#[test]
fn a_frozen_v10_access_bundle_answers_each_reader_with_their_documents() {
    let b = bundle::decode(V10_ACCESS).unwrap();
    assert_eq!(b.access.as_ref().unwrap().groups, ["ops", "ru-team", "sre"]);
    let engine = Engine::from_bundle(V10_ACCESS, None).unwrap();
    let paths = |query: &str, access: Access| -> Vec<String> {
        let req = SearchRequest {
            access,
            ..SearchRequest::new(query).mode(Mode::Fulltext).limit(20)
        };
        let mut p: Vec<String> = engine
            .search(&req)
            .unwrap()
            .results
            .into_iter()
            .map(|r| r.document_path)
            .collect();
        p.dedup();
        p
    };
    assert!(paths("размер кэша", Access::Public).is_empty());
    assert_eq!(
        paths("размер кэша", Access::groups(["ru-team"]))[0],
        "ru/документация.md"
    );
    assert!(!paths("cache size", Access::Public).contains(&"en/caching.md".to_owned()));
    assert_eq!(
        paths("cache size", Access::groups(["sre"]))[0],
        "en/caching.md"
    );
    assert_eq!(
        paths("cache size", Access::Everything),
        paths("cache size", Access::groups(["ops", "ru-team"]))
    );
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

/// Bundles of format 9 may hold text indexed by analyzer version 2, which reads a soft
/// hyphen inside a word as a break (version 3 reads the word as displayed). Each bundle is
/// queried with its own rules, so a query matches the text the way the text was indexed.
#[test]
fn a_bundle_is_queried_with_the_analyzer_rules_it_was_built_with() {
    assert_eq!(bundle::decode(V10).unwrap().header.analyzer.version, 3);
    let mut v2 = bundle::decode(V10).unwrap();
    v2.header.analyzer.version = 2;
    let v2 = bundle::encode(&v2).unwrap();
    let shown = "ca\u{AD}che size";
    assert_eq!(fulltext(V10, shown), fulltext(V10, "cache size"));
    assert_eq!(fulltext(&v2, shown), fulltext(&v2, "ca che size"));
    assert_ne!(fulltext(&v2, shown), fulltext(&v2, "cache size"));
}

#[test]
fn the_current_format_reencodes_its_frozen_bundle_byte_for_byte() {
    // While FORMAT_VERSION is 10 the encoder must still write exactly these bytes, from the
    // text blocks as read and from the texts as plain strings; when the format changes, this
    // test moves to the new version's frozen file.
    for frozen in [V10, V10_ACCESS] {
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

/// The refusal every reader gives a bundle of format 1 to 8: `OlderFormat`, naming the
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
                    && m.contains("(9 and newer)")
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
                    &9.into(),
                    &REBUILD_WITH.into()
                )
            );
        }
    };
    // The frozen format-8 bundle, and every older version number on a current prefix.
    refused(V8, 8);
    for old in 0..OLDEST_FORMAT_VERSION {
        let mut bytes = V9.to_vec();
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

/// `--incremental` over a format-9 bundle embeds nothing: it takes its vectors, and writes
/// the current format, which is what a clean build writes.
#[test]
fn an_incremental_build_over_a_v9_bundle_reuses_its_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v9.bundle");
    std::fs::write(&out, V9).unwrap();
    let args = &BUILD_ARGS;
    let report = common::build(&common::fixtures(), &out, args);
    assert_eq!(report["chunksEmbedded"], 0, "{report}");
    assert_eq!(report["chunksReused"], 14, "{report}");
    let bytes = std::fs::read(&out).unwrap();
    let (built, v9) = (bundle::decode(&bytes).unwrap(), bundle::decode(V9).unwrap());
    assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
    let vectors =
        |b: &bundle::Bundle| -> Vec<_> { b.vectors.as_ref().unwrap().vectors().collect() };
    assert_eq!(vectors(&built), vectors(&v9));
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
fn an_incremental_build_over_a_v8_bundle_embeds_everything_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v8.bundle");
    std::fs::write(&out, V8).unwrap();
    let report = common::build(&common::fixtures(), &out, &BUILD_ARGS);
    let embedded =
        report["chunksEmbedded"].as_u64().unwrap() + report["chunksShared"].as_u64().unwrap();
    assert_eq!(embedded, 14, "{report}");
    assert_eq!(report["chunksReused"], 0, "{report}");
    let warned = common::warnings(&report)
        .iter()
        .any(|w| w.contains("cannot be reused") && w.contains("version 8 is older"));
    assert!(warned, "{report}");
    assert!(Engine::from_bundle(&std::fs::read(&out).unwrap(), None).is_ok());
}

/// What an incremental build keeps of the previous bundle, read apart from a whole decode:
/// the chunk metadata as written, a document at a time, the texts, and the vectors give back
/// what the whole decode does, from every frozen format read.
#[test]
fn every_format_reads_back_apart_as_it_decodes_whole() {
    for (k, bytes) in [V9, V9_MIXED, V10, V10_ACCESS].into_iter().enumerate() {
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

/// Split layout 12, cut from the v9 bundle, answers as its bundle does; layout 11, cut from
/// the format-8 bundle no longer read, answers as layout 12 does but for what format 9 added
/// (where dates come from) and the last bits of its vectors (embedded on another machine).
#[test]
fn frozen_split_layouts_11_and_12_answer_as_their_bundles() {
    let (v11, v12) = (split_files("v11-coded"), split_files("v12-coded"));
    let sources =
        ["front_matter", "document", "metadata"].map(|s| format!(r#""dateSource":"{s}","#));
    let top = |answer: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(answer).unwrap();
        v[0]["documentPath"].as_str().unwrap_or_default().to_owned()
    };
    for query in ["cache size", "размер кэша", "how do I install it"] {
        let (a11, a12) = (split_answers(&v11, query), split_answers(&v12, query));
        assert_eq!(a12, answers(V9, query), "v12-coded: {query}");
        let fulltext12 = sources.iter().fold(a12[0].clone(), |a, s| a.replace(s, ""));
        assert_eq!(a11[0], fulltext12, "v11-coded fulltext: {query}");
        for mode in 1..3 {
            assert_eq!(top(&a11[mode]), top(&a12[mode]), "v11-coded: {query}");
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
