//! Spec: the same input gives a byte-identical bundle.

mod common;

use sha2::{Digest, Sha256};

fn sha(path: &std::path::Path) -> String {
    format!("{:x}", Sha256::digest(std::fs::read(path).unwrap()))
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn two_builds_of_the_same_folder_have_the_same_sha256() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.bundle"), tmp.path().join("b.bundle"));
    common::build(&common::fixtures(), &a, &[]);
    common::build(&common::fixtures(), &b, &[]);
    assert_eq!(sha(&a), sha(&b));
}

#[test]
fn a_copy_elsewhere_builds_the_same_bytes() {
    // Absolute paths, directory order and file times must not leak into the bundle.
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("elsewhere/docs");
    copy_dir(&common::fixtures(), &copy);
    let (a, b) = (tmp.path().join("a.bundle"), tmp.path().join("b.bundle"));
    common::build(&common::fixtures(), &a, &[]);
    common::build(&copy, &b, &[]);
    assert_eq!(sha(&a), sha(&b));
}

#[test]
fn bundles_with_compact_codes_are_reproducible_too() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.bundle"), tmp.path().join("b.bundle"));
    common::build(&common::fixtures(), &a, &["--compact-threshold", "1"]);
    common::build(&common::fixtures(), &b, &["--compact-threshold", "1"]);
    assert_eq!(sha(&a), sha(&b));
    let engine =
        docloupe::Engine::from_bundle(&std::fs::read(&a).unwrap(), Some(common::model_files()))
            .unwrap();
    assert!(matches!(
        engine.bundle().unwrap().vectors,
        Some(docloupe::index::vector::VectorIndex::Coded(_))
    ));
    assert!(!engine.header().flags.hnsw);
}

#[test]
fn fulltext_only_builds_are_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.bundle"), tmp.path().join("b.bundle"));
    common::build(&common::fixtures(), &a, &["--no-embeddings"]);
    common::build(&common::fixtures(), &b, &["--no-embeddings"]);
    assert_eq!(sha(&a), sha(&b));
}

/// The builder reads, chunks and embeds its files in batches: a build a file at a time gives
/// the same bundle and the same report, a text repeated in another batch included (embedded
/// once, its vector shared).
#[test]
fn builds_in_batches_of_any_size_are_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    copy_dir(&common::fixtures(), &docs);
    let first = std::fs::read_dir(docs.join("en"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .min()
        .unwrap();
    std::fs::copy(&first, docs.join("zz-copy.md")).unwrap();
    let (a, b) = (tmp.path().join("a.bundle"), tmp.path().join("b.bundle"));
    let mut whole = common::build(&docs, &a, &[]);
    let mut one_by_one = common::build(&docs, &b, &["--batch-files", "1"]);
    assert_eq!(sha(&a), sha(&b));
    for report in [&mut whole, &mut one_by_one] {
        let o = report.as_object_mut().unwrap();
        o.remove("durationSeconds");
        o.remove("bundlePath");
    }
    assert_eq!(whole, one_by_one);
    assert!(whole["chunksShared"].as_u64().unwrap() > 0, "{whole}");
}
