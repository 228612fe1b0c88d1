//! The split layout (`index-builder split`): a bundle cut into a small core plus shards that a
//! host fetches as queries need them. It must answer every request exactly as the whole
//! bundle does, read only a little for a plain fulltext query, and refuse bad files.

mod common;

use std::collections::BTreeMap;

use docloupe::bundle::split::{split, split_with, ShardSizes, CORE_FILE};
use docloupe::index::spelling::correction_shards;
use docloupe::{Engine, EngineOptions, Error, ErrorCode, ErrorResponse, SearchRequest};

type Files = BTreeMap<String, Vec<u8>>;

fn files_of(bytes: &[u8], sizes: ShardSizes) -> Files {
    let bundle = docloupe::bundle::decode(bytes).unwrap();
    split_with(&bundle, bytes, sizes)
        .unwrap()
        .into_iter()
        .collect()
}

/// The split files, in tiny shards, of a frozen bundle from `tests/fixtures/bundles` (another
/// bundle than the fixture's: its files must be refused as foreign).
fn frozen_files(name: &str) -> Files {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bundles");
    files_of(&std::fs::read(path.join(name)).unwrap(), TINY)
}

const TINY: ShardSizes = ShardSizes {
    lexical: 1,
    fragment: 1,
    vocabulary: 1,
    vectors: 64,
};

/// The contract's JSON line for `json`, timings zeroed.
fn answer(engine: &mut Engine, json: &str, files: &Files, fetched: &mut Vec<String>) -> String {
    let result = SearchRequest::from_json(json).and_then(|req| {
        engine.search_fetching(&req, |name| {
            fetched.push(name.to_owned());
            files
                .get(name)
                .cloned()
                .ok_or_else(|| Error::Internal(format!("no file {name}")))
        })
    });
    match result {
        Ok(mut r) => {
            r.timings = Default::default();
            serde_json::to_string(&r).unwrap()
        }
        Err(e) => serde_json::to_string(&ErrorResponse::from(e)).unwrap(),
    }
}

/// The whole bundle's contract JSON line for `json`, timings zeroed (what a split engine must
/// answer byte for byte).
fn whole_answer(whole: &Engine, json: &str) -> String {
    match whole.search_json(json) {
        Ok(mut r) => {
            r.timings = Default::default();
            serde_json::to_string(&r).unwrap()
        }
        Err(e) => serde_json::to_string(&e).unwrap(),
    }
}

fn requests() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/parity/requests.jsonl"
    ))
    .unwrap()
    .lines()
    .map(str::to_owned)
    .collect();
    // What the parity set does not stress: scope filters, context, misspellings, ties.
    out.extend(
        [
            r#"{"mode": "fulltext", "query": "cache", "filters": {"sourcePrefix": "en/"}}"#,
            r#"{"mode": "fulltext", "query": "кэш", "filters": {"documentTypes": ["md"], "tags": ["cache"]}}"#,
            r#"{"mode": "fulltext", "query": "install", "filters": {"dateFrom": "2024-01-01"}, "includeContext": true}"#,
            r#"{"mode": "fulltext", "query": "cache", "workspacePath": "en"}"#,
            r#"{"mode": "fulltext", "query": "cahce sise", "includeContext": false}"#,
            r#"{"mode": "fulltext", "query": "instal", "limit": 1}"#,
            r#"{"mode": "fulltext", "query": "установкаа"}"#,
            r#"{"mode": "fulltext", "query": "duplicate", "maxChunksPerDocument": 1}"#,
            r#"{"mode": "fulltext", "query": "the the the"}"#,
            r#"{"mode": "fulltext", "query": "zzzzqqq"}"#,
            r#"{"mode": "fulltext", "query": "a"}"#,
            r#"{"mode": "fulltext", "query": "cache", "projectId": "nope/nope"}"#,
            // Prefixes (the word being typed) whose terms span several tiny shards, and typos.
            r#"{"mode": "fulltext", "query": "cache conf"}"#,
            r#"{"mode": "fulltext", "query": "ca"}"#,
            r#"{"mode": "fulltext", "query": "устан"}"#,
            r#"{"mode": "fulltext", "query": "invalidaton entri"}"#,
            r#"{"mode": "fulltext", "query": "databse", "limit": 2}"#,
            r#"{"mode": "fulltext", "query": ""}"#,
            r#"["cache"]"#,
        ]
        .map(str::to_owned),
    );
    out
}

#[test]
fn a_split_bundle_answers_every_request_byte_for_byte_like_the_whole_one() {
    let bytes = common::fixture_bundle();
    for sizes in [ShardSizes::default(), TINY] {
        for loading in [false, true] {
            let options = EngineOptions {
                lexical_fallback: loading.then_some(docloupe::LexicalFallback::ModelsLoading),
                ..EngineOptions::default()
            };
            let whole = Engine::lexical(bytes)
                .unwrap()
                .with_options(options.clone());
            let files = files_of(bytes, sizes);
            let mut split = Engine::split(&files[CORE_FILE])
                .unwrap()
                .with_options(options);
            let mut fetched = Vec::new();
            let mut n = 0;
            for json in requests() {
                let expected = whole_answer(&whole, &json);
                // A fresh engine per request, so each one fetches what it needs itself …
                let mut fresh = Engine::split(&files[CORE_FILE])
                    .unwrap()
                    .with_options(split.options().clone());
                let got = answer(&mut fresh, &json, &files, &mut Vec::new());
                assert_eq!(got, expected, "{sizes:?} loading={loading}: {json}");
                // … and one engine for all, which accumulates files.
                let got = answer(&mut split, &json, &files, &mut fetched);
                assert_eq!(got, expected, "{sizes:?} loading={loading} (warm): {json}");
                n += 1;
            }
            assert!(n >= 150, "{n} requests");
            let unique: std::collections::BTreeSet<_> = fetched.iter().collect();
            assert_eq!(unique.len(), fetched.len(), "a file was fetched twice");
            assert!(
                !fetched.iter().any(|f| f.starts_with("vec-")),
                "fulltext read vectors"
            );
        }
    }
}

/// A long-lived host (`docloupe mcp` over a split folder) bounds its memory by dropping the
/// shards it holds now and then: afterwards each search fetches what it needs again and
/// answers as before.
#[test]
fn an_engine_that_forgets_its_shards_fetches_them_again_and_answers_the_same() {
    let bytes = common::fixture_bundle();
    let whole = Engine::lexical(bytes).unwrap();
    let files = files_of(bytes, TINY);
    let mut split = Engine::split(&files[CORE_FILE]).unwrap();
    for json in requests() {
        let expected = whole_answer(&whole, &json);
        let mut first = Vec::new();
        assert_eq!(
            answer(&mut split, &json, &files, &mut first),
            expected,
            "{json}"
        );
        split.forget_split_files();
        let mut again = Vec::new();
        assert_eq!(
            answer(&mut split, &json, &files, &mut again),
            expected,
            "{json} (after forgetting)"
        );
        // Everything the first answer read had to come back (it read nothing else: each
        // request starts from a forgotten engine).
        assert_eq!(again, first, "{json}");
        split.forget_split_files();
    }
}

#[test]
fn a_plain_fulltext_query_reads_its_terms_and_its_results_in_two_rounds() {
    let files = files_of(common::fixture_bundle(), TINY);
    let mut engine = Engine::split(&files[CORE_FILE]).unwrap();
    let req =
        SearchRequest::from_json(r#"{"mode": "fulltext", "query": "cache size", "limit": 3}"#)
            .unwrap();
    let mut rounds: Vec<Vec<String>> = Vec::new();
    loop {
        match engine.search(&req) {
            Err(Error::FilesNeeded(names)) => {
                for n in &names {
                    engine.add_split_file(n, &files[n]).unwrap();
                }
                rounds.push(names);
            }
            Ok(r) => {
                assert!(!r.results.is_empty());
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    // Round 1: the shards of the two terms; round 2: the fragments holding the results.
    assert_eq!(rounds[0].len(), 2, "{rounds:?}");
    assert!(
        rounds[0].iter().all(|n| n.starts_with("lex-")),
        "{rounds:?}"
    );
    assert!(
        rounds[1].iter().all(|n| n.starts_with("frag-")),
        "{rounds:?}"
    );
    assert!(rounds[1].len() <= 3, "{rounds:?}");
    // Asking again reads nothing.
    assert!(engine.search(&req).is_ok());
}

#[test]
fn filters_read_the_document_table_and_misspellings_the_vocabulary() {
    let files = files_of(common::fixture_bundle(), ShardSizes::default());
    let needs = |json: &str| {
        let mut engine = Engine::split(&files[CORE_FILE]).unwrap();
        let mut fetched = Vec::new();
        answer(&mut engine, json, &files, &mut fetched);
        fetched
    };
    let plain = needs(r#"{"mode": "fulltext", "query": "cache"}"#);
    assert!(
        !plain
            .iter()
            .any(|f| f == "docs.bin" || f.starts_with("voc-")),
        "{plain:?}"
    );
    assert!(
        needs(r#"{"mode": "fulltext", "query": "cache", "filters": {"tags": ["cache"]}}"#)
            .contains(&"docs.bin".to_owned())
    );
    let misspelt = needs(r#"{"mode": "fulltext", "query": "cahce"}"#);
    assert!(
        misspelt.iter().any(|f| f.starts_with("voc-")),
        "{misspelt:?}"
    );
}

/// A misspelt word reads the vocabulary shards of its own correction keys (at most 4 per
/// spelling) and no other, yet corrects to what the whole bundle corrects to, for typos at
/// every position of the word: a split with many small vocabulary shards answers each
/// misspelling exactly as the whole bundle does.
#[test]
fn a_misspelt_word_reads_a_few_vocabulary_shards_and_corrects_as_the_whole_bundle() {
    let bytes = common::fixture_bundle();
    let sizes = ShardSizes {
        vocabulary: 1,
        ..ShardSizes::default()
    };
    let files = files_of(bytes, sizes);
    let shards = files.keys().filter(|f| f.starts_with("voc-")).count();
    assert!(shards > 80, "{shards} vocabulary shards");
    let mut whole = Engine::from_bundle(bytes, None).unwrap();
    // "configuration" and "cache" with an edit at each position, kind by kind; two edits.
    let queries = [
        "onfiguration",
        "cnfiguration",
        "xonfiguration",
        "ocnfiguration",
        "cofniguration",
        "confgiuration",
        "configuratoin",
        "configuraton",
        "acche",
        "cahce",
        "cachee",
        "cxche",
        "configuratiom",
        "cofnigurtion",
    ];
    for q in queries {
        let json = format!(r#"{{"mode": "fulltext", "query": "{q} ", "limit": 3}}"#);
        let mut engine = Engine::split(&files[CORE_FILE]).unwrap();
        let mut fetched = Vec::new();
        let split = answer(&mut engine, &json, &files, &mut fetched);
        assert_eq!(
            split,
            answer(&mut whole, &json, &files, &mut Vec::new()),
            "{q}"
        );
        let r: serde_json::Value = serde_json::from_str(&split).unwrap();
        assert!(!r["results"].as_array().unwrap().is_empty(), "{q}: {r}");
        let read = fetched.iter().filter(|f| f.starts_with("voc-")).count();
        assert!((1..=8).contains(&read), "{q}: {fetched:?}");
    }
}

/// "Did you mean" spells a correction with the word the collection writes for its stem,
/// which the vocabulary shards carry: a misspelt query reads the fragments of its results and no
/// other (it read those of every chunk the word was sampled from).
#[test]
fn a_misspelt_query_spells_its_suggestion_from_the_vocabulary_alone() {
    let bytes = common::fixture_bundle();
    let files = files_of(bytes, TINY);
    let json = r#"{"mode": "fulltext", "query": "cahce", "limit": 1, "includeContext": false}"#;
    let mut engine = Engine::split(&files[CORE_FILE]).unwrap();
    let mut fetched = Vec::new();
    let split = answer(&mut engine, json, &files, &mut fetched);
    let mut whole = Engine::from_bundle(bytes, None).unwrap();
    assert_eq!(split, answer(&mut whole, json, &files, &mut Vec::new()));
    let r: serde_json::Value = serde_json::from_str(&split).unwrap();
    assert_eq!(r["suggestions"][0], "cache", "{r}");
    assert_eq!(r["results"].as_array().unwrap().len(), 1, "{r}");
    // TINY cuts one fragment per document: the one result's, and no other.
    let fragments: Vec<_> = fetched.iter().filter(|f| f.starts_with("frag-")).collect();
    assert_eq!(fragments.len(), 1, "{fetched:?}");
    assert!(fetched.iter().any(|f| f.starts_with("voc-")), "{fetched:?}");

    // Every term is filed in the shard of each of its correction keys, with the form the
    // whole bundle reads from its chunks, and in no other shard.
    let whole = docloupe::bundle::decode(bytes).unwrap();
    let mut split = docloupe::bundle::split::SplitBundle::open(&files[CORE_FILE]).unwrap();
    let n = split.core.vocab_shards;
    for (name, file) in &files {
        if name.starts_with("voc-") {
            split.add(name, file).unwrap();
        }
    }
    let forms = docloupe::bundle::split::surface_forms(&whole).unwrap();
    let mut filed = 0;
    for i in 0..n {
        let shard = split.vocabulary(i).unwrap();
        for (j, term) in shard.terms.iter().enumerate() {
            let t = whole.lexical.term_id(term).unwrap();
            assert_eq!(shard.dfs[j] as usize, whole.lexical.postings[t].tfs.len());
            assert_eq!(&shard.surfaces(j), &forms[t], "{term}");
            filed += 1;
        }
    }
    let expected: usize = whole
        .lexical
        .terms
        .iter()
        .map(|t| correction_shards(&[t], n).len())
        .sum();
    assert_eq!(filed, expected);
}

#[test]
fn a_prefix_reads_the_same_terms_from_shards_as_from_the_whole_index_within_its_cap() {
    let bytes = common::fixture_bundle();
    let whole = docloupe::bundle::decode(bytes).unwrap();
    let files = files_of(bytes, TINY);
    let mut split = docloupe::bundle::split::SplitBundle::open(&files[CORE_FILE]).unwrap();
    let n_shards = split.core.lex_shards.len();
    assert!(n_shards > 50, "{n_shards} tiny shards");
    for prefix in ["c", "ca", "cach", "con", "у", "уст", "zzz", "", "ё"] {
        for cap in [0, 1, 2, 5, 1000] {
            let expected = whole.lexical.terms_with_prefix(prefix, cap);
            let mut fresh = docloupe::bundle::split::SplitBundle::open(&files[CORE_FILE]).unwrap();
            let got = match fresh.terms_with_prefix(prefix, cap) {
                Ok(found) => found.map(|v| v.into_iter().map(|(t, d)| (t.to_owned(), d)).collect()),
                Err(missing) => {
                    // Too many terms is known from the core alone; else the shards come next.
                    for shard in missing {
                        let name = shard.file_name();
                        fresh.add(&name, &files[&name]).unwrap();
                    }
                    fresh
                        .terms_with_prefix(prefix, cap)
                        .expect("every shard loaded")
                        .map(|v| v.into_iter().map(|(t, d)| (t.to_owned(), d)).collect())
                }
            };
            let expected: Option<Vec<(String, usize)>> =
                expected.map(|v| v.into_iter().map(|(t, d)| (t.to_owned(), d)).collect());
            assert_eq!(got, expected, "{prefix:?} cap {cap}");
        }
    }
    // A short prefix whose terms fill whole shards past the cap reads no shard at all.
    assert!(matches!(split.terms_with_prefix("", 3), Ok(None)));
    for (name, file) in &files {
        if name.starts_with("lex-") {
            split.add(name, file).unwrap();
        }
    }
    assert!(split.terms_with_prefix("c", 10_000).unwrap().unwrap().len() > 3);
}

#[test]
fn the_same_bundle_splits_into_the_same_files() {
    let bytes = common::fixture_bundle();
    let bundle = docloupe::bundle::decode(bytes).unwrap();
    assert_eq!(
        split(&bundle, bytes).unwrap(),
        split(&bundle, bytes).unwrap()
    );
    let files = split(&bundle, bytes).unwrap();
    assert_eq!(files[0].0, CORE_FILE);
    // The vectors section, byte for byte, in its pieces; no file holds the whole bundle.
    let (header, start) = docloupe::bundle::decode_header(bytes).unwrap();
    let entry = header.sections.last().unwrap();
    assert_eq!(entry.kind.name(), "vectors");
    let section = docloupe::bundle::section_bytes(bytes, start, entry).unwrap();
    let pieces: Vec<&Vec<u8>> = files
        .iter()
        .filter(|(n, _)| n.starts_with("vec-"))
        .map(|(_, b)| b)
        .collect();
    assert_eq!(pieces.len(), 1);
    assert!(pieces[0].windows(section.len()).any(|w| w == section));
    assert!(files.iter().all(|(_, b)| b.len() < bytes.len()));
}

/// Semantic and hybrid search over a split bundle: the first round asks for every vector piece
/// (with the postings), and every answer equals the whole bundle's, with the model, the
/// learned second stage and filters, for pieces of every size.
#[test]
fn a_split_bundle_with_the_model_answers_hybrid_like_the_whole_one() {
    let bytes = common::fixture_bundle();
    let mut whole = Engine::from_bundle(bytes, Some(common::model_files())).unwrap();
    let hybrid: Vec<String> = requests()
        .into_iter()
        .filter(|r| !r.contains("\"fulltext\""))
        .chain(
            [
                r#"{"mode": "semantic", "query": "how big can the cache be", "filters": {"sourcePrefix": "en/"}}"#,
                r#"{"mode": "hybrid", "query": "remove old entries", "rerank": true, "candidateLimit": 5}"#,
                r#"{"mode": "hybrid", "query": "кэш", "workspacePath": "ru"}"#,
            ]
            .map(str::to_owned),
        )
        .collect();
    assert!(hybrid.len() >= 20, "{} requests", hybrid.len());
    for sizes in [ShardSizes::default(), TINY] {
        let files = files_of(bytes, sizes);
        let pieces: Vec<&String> = files.keys().filter(|f| f.starts_with("vec-")).collect();
        assert!(
            pieces.len() > usize::from(sizes == TINY) * 10,
            "{}",
            pieces.len()
        );
        let mut split = Engine::split(&files[CORE_FILE]).unwrap();
        split.install_embedder(common::embedder()).unwrap();
        let mut first_round = Vec::new();
        let r = SearchRequest::from_json(r#"{"mode": "hybrid", "query": "cache size"}"#).unwrap();
        if let Err(Error::FilesNeeded(names)) = split.search(&r) {
            first_round = names;
        }
        assert!(
            pieces.iter().all(|p| first_round.contains(p)),
            "{first_round:?}"
        );
        let mut fetched = Vec::new();
        for (k, json) in hybrid.iter().enumerate() {
            let expected = answer(&mut whole, json, &files, &mut Vec::new());
            // Some requests on a fresh engine too, which fetches all it needs itself (loading
            // the model is most of a fresh engine's cost).
            if k % 6 == 0 {
                let mut fresh = Engine::split(&files[CORE_FILE]).unwrap();
                fresh.install_embedder(common::embedder()).unwrap();
                let got = answer(&mut fresh, json, &files, &mut Vec::new());
                assert_eq!(got, expected, "{sizes:?}: {json}");
            }
            let got = answer(&mut split, json, &files, &mut fetched);
            assert_eq!(got, expected, "{sizes:?} (warm): {json}");
        }
        let vectors = fetched.iter().filter(|f| f.starts_with("vec-")).count();
        assert_eq!(vectors, pieces.len(), "each piece is read once");
        assert!(split.missing_vector_files().is_empty());
    }
}

/// Vector pieces may come in any order (a browser fetches them side by side), twice, or with
/// a bad one among them: each early piece is held until the ones before it are in, and the
/// set decodes to what the whole bundle answers.
#[test]
fn vector_pieces_in_any_order_load_as_in_order() {
    let bytes = common::fixture_bundle();
    let files = files_of(bytes, TINY);
    let n = files.keys().filter(|f| f.starts_with("vec-")).count();
    assert!(n > 10, "{n} pieces");
    let piece = |i: usize| format!("vec-{i}.bin");
    let mut whole = Engine::from_bundle(bytes, Some(common::model_files())).unwrap();
    let json = r#"{"mode": "hybrid", "query": "how big can the cache be", "rerank": true}"#;
    let expected = answer(&mut whole, json, &files, &mut Vec::new());
    // Last first, then the even ones, then the odd ones, each added twice.
    let order: Vec<usize> = std::iter::once(n - 1)
        .chain((0..n - 1).step_by(2))
        .chain((1..n - 1).step_by(2))
        .collect();
    let mut engine = Engine::split(&files[CORE_FILE]).unwrap();
    for (k, &i) in order.iter().enumerate() {
        // A damaged copy of a piece not in yet is refused and changes nothing.
        if k == 3 && !order[..k].contains(&(n - 2)) {
            let bad = &files[&piece(n - 2)];
            assert!(engine
                .add_split_file(&piece(n - 2), &bad[..bad.len() - 1])
                .is_err());
        }
        engine.add_split_file(&piece(i), &files[&piece(i)]).unwrap();
        if k + 1 < order.len() {
            engine.add_split_file(&piece(i), &files[&piece(i)]).unwrap();
            assert_eq!(engine.missing_vector_files().len(), n - k - 1, "after {k}");
        }
    }
    assert!(engine.missing_vector_files().is_empty());
    engine.install_embedder(common::embedder()).unwrap();
    let mut fetched = Vec::new();
    assert_eq!(answer(&mut engine, json, &files, &mut fetched), expected);
    assert!(
        !fetched.iter().any(|f| f.starts_with("vec-")),
        "{fetched:?}"
    );
}

fn collection_unavailable(e: Error) -> String {
    assert_eq!(e.code(), ErrorCode::DocsCollectionUnavailable, "{e}");
    e.details().unwrap()["reason"].as_str().unwrap().to_owned()
}

#[test]
fn a_bad_core_is_refused_with_a_typed_error() {
    let files = files_of(common::fixture_bundle(), ShardSizes::default());
    let core = &files[CORE_FILE];
    for cut in (0..core.len()).step_by(7) {
        let e = Engine::split(&core[..cut]).unwrap_err();
        let reason = collection_unavailable(e);
        assert!(
            ["BundleTruncated", "ChecksumMismatch"].contains(&reason.as_str()),
            "{cut}: {reason}"
        );
    }
    for i in (0..core.len()).step_by(5) {
        let mut bad = core.clone();
        bad[i] ^= 0x20;
        if let Err(e) = Engine::split(&bad) {
            collection_unavailable(e);
        }
        // Flipping the version's high bits may only make the version newer, still an error.
    }
    // A core cut in the previous layout (version 2, no term counts) asks to be cut again.
    let mut old = core.clone();
    old[8..12].copy_from_slice(&2u32.to_le_bytes());
    let e = Engine::split(&old).unwrap_err();
    assert!(e.to_string().contains("older"), "{e}");
    assert_eq!(collection_unavailable(e), "OlderFormat");
    let whole = common::fixture_bundle();
    assert_eq!(
        collection_unavailable(Engine::split(whole).unwrap_err()),
        "NotABundle"
    );
    assert_eq!(
        collection_unavailable(Engine::split(b"<html>not found</html>").unwrap_err()),
        "NotABundle"
    );
}

#[test]
fn bad_shards_are_refused_and_leave_the_engine_working() {
    let bytes = common::fixture_bundle();
    let files = files_of(bytes, TINY);
    let other = frozen_files("v9-mixed.bundle");
    let mut engine = Engine::split(&files[CORE_FILE]).unwrap();
    let shard = "lex-0.bin";
    let good = &files[shard];
    let mut attempts: Vec<(String, Vec<u8>, &str)> = vec![
        (
            shard.into(),
            good[..good.len() - 1].to_vec(),
            "ChecksumMismatch",
        ),
        (shard.into(), good[..10].to_vec(), "BundleTruncated"),
        (shard.into(), other[shard].clone(), "Corrupt"),
        ("lex-1.bin".into(), good.clone(), "Corrupt"),
        ("lex-99999.bin".into(), good.clone(), "Corrupt"),
        ("passwd".into(), good.clone(), "Corrupt"),
        ("docs.bin".into(), files["voc-0.bin"].clone(), "Corrupt"),
        ("voc-1.bin".into(), files["voc-0.bin"].clone(), "Corrupt"),
        ("voc-4096.bin".into(), files["voc-0.bin"].clone(), "Corrupt"),
    ];
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x01;
        attempts.push((shard.into(), bad, "ChecksumMismatch"));
    }
    for (name, bytes, reason) in attempts {
        let e = engine.add_split_file(&name, &bytes).unwrap_err();
        assert_eq!(collection_unavailable(e), reason, "{name}");
    }
    let mut fetched = Vec::new();
    let got = answer(
        &mut engine,
        r#"{"mode": "fulltext", "query": "cache"}"#,
        &files,
        &mut fetched,
    );
    let whole = Engine::lexical(bytes).unwrap();
    let mut expected = whole
        .search(&SearchRequest::from_json(r#"{"mode": "fulltext", "query": "cache"}"#).unwrap())
        .unwrap();
    expected.timings = Default::default();
    assert_eq!(got, serde_json::to_string(&expected).unwrap());
}

#[test]
fn a_whole_bundle_engine_takes_no_split_files() {
    let mut engine = Engine::lexical(common::fixture_bundle()).unwrap();
    let e = engine.add_split_file("lex-0.bin", b"x").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InternalError);
}

/// A vector piece is checked on its own (checksum, bundle, name) and the pieces together
/// against the section's checksum once the last one is in: a bad set leaves no piece behind,
/// and the right files, fetched again, answer as the whole bundle does.
#[test]
fn bad_vector_pieces_are_refused_and_the_good_ones_still_load() {
    use sha2::{Digest, Sha256};
    let bytes = common::fixture_bundle();
    let files = files_of(bytes, TINY);
    let other = frozen_files("v10-coded.bundle");
    let pieces: Vec<&String> = files.keys().filter(|f| f.starts_with("vec-")).collect();
    let mut engine = Engine::split(&files[CORE_FILE]).unwrap();
    let good = &files["vec-0.bin"];
    let attempts = [
        (
            "vec-0.bin".to_owned(),
            good[..good.len() - 1].to_vec(),
            "ChecksumMismatch",
        ),
        (
            "vec-0.bin".to_owned(),
            other["vec-0.bin"].clone(),
            "Corrupt",
        ),
        ("vec-1.bin".to_owned(), good.clone(), "Corrupt"),
        (format!("vec-{}.bin", pieces.len()), good.clone(), "Corrupt"),
    ];
    for (name, bytes, reason) in attempts {
        let e = engine.add_split_file(&name, &bytes).unwrap_err();
        assert_eq!(collection_unavailable(e), reason, "{name}");
    }
    assert_eq!(engine.missing_vector_files().len(), pieces.len());

    // A forged piece that passes its own checks (its last byte of vectors changed, its
    // checksum recomputed): refused when the set is complete, and no piece is kept.
    let mut payload = good[32..].to_vec();
    *payload.last_mut().unwrap() ^= 0x01;
    let forged = [Sha256::digest(&payload).as_slice(), &payload].concat();
    engine.add_split_file("vec-0.bin", &forged).unwrap();
    let outcomes: Vec<Result<(), Error>> = pieces[1..]
        .iter()
        .map(|p| engine.add_split_file(p, &files[*p]))
        .collect();
    assert!(outcomes[..outcomes.len() - 1].iter().all(Result::is_ok));
    let e = outcomes.into_iter().last().unwrap().unwrap_err();
    assert_eq!(collection_unavailable(e), "ChecksumMismatch");
    assert_eq!(engine.missing_vector_files().len(), pieces.len());

    engine.install_embedder(common::embedder()).unwrap();
    let json = r#"{"mode": "hybrid", "query": "how big can the cache be", "rerank": true}"#;
    let mut fetched = Vec::new();
    let got = answer(&mut engine, json, &files, &mut fetched);
    let mut whole = Engine::from_bundle(bytes, Some(common::model_files())).unwrap();
    assert_eq!(got, answer(&mut whole, json, &files, &mut Vec::new()));
    assert_eq!(
        fetched.iter().filter(|f| f.starts_with("vec-")).count(),
        pieces.len()
    );
}
