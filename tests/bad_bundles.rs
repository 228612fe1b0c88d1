//! Spec: a bad bundle is a typed error, never a panic.

mod common;

use docloupe::bundle::{self, BundleFile, HEADER_START};
use docloupe::{Engine, Error};

/// Loads `bytes` both ways a host can: decoded in memory, and read from a file section by
/// section (`BundleFile`, the CLI and the MCP server). Both must give the same bundle or the
/// same error.
fn load(bytes: &[u8]) -> Result<Engine, Error> {
    let in_memory = Engine::from_bundle(bytes, None);
    let from_file = read_file(bytes, true);
    match (&in_memory, &from_file) {
        (Ok(engine), Ok(read)) => assert!(
            bundle::encode(engine.bundle().unwrap()).unwrap() == bundle::encode(read).unwrap(),
            "the file reader decoded another bundle"
        ),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!(
            "in memory {:?}, from a file {:?}",
            a.as_ref().err(),
            b.as_ref().err()
        ),
    }
    in_memory
}

/// `bytes` written to a file and read by `BundleFile`.
fn read_file(bytes: &[u8], with_vectors: bool) -> Result<bundle::Bundle, Error> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.bundle");
    std::fs::write(&path, bytes).unwrap();
    BundleFile::open(&path)?.decode(with_vectors)
}

#[test]
fn a_fulltext_read_of_a_file_neither_reads_nor_needs_the_vectors() {
    let b = good();
    let (header, body) = bundle::decode_header(&b).unwrap();
    let vectors = header
        .sections
        .iter()
        .find(|s| s.kind == bundle::SectionKind::Vectors)
        .expect("the fixture bundle has vectors");
    let mut damaged = b.clone();
    damaged[body + vectors.offset as usize + 7] ^= 0x01;
    // Without its vectors the file reads as decode_lexical reads the undamaged bundle...
    let read = read_file(&damaged, false).unwrap();
    assert!(read.vectors.is_none() && read.header.flags.hybrid);
    assert!(
        bundle::encode(&read).unwrap()
            == bundle::encode(&bundle::decode_lexical(&b).unwrap()).unwrap()
    );
    // ... and such an engine refuses a model rather than answer hybrid without vectors.
    let mut engine = Engine::from_decoded(read, None).unwrap();
    assert!(matches!(
        engine.install_embedder(common::embedder()),
        Err(Error::Model(m)) if m.contains("without its vectors")
    ));
    // With them, the damage is found.
    assert!(matches!(
        read_file(&damaged, true),
        Err(Error::ChecksumMismatch { part }) if part == "section vectors"
    ));
}

#[test]
fn a_missing_file_is_unreadable_not_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let err = BundleFile::open(&dir.path().join("none.bundle")).unwrap_err();
    assert!(matches!(err, Error::Unreadable { .. }), "{err:?}");
    assert_eq!(err.code(), docloupe::ErrorCode::DocsCollectionUnavailable);
    assert_eq!(err.details().unwrap()["reason"], "BundleUnreadable");
    // A directory opens but does not read.
    let err = BundleFile::open(dir.path()).unwrap_err();
    assert!(matches!(err, Error::Unreadable { .. }), "{err:?}");
}

fn good() -> Vec<u8> {
    common::fixture_bundle().to_vec()
}

#[test]
fn a_good_bundle_loads() {
    load(&good()).unwrap();
}

#[test]
fn truncated_bundles_say_truncated() {
    let b = good();
    for len in [
        8,
        20,
        HEADER_START,
        HEADER_START + 10,
        b.len() / 2,
        b.len() - 1,
    ] {
        let err = load(&b[..len]).unwrap_err();
        assert!(
            matches!(err, Error::BundleTruncated(_)),
            "cut at {len}: {err:?}"
        );
    }
}

#[test]
fn every_prefix_fails_without_panicking() {
    let b = good();
    let step = (b.len() / 500).max(1);
    for len in (0..b.len()).step_by(step) {
        assert!(load(&b[..len]).is_err(), "prefix of {len} bytes loaded");
    }
}

#[test]
fn wrong_magic_is_not_a_bundle() {
    let mut b = good();
    b[0] = b'X';
    assert!(matches!(load(&b), Err(Error::BadMagic)));
    assert!(matches!(
        load(b"PK\x03\x04 a zip file"),
        Err(Error::BadMagic)
    ));
    assert!(matches!(load(b""), Err(Error::BundleTruncated(_))));
}

#[test]
fn a_newer_format_version_asks_for_an_upgrade() {
    let mut b = good();
    b[8..12].copy_from_slice(&(bundle::FORMAT_VERSION + 1).to_le_bytes());
    match load(&b) {
        Err(Error::NewerFormat { found, supported }) => {
            assert_eq!(
                (found, supported),
                (bundle::FORMAT_VERSION + 1, bundle::FORMAT_VERSION)
            );
        }
        other => panic!("{other:?}"),
    }
    b[8..12].copy_from_slice(&0u32.to_le_bytes());
    assert!(matches!(load(&b), Err(Error::OlderFormat { found: 0, .. })));
}

#[test]
fn newer_analyzer_rules_ask_for_an_upgrade() {
    let mut b = bundle::decode(&good()).unwrap();
    let current = docloupe::analyze::ANALYZER_VERSION;
    assert_eq!(b.header.analyzer.version, current);
    b.header.analyzer.version = current + 1;
    match load(&bundle::encode(&b).unwrap()) {
        Err(e @ Error::NewerAnalyzer { .. }) => {
            assert!(
                matches!(e, Error::NewerAnalyzer { found, supported } if found == current + 1 && supported == current)
            );
            assert!(e.to_string().contains("upgrade docloupe"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_flipped_byte_is_a_checksum_mismatch() {
    let b = good();
    let (header, body) = bundle::decode_header(&b).unwrap();
    // In the header.
    let mut h = b.clone();
    h[HEADER_START + 3] ^= 0x55;
    assert!(matches!(load(&h), Err(Error::ChecksumMismatch { part }) if part == "header"));
    // In each section.
    for s in &header.sections {
        let mut c = b.clone();
        c[body + s.offset as usize + (s.len as usize / 2)] ^= 0x01;
        match load(&c) {
            Err(Error::ChecksumMismatch { part }) => {
                assert_eq!(part, format!("section {}", s.kind.name()))
            }
            other => panic!("{:?}: {other:?}", s.kind),
        }
    }
}

#[test]
fn random_damage_never_panics() {
    let b = good();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut c = b.clone();
        let i = (x as usize) % c.len();
        c[i] = c[i].wrapping_add((x >> 32) as u8 | 1);
        let _ = load(&c);
    }
}

#[test]
fn a_well_checksummed_but_inconsistent_bundle_is_corrupt() {
    // Re-encode a bundle whose postings point past the last chunk: checksums are valid,
    // content is not. Loading must catch it before a query indexes out of bounds.
    let mut decoded = bundle::decode(&good()).unwrap();
    let mut deltas: Vec<u32> = decoded.lexical.postings[0].chunk_deltas.iter().collect();
    deltas[0] = 1_000_000;
    decoded.lexical.postings[0].chunk_deltas = deltas.into_iter().collect();
    let bytes = bundle::encode(&decoded).unwrap();
    assert!(matches!(load(&bytes), Err(Error::Corrupt(_))));

    // Format 5 writes no chunk's document or index (chunks follow their documents), so a
    // chunk that points elsewhere cannot be written: it reads back where it belongs.
    let mut decoded = bundle::decode(&good()).unwrap();
    decoded.docs.chunks[0].doc = 9_999;
    decoded.docs.chunks[1].chunk_index = 7;
    let reread = load(&bundle::encode(&decoded).unwrap()).unwrap();
    assert_eq!(
        reread.bundle().unwrap().docs,
        bundle::decode(&good()).unwrap().docs
    );

    // Results tie-break by (documentPath, chunkIndex) as chunk order, which holds only for
    // documents sorted by path: a bundle that breaks it is refused, not mis-ordered.
    let mut decoded = bundle::decode(&good()).unwrap();
    let (a, b) = (
        decoded.docs.documents[0].path.clone(),
        decoded.docs.documents[1].path.clone(),
    );
    decoded.docs.documents[0].path = b;
    decoded.docs.documents[1].path = a;
    match load(&bundle::encode(&decoded).unwrap()) {
        Err(Error::Corrupt(m)) => assert!(m.contains("sorted by path"), "{m}"),
        other => panic!("{other:?}"),
    }

    // Page spans are 1-based with start <= end; a bundle that says otherwise would print
    // "p. 0" or "pp. 5–3" in citations.
    for (start, end) in [(0, 1), (5, 3)] {
        let mut decoded = bundle::decode(&good()).unwrap();
        decoded.docs.chunks[0].location.page_span = Some(bundle::PageSpan { start, end });
        match load(&bundle::encode(&decoded).unwrap()) {
            Err(Error::Corrupt(m)) => assert!(m.contains("page span"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}

/// Regression (hostile bundles): a document path becomes a link on readers' pages, so one
/// that a browser reads as a scheme, an absolute path or a way up is refused, in a whole
/// bundle and in a split one's shards.
#[test]
fn document_paths_that_leave_the_site_are_corrupt() {
    for path in [
        "javascript:alert(1).md",
        "/etc/passwd.md",
        "https://elsewhere/x.md",
        "//elsewhere/x.md",
        "a/../../b.md",
        "a\\b.md",
    ] {
        let mut decoded = bundle::decode(&good()).unwrap();
        decoded.docs.documents[0].path = path.into();
        let bytes = bundle::encode(&decoded).unwrap();
        match load(&bytes) {
            Err(Error::Corrupt(m)) => assert!(m.contains("document path"), "{path}: {m}"),
            other => panic!("{path}: {other:?}"),
        }
        // The split layout cut from the same (decoded, unvalidated) data refuses it too.
        let files = bundle::split::split(&decoded, &bytes).unwrap();
        let file = |name: &str| &files.iter().find(|f| f.0 == name).unwrap().1;
        let mut split = bundle::split::SplitBundle::open(file("core.bin")).unwrap();
        for name in ["frag-0.bin", "docs.bin"] {
            match split.add(name, file(name)) {
                Err(Error::Corrupt(m)) => assert!(m.contains("disagree"), "{path} {name}: {m}"),
                other => panic!("{path} {name}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_bundle_built_with_another_model_is_refused() {
    let mut decoded = bundle::decode(&good()).unwrap();
    let model = decoded.header.embedding.as_mut().unwrap();
    model.sha256 = "0".repeat(64);
    model.id = "some-other-model".into();
    let bytes = bundle::encode(&decoded).unwrap();
    match Engine::from_bundle(&bytes, Some(common::model_files())) {
        Err(Error::EmbeddingModelMismatch { expected, provided }) => {
            assert!(expected.contains("some-other-model"), "{expected}");
            assert!(provided.contains(&common::model_files().id), "{provided}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wrong_model_file_is_a_model_error() {
    let mut files = common::model_files().clone();
    files.onnx = b"this is not an onnx graph".to_vec();
    assert!(matches!(
        Engine::from_bundle(&good(), Some(&files)),
        Err(Error::Model(_))
    ));
    let mut files = common::model_files().clone();
    files.tokenizer = b"{}".to_vec();
    assert!(matches!(
        Engine::from_bundle(&good(), Some(&files)),
        Err(Error::Model(_))
    ));
}

/// Regression (hostile bundles): chunk runs that overlap or leave a gap passed validation
/// (and `index-builder split` then panicked); BM25 constants that are NaN or infinite made
/// every score `null`.
#[test]
fn overlapping_chunk_runs_and_nonsense_constants_are_corrupt() {
    // Document 1 starts inside document 0's run.
    let mut decoded = bundle::decode(&good()).unwrap();
    let first = decoded.docs.documents[0].chunk_count;
    assert!(first > 1, "the fixture's first document has several chunks");
    decoded.docs.documents[1].first_chunk -= 1;
    match load(&bundle::encode(&decoded).unwrap()) {
        Err(Error::Corrupt(m)) => assert!(m.contains("claims chunks"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A run that ends early leaves chunks no document owns; one too long claims chunks
    // that are not there.
    for delta in [-1i64, 1] {
        let mut decoded = bundle::decode(&good()).unwrap();
        let last = decoded.docs.documents.len() - 1;
        let count = &mut decoded.docs.documents[last].chunk_count;
        *count = (*count as i64 + delta) as u32;
        match load(&bundle::encode(&decoded).unwrap()) {
            Err(Error::Corrupt(m)) => assert!(m.contains("are written"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    // A first chunk near u32::MAX: the sum must not wrap (on wasm32 usize is 32 bits).
    let mut decoded = bundle::decode(&good()).unwrap();
    decoded.docs.documents[0].first_chunk = u32::MAX;
    assert!(matches!(
        load(&bundle::encode(&decoded).unwrap()),
        Err(Error::Corrupt(_))
    ));
    for (k1, b) in [
        (f32::NAN, 0.75),
        (f32::INFINITY, 0.75),
        (1.2, f32::NAN),
        (1.2, 2.0),
        (-1.0, 0.5),
    ] {
        let mut decoded = bundle::decode(&good()).unwrap();
        decoded.header.analyzer.k1 = k1;
        decoded.header.analyzer.b = b;
        match load(&bundle::encode(&decoded).unwrap()) {
            Err(Error::Corrupt(m)) => assert!(m.contains("analyzer constants"), "{m}"),
            other => panic!("k1 {k1}, b {b}: {other:?}"),
        }
    }
    // The split core's average chunk length too.
    let bytes = good();
    let decoded = bundle::decode(&bytes).unwrap();
    let files = bundle::split::split(&decoded, &bytes).unwrap();
    let core = &files.iter().find(|f| f.0 == "core.bin").unwrap().1;
    // A core with one field changed, its checksum made right again.
    let edited = |edit: &dyn Fn(&mut bundle::split::Core)| {
        let prefix = 8 + 4 + 32;
        let mut c: bundle::split::Core = postcard::from_bytes(&core[prefix..]).unwrap();
        edit(&mut c);
        let payload = postcard::to_allocvec(&c).unwrap();
        let mut file = core[..12].to_vec();
        use sha2::Digest;
        file.extend_from_slice(&sha2::Sha256::digest(&payload));
        file.extend_from_slice(&payload);
        bundle::split::SplitBundle::open(&file)
    };
    for avg in [f32::NAN, f32::INFINITY, 0.0] {
        match edited(&|c| c.avg_chunk_len = avg) {
            Err(Error::Corrupt(m)) => assert!(m.contains("average chunk length"), "{avg}: {m}"),
            other => panic!("{avg}: {other:?}"),
        }
    }
    // Fragment boundaries are written as steps (split version 8): steps that go back, stand
    // still or wrap past u32::MAX are out of order once added up.
    for starts in [vec![0, 2, 1], vec![0, 1, 1], vec![0, u32::MAX, 1], vec![1]] {
        match edited(&|c| c.frag_shards = starts.clone()) {
            Err(Error::Corrupt(m)) => assert!(m.contains("out of order"), "{starts:?}: {m}"),
            other => panic!("{starts:?}: {other:?}"),
        }
    }
    // Vector pieces (split version 9): none for a bundle with vectors, more than the section
    // has bytes or than the layout allows, or some for a bundle without vectors.
    let section_len = decoded.header.sections.last().unwrap().len as u32;
    for pieces in [
        0,
        section_len + 1,
        bundle::split::MAX_VECTOR_PIECES + 1,
        u32::MAX,
    ] {
        match edited(&|c| c.vector_pieces = pieces) {
            Err(Error::Corrupt(m)) => assert!(m.contains("vector piece"), "{pieces}: {m}"),
            other => panic!("{pieces}: {other:?}"),
        }
    }
    match edited(&|c| {
        c.vector_pieces = 1;
        c.header.sections.pop();
        c.header.flags.hybrid = false;
    }) {
        Err(Error::Corrupt(m)) => assert!(m.contains("vector piece"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// `bytes` with its text section replaced by what `edit` makes of it, every checksum and
/// offset written anew (a crafted file, not an accident).
fn with_text_section(bytes: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    with_section(bytes, bundle::SectionKind::Text, edit)
}

/// `bytes` with its `kind` section replaced by what `edit` makes of it (see
/// [`with_text_section`]).
fn with_section(
    bytes: &[u8],
    kind: bundle::SectionKind,
    edit: impl FnOnce(&mut Vec<u8>),
) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let (mut header, body) = bundle::decode_header(bytes).unwrap();
    let mut sections: Vec<Vec<u8>> = header
        .sections
        .iter()
        .map(|e| bundle::section_bytes(bytes, body, e).unwrap().to_vec())
        .collect();
    let at = header.sections.iter().position(|e| e.kind == kind).unwrap();
    edit(&mut sections[at]);
    let mut offset = 0;
    for (entry, section) in header.sections.iter_mut().zip(&sections) {
        entry.offset = offset;
        entry.len = section.len() as u64;
        entry.sha256 = Sha256::digest(section).into();
        offset += entry.len;
    }
    let head = postcard::to_allocvec(&header).unwrap();
    let mut out = bytes[..12].to_vec();
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(&head));
    out.extend_from_slice(&head);
    sections.iter().for_each(|s| out.extend_from_slice(s));
    out
}

/// Regression (format 7): a text block is inflated when first read, after the bundle has
/// loaded, so one that does not inflate must fail the search that reads it with `Corrupt`,
/// not panic or answer with empty snippets.
#[test]
fn a_text_block_that_does_not_inflate_fails_the_search_that_reads_it() {
    let good = good();
    // The section: the number of blocks, then per block its text count, inflated length
    // and deflated bytes (length first), all varints. The fixture's 14 texts are one block.
    let bad = with_text_section(&good, |text| {
        let mut at = 0;
        let mut varint = |t: &[u8]| {
            let v = t[at..].iter().take_while(|b| **b >= 0x80).count() + 1;
            at += v;
        };
        for _ in 0..4 {
            varint(text);
        }
        // BFINAL set, block type 3: reserved, never valid DEFLATE.
        text[at] = 0xff;
    });
    assert_eq!(with_text_section(&good, |_| {}), good);
    let engine = load(&bad).unwrap();
    let search = |mode| {
        engine.search(&docloupe::SearchRequest {
            query: "cache".into(),
            mode: Some(mode),
            ..Default::default()
        })
    };
    match search(docloupe::Mode::Fulltext) {
        Err(Error::Corrupt(m)) => assert!(m.contains("text block 0"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// Format 8 inflates the docs and lexical sections and the vector blocks when a bundle loads:
/// a stream that is not DEFLATE (checksums rewritten) is refused then, in memory and from a
/// file alike, with `Corrupt` naming what failed.
#[test]
fn a_deflated_section_that_does_not_inflate_is_refused_at_load() {
    use bundle::SectionKind::{Docs, Lexical, Vectors};
    let good = good();
    // Where the first DEFLATE stream starts, after that many varints: docs and lexical: the
    // inflated length, the stream's length. Vectors: the variant, bits a value, dims, the
    // number of blocks, the first block's rows, its stream's length.
    for (kind, varints, says) in [
        (Docs, 2, "docs: "),
        (Lexical, 2, "lexical: "),
        (Vectors, 6, "vector block 0 does not inflate"),
    ] {
        let bad = with_section(&good, kind, |s| {
            let mut at = 0;
            for _ in 0..varints {
                at += s[at..].iter().take_while(|b| **b >= 0x80).count() + 1;
            }
            // BFINAL set, block type 3: reserved, never valid DEFLATE.
            s[at] = 0xff;
        });
        match load(&bad) {
            Err(Error::Corrupt(m)) => assert!(m.contains(says), "{m}"),
            other => panic!("{says}: {:?}", other.err()),
        }
    }
}

/// The split layout's writer checks the vectors on their own (`check_vectors`), lets them
/// go, then decodes the rest without them (`decode_lexical`): together, the verdict of a
/// whole decode, and a good bundle passes both.
#[test]
fn vectors_checked_apart_are_refused_as_a_whole_decode_refuses_them() {
    use bundle::SectionKind::Vectors;
    let good = good();
    bundle::check_vectors(&good).unwrap();
    bundle::decode_lexical(&good).unwrap();
    let stream = |s: &[u8]| {
        // After the variant, bits a value, dims, the number of blocks, the first block's
        // rows and its stream's length (as in the test above).
        let mut at = 0;
        for _ in 0..6 {
            at += s[at..].iter().take_while(|b| **b >= 0x80).count() + 1;
        }
        at
    };
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let edits: [(&str, Edit); 3] = [
        (
            "a block that does not inflate",
            Box::new(move |s| {
                let at = stream(s);
                s[at] = 0xff
            }),
        ),
        ("a section cut short", Box::new(|s| s.truncate(s.len() - 1))),
        ("another kind of index", Box::new(|s| s[0] = 0x7f)),
    ];
    for (what, edit) in edits {
        let bad = with_section(&good, Vectors, edit);
        let whole = bundle::decode(&bad).err();
        let apart = bundle::check_vectors(&bad).err();
        assert!(whole.is_some(), "{what}");
        assert_eq!(
            apart.map(|e| e.to_string()),
            whole.map(|e| e.to_string()),
            "{what}"
        );
    }
    // A file whose vectors section fails its checksum is refused before it is decoded.
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(matches!(
        bundle::check_vectors(&flipped),
        Err(Error::ChecksumMismatch { .. })
    ));
}

/// Regression (issue 63, access labels): an `access` section is checked like every other
/// section. A crafted one that names a document past the table, an unknown group, repeats or
/// empty requirements, or that sits in a format-9 bundle, is `Corrupt`, never a panic or a
/// restricted document shown to everyone.
#[test]
fn a_crafted_access_section_is_corrupt() {
    let good = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/bundles/v10-access.bundle"),
    )
    .unwrap();
    let decoded = bundle::decode(&good).unwrap();
    let access = decoded.access.clone().unwrap();
    let n_docs = decoded.docs.documents.len() as u32;
    let mut crafted: Vec<(&str, bundle::AccessSection)> = Vec::new();
    let mut a = access.clone();
    a.documents[0].0 = n_docs;
    crafted.push(("past the table", a));
    let mut a = access.clone();
    a.documents[0].1[0] = vec![99];
    crafted.push(("unknown group", a));
    let mut a = access.clone();
    a.documents.push(a.documents[0].clone());
    crafted.push(("repeated document", a));
    let mut a = access.clone();
    a.documents[0].1.clear();
    crafted.push(("no requirement", a));
    let mut a = access.clone();
    a.groups[0] = "<b>".into();
    crafted.push(("bad group name", a));
    let mut a = access.clone();
    a.documents.clear();
    crafted.push(("no document", a));
    for (what, a) in crafted {
        let bytes = with_section(&good, bundle::SectionKind::Access, |s| {
            *s = postcard::to_allocvec(&a).unwrap();
        });
        match load(&bytes) {
            Err(Error::Corrupt(m)) => assert!(m.contains("access"), "{what}: {m}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    // Bytes that are not an access section at all.
    let bytes = with_section(&good, bundle::SectionKind::Access, |s| s.truncate(3));
    assert!(matches!(load(&bytes), Err(Error::Corrupt(_))));
    // Format 9 has no access section: one in a format-9 file is not what a builder wrote.
    let mut v9 = good.clone();
    v9[8..12].copy_from_slice(&9u32.to_le_bytes());
    match load(&v9) {
        Err(Error::Corrupt(m)) => assert!(m.contains("format 9 has no access section"), "{m}"),
        other => panic!("{other:?}"),
    }
}
