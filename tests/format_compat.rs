//! Spec: bundles written by earlier releases keep loading (or fail with the typed version
//! error). `tests/fixtures/bundles/v1-fulltext.bundle` was written by format version 1 from
//! `tests/fixtures/docs` with `--no-embeddings --project docloupe/fixtures`, and
//! `v1-hybrid.bundle` from the same folder with `--model` (all-MiniLM-L6-v2 int8) instead of
//! `--no-embeddings`. `v2-mixed.bundle` was written by format version 2 from `en/` and `ru/` of
//! `tests/fixtures/docs` plus `papers/smith2020.pdf` (the four-page paper of
//! `tests/collections_spec.rs`, written by `tests/formats::pdf` with its outline and title),
//! with `--model` (all-MiniLM-L6-v2 int8), `--project docloupe/fixtures` and `--references`
//! holding two CSL-JSON entries: `smith2020` (article, Smith, Ada, 2020, DOI
//! 10.1000/edge.2020, keyword caching, collection Thesis) and `caching` (webpage "Caching
//! guide", URL https://example.org/caching). `v3-fulltext.bundle` was written by format
//! version 3 from `tests/fixtures/docs` with `--no-embeddings --project docloupe/fixtures`.
//! `v4-coded.bundle` was written by format version 4 from `tests/fixtures/docs` with
//! `--model` (all-MiniLM-L6-v2 int8), `--compact-threshold 1` (compact first-pass codes) and
//! `--project docloupe/fixtures`. `v5-coded.bundle` was written by format version 5 (chunk
//! metadata packed) with the same arguments, `v6-coded.bundle` by format version 6 (vectors
//! in the 4-bit form) with the same arguments again, `v7-coded.bundle` by format version 7
//! (chunk texts deflated in blocks) with the same arguments once more, and `v8-coded.bundle`
//! by format version 8 (docs and lexical sections deflated, vectors deflated in rows, codes
//! computed when read) with the same arguments.
//! Never regenerate them — add new files for a new format version instead.

mod common;

use docloupe::bundle::{self, FORMAT_VERSION};
use docloupe::{Engine, Mode, SearchRequest};

const V1: &[u8] = include_bytes!("fixtures/bundles/v1-fulltext.bundle");
/// The same documents with vectors (`--model` all-MiniLM-L6-v2 int8), written by format 1.
const V1_HYBRID: &[u8] = include_bytes!("fixtures/bundles/v1-hybrid.bundle");
/// Format 2: a PDF with page spans and two documents with citations.
const V2_MIXED: &[u8] = include_bytes!("fixtures/bundles/v2-mixed.bundle");
/// Format 3: documents with their creation date and file size.
const V3: &[u8] = include_bytes!("fixtures/bundles/v3-fulltext.bundle");
/// Format 4: vectors with compact first-pass codes.
const V4: &[u8] = include_bytes!("fixtures/bundles/v4-coded.bundle");
/// Format 5: chunk metadata packed (binary ids, breadcrumbs and anchors once per change).
const V5: &[u8] = include_bytes!("fixtures/bundles/v5-coded.bundle");
/// Format 6: vectors in the 4-bit form, two values a byte.
const V6: &[u8] = include_bytes!("fixtures/bundles/v6-coded.bundle");
/// Format 7: chunk texts deflated in blocks.
const V7: &[u8] = include_bytes!("fixtures/bundles/v7-coded.bundle");
/// Format 8: every section deflated; the compact codes computed when read.
const V8: &[u8] = include_bytes!("fixtures/bundles/v8-coded.bundle");

#[test]
fn a_frozen_v1_bundle_still_loads_and_answers() {
    let engine = Engine::from_bundle(V1, None).unwrap();
    assert_eq!(
        engine.header().project_id.as_deref(),
        Some("docloupe/fixtures")
    );
    assert_eq!(engine.header().counts.documents, 7);
    let r = engine
        .search(&SearchRequest::new("размер кэша").mode(Mode::Fulltext))
        .unwrap();
    assert_eq!(r.results[0].document_path, "ru/документация.md");
}

#[test]
fn a_frozen_v1_bundle_with_vectors_still_loads_and_answers_lexically() {
    let engine = Engine::from_bundle(V1_HYBRID, None).unwrap();
    assert_eq!(engine.header().counts.vectors, 14);
    let r = engine
        .search(&SearchRequest::new("cache size").mode(Mode::Fulltext))
        .unwrap();
    assert_eq!(r.results[0].document_path, "en/caching.md");
}

#[test]
fn a_v1_bundle_reads_as_the_current_model_without_pages_or_citations() {
    let b = bundle::decode(V1_HYBRID).unwrap();
    assert!(b.docs.chunks.iter().all(|c| c.page_span.is_none()));
    assert!(b.docs.documents.iter().all(|d| d.citation.is_none()));
    // Re-encoded, it is a current-format bundle that decodes to the same content.
    let again = bundle::decode(&bundle::encode(&b).unwrap()).unwrap();
    assert_eq!(again.docs, b.docs);
    assert_eq!(again.text, b.text);
}

#[test]
fn a_frozen_v2_bundle_still_loads_and_answers_with_pages_and_citations() {
    let engine = Engine::from_bundle(V2_MIXED, None).unwrap();
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

#[test]
fn a_v2_bundle_reads_without_creation_dates_or_sizes() {
    let b = bundle::decode(V2_MIXED).unwrap();
    assert!(b
        .docs
        .documents
        .iter()
        .all(|d| d.created.is_none() && d.file_size.is_none()));
    assert!(b.docs.documents.iter().any(|d| d.citation.is_some()));
}

#[test]
fn a_frozen_v3_bundle_loads_with_dates_and_sizes() {
    let b = bundle::decode(V3).unwrap();
    let caching = b
        .docs
        .documents
        .iter()
        .find(|d| d.path == "en/caching.md")
        .unwrap();
    assert_eq!(caching.date.as_deref(), Some("2024-03-05"));
    assert_eq!(caching.created.as_deref(), Some("2024-03-05"));
    let size = std::fs::metadata(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs/en/caching.md"),
    )
    .unwrap()
    .len();
    assert_eq!(caching.file_size, Some(size));
}

#[test]
fn a_frozen_v4_bundle_searches_its_compact_codes() {
    searches_its_compact_codes(V4);
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

/// Bundles indexed with analyzer version 1 (every frozen one) dropped `if`, `for`, `in` ... as
/// stop words; their queries still do, so such a word is not looked up, corrected or counted
/// against a page that never indexed it.
#[test]
fn a_bundle_is_queried_with_the_analyzer_rules_it_was_built_with() {
    assert_eq!(bundle::decode(V4).unwrap().header.analyzer.version, 1);
    let engine = Engine::from_bundle(V4, None).unwrap();
    let paths = |q: &str| {
        let r = engine
            .search(&SearchRequest::new(q).mode(Mode::Fulltext))
            .unwrap();
        let scores: Vec<_> = r
            .results
            .iter()
            .map(|x| (x.document_path.clone(), x.score))
            .collect();
        (r.total, scores)
    };
    assert_eq!(paths("if the cache is full"), paths("cache full"));
    assert_eq!(paths("for caching in memory"), paths("caching memory"));
}

#[test]
fn the_current_format_reencodes_its_frozen_bundle_byte_for_byte() {
    // While FORMAT_VERSION is 8 the encoder must still write exactly these bytes, from the
    // text blocks as read and from the texts as plain strings; when the format changes, this
    // test moves to the new version's frozen file.
    if FORMAT_VERSION == 8 {
        let read = bundle::decode(V8).unwrap();
        assert_eq!(bundle::encode(&read).unwrap(), V8);
        // Written in pieces (as the builder writes a file), the same bytes.
        let mut pieces = Vec::new();
        bundle::encode_pieces(&read)
            .unwrap()
            .write_to(&mut pieces)
            .unwrap();
        assert_eq!(pieces, V8);
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
        assert_eq!(bundle::encode(&plain).unwrap(), V8);
    }
}

/// Format 8 stores what format 7 did, deflated: the same documents, chunks, postings, texts
/// and vectors, and the same compact codes, which it no longer stores but computes when read;
/// the same answers.
#[test]
fn a_frozen_v8_bundle_holds_the_v7_data_deflated() {
    let (v7, v8) = (bundle::decode(V7).unwrap(), bundle::decode(V8).unwrap());
    assert_eq!(v8.docs, v7.docs);
    assert_eq!(v8.lexical, v7.lexical);
    assert_eq!(v8.text, v7.text);
    assert_eq!(
        section(V8, bundle::SectionKind::Text),
        section(V7, bundle::SectionKind::Text)
    );
    use docloupe::index::vector::VectorIndex;
    let (Some(VectorIndex::Coded(a)), Some(VectorIndex::Coded(b))) = (&v7.vectors, &v8.vectors)
    else {
        panic!("both fixtures hold compact codes");
    };
    assert_eq!(a, b);
    // Only how the docs and lexical sections are stored differs.
    for kind in [bundle::SectionKind::Docs, bundle::SectionKind::Lexical] {
        assert_ne!(section(V8, kind), section(V7, kind));
    }
    assert_eq!(answers(V8), answers(V7));
    searches_its_compact_codes(V8);
}

/// What a bundle answers to one question in each mode, as JSON.
fn answers(bytes: &[u8]) -> Vec<String> {
    let engine = Engine::from_bundle(bytes, Some(common::model_files())).unwrap();
    [Mode::Fulltext, Mode::Semantic, Mode::Hybrid]
        .into_iter()
        .map(|mode| {
            let r = engine
                .search(&SearchRequest {
                    query: "how big may the cache grow".into(),
                    mode: Some(mode),
                    ..Default::default()
                })
                .unwrap();
            serde_json::to_string(&r.results).unwrap()
        })
        .collect()
}

/// Format 7 stores what format 6 did, the chunk texts deflated: the same documents, chunks,
/// postings, vectors and texts, a smaller text section, the same answers.
#[test]
fn a_frozen_v7_bundle_holds_the_v6_texts_deflated() {
    let (v6, v7) = (bundle::decode(V6).unwrap(), bundle::decode(V7).unwrap());
    assert_eq!(v7.docs, v6.docs);
    assert_eq!(v7.lexical, v6.lexical);
    assert_eq!(v7.text, v6.text);
    assert_eq!(vectors_section(V7), vectors_section(V6));
    let (plain, deflated) = (
        section(V6, bundle::SectionKind::Text),
        section(V7, bundle::SectionKind::Text),
    );
    assert!(
        deflated.len() * 10 < plain.len() * 7,
        "{} {}",
        deflated.len(),
        plain.len()
    );
    assert_eq!(answers(V7), answers(V6));
    searches_its_compact_codes(V7);
}

/// Format 6 stores what format 5 did, with each int8 vector in its 4-bit form: the same
/// chunks, the same first-pass codes' layout, half the vector bytes, the same answers.
#[test]
fn a_frozen_v6_bundle_holds_the_v5_vectors_in_4_bits() {
    use docloupe::index::vector::QVec;
    let (v5, v6) = (bundle::decode(V5).unwrap(), bundle::decode(V6).unwrap());
    let vectors =
        |b: &bundle::Bundle| -> Vec<QVec> { b.vectors.as_ref().unwrap().vectors().collect() };
    let four: Vec<QVec> = vectors(&v5).iter().map(QVec::to_4bit).collect();
    assert_eq!(vectors(&v6), four);
    assert!(vectors(&v6).iter().all(QVec::is_4bit));
    assert!(!vectors(&v5).iter().any(QVec::is_4bit));
    // 14 vectors of 384 dims: about 391 bytes each at int8, 197 at 4 bits (the levels and
    // codes, 3.7 KB, are the same).
    let (v5_len, v6_len) = (vectors_section(V5).len(), vectors_section(V6).len());
    assert!(v5_len - v6_len >= 14 * 190, "{v5_len} {v6_len}");
    searches_its_compact_codes(V5);
    searches_its_compact_codes(V6);
}

/// `--incremental` over a format-5 bundle embeds nothing: it takes the int8 vectors and
/// writes them in the 4-bit form, which is what a clean build writes (the v6 fixture was
/// built clean from the same documents with the same model; `cmp` found the whole files
/// identical where it was made).
#[test]
fn an_incremental_build_over_a_v5_bundle_converts_its_vectors_without_embedding() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v5.bundle");
    std::fs::write(&out, V5).unwrap();
    let args = [
        "--compact-threshold",
        "1",
        "--project",
        "docloupe/fixtures",
        "--quiet",
        "--incremental",
        // A frozen bundle carries no seal of this machine's builder (`trust.rs`).
        "--trust-previous",
    ];
    let report = common::build(&common::fixtures(), &out, &args);
    assert_eq!(report["chunksEmbedded"], 0, "{report}");
    assert_eq!(report["chunksReused"], 14, "{report}");
    let bytes = std::fs::read(&out).unwrap();
    let (built, v6) = (bundle::decode(&bytes).unwrap(), bundle::decode(V6).unwrap());
    assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
    let vectors =
        |b: &bundle::Bundle| -> Vec<_> { b.vectors.as_ref().unwrap().vectors().collect() };
    assert_eq!(vectors(&built), vectors(&v6));
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

/// The raw bytes of a bundle's vectors section.
fn vectors_section(bytes: &[u8]) -> Vec<u8> {
    section(bytes, bundle::SectionKind::Vectors)
}

/// The raw bytes of one section of a bundle.
fn section(bytes: &[u8], kind: bundle::SectionKind) -> Vec<u8> {
    let (header, body) = bundle::decode_header(bytes).unwrap();
    let entry = header.sections.iter().find(|s| s.kind == kind).unwrap();
    bundle::section_bytes(bytes, body, entry).unwrap().to_vec()
}

/// Every older bundle's chunk metadata survives being written packed and read back: ids,
/// breadcrumbs (the PDF's included), anchors, lines and pages.
#[test]
fn older_chunk_metadata_reads_back_the_same_from_the_packed_form() {
    for old in [V1, V1_HYBRID, V2_MIXED, V3, V4, V5, V6, V7] {
        let decoded = bundle::decode(old).unwrap();
        let reread = bundle::decode(&bundle::encode(&decoded).unwrap()).unwrap();
        assert_eq!(reread.docs, decoded.docs);
    }
    // Packing is what shrinks the section, not a change in what the chunks say.
    let v5 = bundle::decode(V5).unwrap();
    let v4 = bundle::decode(V4).unwrap();
    let without_ids = |d: &bundle::DocsSection| {
        let mut d = d.clone();
        d.chunks.iter_mut().for_each(|c| c.id.clear());
        d
    };
    assert_eq!(without_ids(&v5.docs), without_ids(&v4.docs));
}

/// What an incremental build keeps of the previous bundle, read apart from a whole decode:
/// the chunk metadata as written, a document at a time (formats 5 on; `None` before, whose
/// chunks were laid out otherwise), the texts, and the vectors give back what the whole
/// decode does, from every frozen format.
#[test]
fn every_format_reads_back_apart_as_it_decodes_whole() {
    let frozen = [V1, V1_HYBRID, V2_MIXED, V3, V4, V5, V6, V7, V8];
    for (k, bytes) in frozen.into_iter().enumerate() {
        let whole = bundle::decode(bytes).unwrap();
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        match bundle::packed_docs(bytes).unwrap() {
            Some(docs) => {
                assert!(version >= 5, "fixture {k}");
                assert_eq!(docs.documents(), whole.docs.documents.as_slice());
                for (d, doc) in whole.docs.documents.iter().enumerate() {
                    let run =
                        doc.first_chunk as usize..(doc.first_chunk + doc.chunk_count) as usize;
                    assert_eq!(docs.chunks(d).unwrap(), whole.docs.chunks[run]);
                }
            }
            None => assert!(version < 5, "fixture {k}"),
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
