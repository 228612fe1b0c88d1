//! Spec: bundles written by earlier releases keep loading (or fail with the typed version
//! error). `tests/fixtures/bundles/v1-fulltext.bundle` was written by format version 1 from
//! `tests/fixtures/docs` with `--no-embeddings --project docloupe/fixtures`, and
//! `v1-hybrid.bundle` from the same folder with `--model` (all-MiniLM-L6-v2 int8) instead of
//! `--no-embeddings`; never regenerate them — add new files for a new format version instead.

use docloupe::bundle::{self, FORMAT_VERSION};
use docloupe::{Engine, Mode, SearchRequest};

const V1: &[u8] = include_bytes!("fixtures/bundles/v1-fulltext.bundle");
/// The same documents with vectors (`--model` all-MiniLM-L6-v2 int8), written by format 1.
const V1_HYBRID: &[u8] = include_bytes!("fixtures/bundles/v1-hybrid.bundle");

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
fn the_current_format_reencodes_a_v1_bundle_byte_for_byte() {
    // While FORMAT_VERSION is 1 the encoder must still write exactly these bytes; when the
    // format changes, this test moves to the new version's frozen file.
    if FORMAT_VERSION == 1 {
        for frozen in [V1, V1_HYBRID] {
            assert_eq!(
                bundle::encode(&bundle::decode(frozen).unwrap()).unwrap(),
                frozen
            );
        }
    }
}
