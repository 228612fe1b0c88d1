//! Spec: what a search over the fixture collection returns.

mod common;

use docloupe::{Engine, Mode, SearchRequest};

fn engine() -> Engine {
    Engine::from_bundle(common::fixture_bundle(), Some(common::model_files())).unwrap()
}

#[test]
fn a_russian_query_in_another_word_form_finds_the_document() {
    let e = engine();
    // The page says «документация»; the query says «документации».
    let r = e
        .search(&SearchRequest::new("документации").mode(Mode::Fulltext))
        .unwrap();
    let top = &r.results[0];
    assert_eq!(top.document_path, "ru/документация.md");
    assert!(top.ranking_signals.lexical > 0.0);
    // The highlight marks the word as written in the page.
    let chars: Vec<char> = top.snippet.chars().collect();
    let marked: String = chars[top.highlights[0].start..top.highlights[0].end]
        .iter()
        .collect();
    assert!(marked.to_lowercase().starts_with("документаци"), "{marked}");

    let r = e
        .search(&SearchRequest::new("обновления сервиса").mode(Mode::Fulltext))
        .unwrap();
    assert_eq!(r.results[0].document_path, "ru/установка.md");
    assert_eq!(r.results[0].section_path, vec!["Установка", "Обновление"]);
}

#[test]
fn an_english_query_finds_a_chunk_sharing_no_word_through_vectors() {
    let e = engine();
    let query = "how can I speed up slow builds";
    // Lexically, nothing matches the target chunk ...
    let lexical = e
        .search(&SearchRequest::new(query).mode(Mode::Fulltext))
        .unwrap();
    assert!(lexical
        .results
        .iter()
        .all(|r| r.anchor != "faster-compilation"));
    // ... but hybrid search puts it first, on its semantic signal alone.
    let hybrid = e
        .search(&SearchRequest::new(query).mode(Mode::Hybrid))
        .unwrap();
    let top = &hybrid.results[0];
    assert_eq!(
        (top.document_path.as_str(), top.anchor.as_str()),
        ("en/performance.md", "faster-compilation")
    );
    assert_eq!(top.ranking_signals.lexical, 0.0);
    assert!(
        top.ranking_signals.semantic > 0.3,
        "{}",
        top.ranking_signals.semantic
    );
}

#[test]
fn results_carry_breadcrumb_anchor_and_lines() {
    let e = engine();
    let r = e
        .search(
            &SearchRequest::new("cache size option")
                .mode(Mode::Hybrid)
                .rerank(false)
                .limit(3),
        )
        .unwrap();
    let top = &r.results[0];
    assert_eq!(top.document_path, "en/caching.md");
    assert_eq!(
        top.section_path,
        vec!["Caching", "Configure the cache size"]
    );
    assert_eq!(top.anchor, "configure-the-cache-size");
    assert_eq!((top.line_start, top.line_end), (14, 20));
    assert_eq!(top.title, "Caching");
    assert_eq!(top.chunk_id.len(), 32);
    assert_eq!(r.applied_strategy, "bm25_plus_vector_docs_only");
    assert!(r.results.len() <= 3);
}

#[test]
fn equal_scores_break_ties_by_path_then_chunk_index() {
    let e = engine();
    for mode in [Mode::Fulltext, Mode::Hybrid, Mode::Semantic] {
        let r = e
            .search(&SearchRequest::new("zebracorn animal").mode(mode))
            .unwrap();
        let (a, b) = (&r.results[0], &r.results[1]);
        assert_eq!(a.score, b.score, "{mode:?}: identical files score the same");
        assert_eq!(
            (a.document_path.as_str(), b.document_path.as_str()),
            ("en/duplicate-a.md", "en/duplicate-b.md"),
            "{mode:?}"
        );
    }
}

#[test]
fn hidden_folders_are_not_indexed() {
    let e = engine();
    let r = e
        .search(&SearchRequest::new("secret hidden").mode(Mode::Fulltext))
        .unwrap();
    assert!(r
        .results
        .iter()
        .all(|x| !x.document_path.contains(".hidden")));
    assert!(e
        .bundle()
        .expect("a whole bundle")
        .docs
        .documents
        .iter()
        .all(|d| !d.path.starts_with('.')));
}

#[test]
fn front_matter_lands_in_the_bundle() {
    let e = engine();
    let doc = e
        .bundle()
        .expect("a whole bundle")
        .docs
        .documents
        .iter()
        .find(|d| d.path == "en/caching.md")
        .unwrap();
    assert_eq!(doc.date.as_deref(), Some("2024-03-05"));
    assert_eq!(doc.tags, vec!["configuration", "performance"]);
    assert_eq!(
        doc.description.as_deref(),
        Some("How the response cache works and how to size it.")
    );
    let ru = e
        .bundle()
        .expect("a whole bundle")
        .docs
        .documents
        .iter()
        .find(|d| d.path == "ru/установка.md")
        .unwrap();
    assert_eq!(
        ru.lang,
        docloupe::analyze::Language::Ru,
        "detected without front matter"
    );
}

#[test]
fn bad_requests_get_typed_errors() {
    let e = engine();
    assert!(matches!(
        e.search(&SearchRequest::new("   ")),
        Err(docloupe::Error::QueryEmpty)
    ));
    let long = "word ".repeat(101);
    assert!(
        matches!(e.search(&SearchRequest::new(long)), Err(docloupe::Error::InvalidRequest { field, .. }) if field == "query")
    );
    assert!(
        matches!(e.search(&SearchRequest::new("x").limit(0)), Err(docloupe::Error::InvalidRequest { field, .. }) if field == "limit")
    );
    assert!(matches!(
        e.search(&SearchRequest::new("x").limit(51)),
        Err(docloupe::Error::InvalidRequest { .. })
    ));
}

#[test]
fn fulltext_needs_no_model_and_semantic_says_why_it_cannot_run() {
    let e = Engine::from_bundle(common::fixture_bundle(), None).unwrap();
    let r = e
        .search(&SearchRequest::new("cache").mode(Mode::Fulltext))
        .unwrap();
    assert_eq!(r.results[0].document_path, "en/caching.md");
    assert!(matches!(
        e.search(&SearchRequest::new("cache").mode(Mode::Semantic)),
        Err(docloupe::Error::SemanticUnavailable(_))
    ));
    // Hybrid needs the fused stage, which needs the model.
    assert!(matches!(
        e.search(&SearchRequest::new("cache")),
        Err(docloupe::Error::RerankUnavailable {
            reason: "FusedStageUnavailable",
            ..
        })
    ));
}

#[test]
fn the_cli_prints_text_and_json() {
    let (_tmp, bundle) = common::fixture_bundle_file();
    let run = |format: &str| {
        let out = common::docloupe_search(&bundle)
            .args(["--models", common::model_dir().to_str().unwrap()])
            .args([
                "--format",
                format,
                "--limit",
                "2",
                "configure",
                "the",
                "cache",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run("text");
    assert!(
        text.contains("Caching › Configure the cache size"),
        "{text}"
    );
    assert!(
        text.contains("en/caching.md:14-20#configure-the-cache-size"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(json["success"], true);
    assert_eq!(json["results"][0]["file_path"], "en/caching.md");
    assert!(json["results"].as_array().unwrap().len() <= 2);
    assert!(json["results"][0]["relevance_score"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_cli_fails_clearly_on_a_bad_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bad.bundle");
    std::fs::write(&bundle, b"not a bundle at all").unwrap();
    let out = common::docloupe_search(&bundle)
        .args(["--mode", "fulltext", "q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a docloupe bundle"), "{err}");
}

// ---- multilingual E5: a question in one language, the page in the other -------------------

/// The fixtures built with multilingual E5 (`--model e5-multilingual`), with that model.
fn e5_engine() -> Engine {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let bytes = BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("e5.bundle");
        common::build(&common::fixtures(), &out, &["--model", "e5-multilingual"]);
        std::fs::read(out).unwrap()
    });
    let files = docloupe::ModelFiles::from_dir(
        &docloupe::embed::models_root().join("multilingual-e5-small"),
    )
    .expect("multilingual E5 installed (make models)");
    Engine::from_bundle(bytes, Some(&files)).unwrap()
}

/// The builder writes MiniLM's vectors in the 4-bit form and keeps E5's at int8
/// (`embed::four_bit_vectors`: E5's passages differ by less than the 4-bit rounding).
#[test]
fn minilm_vectors_are_written_in_4_bits_and_e5_vectors_in_8() {
    let bits = |b: &docloupe::bundle::Bundle| -> Vec<bool> {
        let v = b.vectors.as_ref().unwrap();
        v.vectors().map(|q| q.is_4bit()).collect()
    };
    let minilm = bits(&docloupe::bundle::decode(common::fixture_bundle()).unwrap());
    assert!(!minilm.is_empty() && minilm.iter().all(|&b| b));
    let e5 = bits(e5_engine().bundle().unwrap());
    assert!(!e5.is_empty() && e5.iter().all(|&b| !b));
}

#[test]
fn with_e5_a_question_in_one_language_finds_the_page_in_the_other() {
    let e = e5_engine();
    let top = |query: &str, mode: &str, folder: &str| -> (String, usize) {
        let r = e
            .search_json(
                &serde_json::json!({
                    "query": query, "mode": mode, "limit": 3,
                    "filters": {"sourcePrefix": folder},
                })
                .to_string(),
            )
            .unwrap();
        let lexical = r
            .results
            .iter()
            .filter(|x| x.ranking_signals.lexical > 0.0)
            .count();
        (r.results[0].document_path.clone(), lexical)
    };
    let cases = [
        // Russian questions, English pages only.
        ("как ускорить долгую компиляцию", "en/", "en/performance.md"),
        ("сколько места на диске нужно", "en/", "en/install.md"),
        // English questions, Russian pages only.
        (
            "how much free disk space is needed",
            "ru/",
            "ru/установка.md",
        ),
        (
            "how do I upgrade to a new version",
            "ru/",
            "ru/установка.md",
        ),
    ];
    for (query, folder, page) in cases {
        for mode in ["semantic", "hybrid"] {
            let (found, lexical) = top(query, mode, folder);
            assert_eq!(found, page, "{mode}: {query:?}");
            // The two languages share no word: hybrid stands on the vectors alone and
            // keeps their order (the lexical side contributes nothing, it does not disturb).
            if mode == "hybrid" {
                assert_eq!(lexical, 0, "{query:?}");
            }
        }
    }
}

/// Hybrid fusion reads E5's cosines relative to the query's best (`embed::fusion_span`): E5
/// puts every passage of a collection within about 0.1 of one another, so a raw cosine barely
/// moved a fused score. Where the lexical side has nothing (another language), the nearest
/// chunk scores the full semantic half, 0.5, and the others 0.5 · (1 − (best − cos) / 0.1),
/// while `rankingSignals.semantic` stays the raw cosine.
#[test]
fn with_e5_hybrid_reads_each_cosine_relative_to_the_querys_best() {
    let e = e5_engine();
    let r = e
        .search_json(
            &serde_json::json!({
                "query": "как ускорить долгую компиляцию", "mode": "hybrid",
                "rerank": false, "limit": 10, "filters": {"sourcePrefix": "en/"},
            })
            .to_string(),
        )
        .unwrap();
    assert!(r.results.len() >= 2, "{}", r.results.len());
    let best = r.results[0].ranking_signals.semantic;
    for x in &r.results {
        let cos = x.ranking_signals.semantic;
        assert_eq!(x.ranking_signals.lexical, 0.0, "{}", x.document_path);
        assert!(
            cos <= best,
            "{}: cosine {cos} above the first's {best}",
            x.document_path
        );
        let expected = 0.5 * (1.0 - (best - cos) / 0.1).max(0.0);
        assert!(
            (x.score - expected).abs() < 1e-5,
            "{}: score {} for cosine {cos} (best {best})",
            x.document_path,
            x.score
        );
    }
    assert!((r.results[0].score - 0.5).abs() < 1e-6);
}
