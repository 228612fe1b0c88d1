//! Spec: the search contract every front end exposes — request rules, error codes, filters,
//! facets, context, per-document caps, the rerank stage and its fallback, determinism.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use docloupe::search::Timings;
use docloupe::{
    Calibration, Engine, EngineOptions, ErrorCode, ErrorResponse, FallbackPolicy, Mode, Rerank,
    SearchRequest, SearchResponse,
};
use serde_json::{json, Value};

fn engine() -> Engine {
    Engine::from_bundle(common::fixture_bundle(), Some(common::model_files())).unwrap()
}

fn ask(e: &Engine, body: Value) -> Result<SearchResponse, ErrorResponse> {
    e.search_json(&body.to_string())
}

fn ok(e: &Engine, body: Value) -> SearchResponse {
    ask(e, body.clone()).unwrap_or_else(|err| panic!("{body} failed: {err:?}"))
}

fn err(e: &Engine, body: Value) -> ErrorResponse {
    match ask(e, body.clone()) {
        Ok(r) => panic!("{body} should fail, got {} results", r.results.len()),
        Err(x) => x,
    }
}

/// The response as JSON without the one non-deterministic field.
fn stable_json(mut r: SearchResponse) -> String {
    r.timings = Timings::default();
    serde_json::to_string(&r).unwrap()
}

fn paths(r: &SearchResponse) -> Vec<&str> {
    r.results.iter().map(|x| x.document_path.as_str()).collect()
}

// ---- rerank models for the stage's own behaviour --------------------------------------

/// Scores by how many query words the passage contains: a transparent relevance model, so
/// tests can predict the reranked order.
#[derive(Debug)]
struct WordOverlap;

impl Rerank for WordOverlap {
    fn score(&self, query: &str, passage: &str) -> docloupe::Result<f32> {
        let p = passage.to_lowercase();
        Ok(query
            .to_lowercase()
            .split_whitespace()
            .filter(|w| p.contains(w))
            .count() as f32)
    }
}

/// Gives every pair the same score.
#[derive(Debug)]
struct Constant;

impl Rerank for Constant {
    fn score(&self, _: &str, _: &str) -> docloupe::Result<f32> {
        Ok(0.25)
    }
}

/// Fails on every call, counting them.
#[derive(Debug, Default)]
struct Failing(AtomicUsize);

impl Rerank for Failing {
    fn score(&self, _: &str, _: &str) -> docloupe::Result<f32> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Err(docloupe::Error::Model("inference failed: injected".into()))
    }
}

#[derive(Debug)]
struct Panicking;

impl Rerank for Panicking {
    fn score(&self, _: &str, _: &str) -> docloupe::Result<f32> {
        panic!("bug inside the model")
    }
}

/// 100+ distinct queries drawn from the fixture collection's own words, in a fixed order.
fn fixture_queries(e: &Engine) -> Vec<String> {
    let mut words: Vec<String> = e
        .bundle()
        .expect("a whole bundle")
        .text
        .all()
        .unwrap()
        .into_iter()
        .flat_map(|t| {
            t.split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.chars().count() >= 4)
                .map(str::to_lowercase)
                .collect::<Vec<_>>()
        })
        .collect();
    words.sort();
    words.dedup();
    let mut queries: Vec<String> = words.iter().step_by(2).cloned().collect();
    queries.extend(words.windows(2).map(|w| format!("{} {}", w[0], w[1])));
    queries.truncate(100);
    assert_eq!(queries.len(), 100, "fixture vocabulary too small");
    queries
}

// ---- request -----------------------------------------------------------------------------

#[test]
fn a_minimal_request_gets_every_default_and_the_full_response_shape() {
    let e = engine();
    let r = ok(&e, json!({"query": "  cache size  "}));
    assert_eq!(r.query, "cache size");
    assert_eq!(r.applied_strategy, "bm25_plus_vector_rerank_docs_only");
    // The built-in learned ranker is the second stage: it always runs, nothing falls back.
    assert!(!r.fallback_applied);
    assert_eq!(r.degraded_reason, None);
    assert!(!r.results.is_empty() && r.results.len() <= 10);
    assert_eq!(r.results[0].document_path, "en/caching.md");
    let v: Value = serde_json::to_value(&r).unwrap();
    for key in [
        "query",
        "total",
        "appliedStrategy",
        "fallbackApplied",
        "results",
        "facets",
        "suggestions",
        "timings",
    ] {
        assert!(v.get(key).is_some(), "response lacks {key}");
    }
    for key in ["totalMs", "embedMs", "retrieveMs", "rerankMs"] {
        assert!(v["timings"][key].is_number(), "timings lacks {key}");
    }
    let top = &v["results"][0];
    for key in [
        "documentPath",
        "chunkIndex",
        "chunkId",
        "title",
        "sectionPath",
        "anchor",
        "lineStart",
        "lineEnd",
        "snippet",
        "highlights",
        "score",
        "sourceType",
        "documentType",
        "date",
        "rankingSignals",
        "context",
    ] {
        assert!(top.get(key).is_some(), "result lacks {key}: {top}");
    }
    assert_eq!(top["sourceType"], "documentation");
    assert_eq!(top["documentType"], "md");
    assert_eq!(top["date"], "2024-03-05");
    let p = top["rankingSignals"]["rerank"]
        .as_f64()
        .expect("the stage ran");
    assert!(p > 0.0 && p < 1.0, "{p}");
    assert!(
        top["rankingSignals"].get("features").is_none(),
        "features only when a host asks for them"
    );
    for res in &r.results {
        let s = &res.ranking_signals;
        assert!(s.lexical >= 0.0 && s.semantic >= 0.0);
    }
    // Scores never increase down the list.
    assert!(r.results.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn each_mode_names_its_strategy() {
    let e = engine();
    let cases = [
        (
            json!({"query": "cache", "mode": "hybrid"}),
            "bm25_plus_vector_rerank_docs_only",
        ),
        (
            json!({"query": "cache", "mode": "hybrid", "rerank": false}),
            "bm25_plus_vector_docs_only",
        ),
        (
            json!({"query": "cache", "mode": "fulltext"}),
            "bm25_docs_only",
        ),
        (
            json!({"query": "cache", "mode": "semantic"}),
            "vector_docs_only",
        ),
        // Only hybrid requests rerank.
        (
            json!({"query": "cache", "mode": "fulltext", "rerank": true}),
            "bm25_docs_only",
        ),
    ];
    for (body, strategy) in cases {
        let r = ok(&e, body.clone());
        assert_eq!(r.applied_strategy, strategy, "{body}");
        if strategy != "bm25_plus_vector_rerank_docs_only" {
            assert!(!r.fallback_applied, "{body}");
            assert_eq!(r.timings.rerank_ms, 0.0);
        }
    }
}

#[test]
fn every_invalid_field_is_rejected_and_named() {
    let e = engine();
    let long = "x".repeat(501);
    let cases: Vec<(Value, ErrorCode, &str)> = vec![
        (json!({"query": ""}), ErrorCode::SearchQueryEmpty, "query"),
        (
            json!({"query": " \t\n "}),
            ErrorCode::SearchQueryEmpty,
            "query",
        ),
        // Regression (issue 59): nothing a reader can see is an empty query too.
        (
            json!({"query": "\u{feff}"}),
            ErrorCode::SearchQueryEmpty,
            "query",
        ),
        (
            json!({"query": "\u{0} \u{200b}"}),
            ErrorCode::SearchQueryEmpty,
            "query",
        ),
        (json!({"query": long}), ErrorCode::InvalidRequest, "query"),
        (json!({"limit": 3}), ErrorCode::InvalidRequest, "query"),
        (json!({"query": 7}), ErrorCode::InvalidRequest, "query"),
        (
            json!({"query": "a", "limit": 0}),
            ErrorCode::InvalidRequest,
            "limit",
        ),
        (
            json!({"query": "a", "limit": 51}),
            ErrorCode::InvalidRequest,
            "limit",
        ),
        (
            json!({"query": "a", "limit": -1}),
            ErrorCode::InvalidRequest,
            "limit",
        ),
        (
            json!({"query": "a", "limit": "10"}),
            ErrorCode::InvalidRequest,
            "limit",
        ),
        (
            json!({"query": "a", "mode": "fuzzy"}),
            ErrorCode::InvalidRequest,
            "mode",
        ),
        (
            json!({"query": "a", "rerank": "yes"}),
            ErrorCode::InvalidRequest,
            "rerank",
        ),
        (
            json!({"query": "a", "candidateLimit": 0}),
            ErrorCode::InvalidRequest,
            "candidateLimit",
        ),
        (
            json!({"query": "a", "candidateLimit": 101}),
            ErrorCode::InvalidRequest,
            "candidateLimit",
        ),
        (
            json!({"query": "a", "maxChunksPerDocument": 0}),
            ErrorCode::InvalidRequest,
            "maxChunksPerDocument",
        ),
        (
            json!({"query": "a", "maxChunksPerDocument": 11}),
            ErrorCode::InvalidRequest,
            "maxChunksPerDocument",
        ),
        (
            json!({"query": "a", "includeContext": 1}),
            ErrorCode::InvalidRequest,
            "includeContext",
        ),
        (
            json!({"query": "a", "colour": "red"}),
            ErrorCode::InvalidRequest,
            "colour",
        ),
        (
            json!({"query": "a", "filters": {"dateFrom": "2024-13-01"}}),
            ErrorCode::InvalidRequest,
            "filters.dateFrom",
        ),
        (
            json!({"query": "a", "filters": {"dateTo": "yesterday"}}),
            ErrorCode::InvalidRequest,
            "filters.dateTo",
        ),
        (
            json!({"query": "a", "filters": {"dateFrom": "2024-05-01", "dateTo": "2024-04-01"}}),
            ErrorCode::InvalidRequest,
            "filters.dateFrom",
        ),
        (
            json!({"query": "a", "filters": {"documentTypes": "md"}}),
            ErrorCode::InvalidRequest,
            "filters.documentTypes",
        ),
        (
            json!({"query": "a", "filters": {"documentTypes": [""]}}),
            ErrorCode::InvalidRequest,
            "filters.documentTypes",
        ),
        (
            json!({"query": "a", "filters": {"tag": ["x"]}}),
            ErrorCode::InvalidRequest,
            "filters.tag",
        ),
        (
            json!({"query": "a", "workspacePath": "/etc"}),
            ErrorCode::InvalidRequest,
            "workspacePath",
        ),
        (
            json!({"query": "a", "workspacePath": "en/../../secrets"}),
            ErrorCode::InvalidRequest,
            "workspacePath",
        ),
        (
            json!({"query": "a", "projectId": ""}),
            ErrorCode::InvalidRequest,
            "projectId",
        ),
    ];
    for (body, code, field) in cases {
        let x = err(&e, body.clone());
        assert_eq!(x.error_code, code, "{body}: {x:?}");
        assert_eq!(x.details.as_ref().unwrap()["field"], field, "{body}: {x:?}");
        assert!(!x.message.is_empty());
    }
    // Malformed JSON is INVALID_REQUEST too.
    let x = e.search_json("{\"query\": ").unwrap_err();
    assert_eq!(x.error_code, ErrorCode::InvalidRequest);
    // And the wire form of an error is exactly {errorCode, message, details}.
    let v = serde_json::to_value(err(&e, json!({"query": "a", "limit": 99}))).unwrap();
    assert_eq!(v["errorCode"], "INVALID_REQUEST");
    assert_eq!(v["details"]["field"], "limit");
    assert_eq!(v.as_object().unwrap().len(), 3);
}

/// Regression: serde's derived structs also read an array of their fields in order, so
/// `["cache"]` was answered as a search for "cache" and `"filters": []` as no filters.
#[test]
fn a_request_and_its_filters_must_be_json_objects() {
    let e = engine();
    for (body, field) in [
        (json!(["cache"]), ""),
        (json!([]), ""),
        (json!({"query": "cache", "filters": []}), "filters"),
        (json!({"query": "cache", "filters": [["md"]]}), "filters"),
    ] {
        let x = err(&e, body.clone());
        assert_eq!(x.error_code, ErrorCode::InvalidRequest, "{body}: {x:?}");
        assert_eq!(x.details.as_ref().unwrap()["field"], field, "{body}: {x:?}");
        assert!(x.message.contains("a JSON object"), "{body}: {}", x.message);
    }
    // null still means "no filters", and a nested error still names its path.
    ok(
        &e,
        json!({"query": "cache", "filters": null, "mode": "fulltext"}),
    );
    let x = err(
        &e,
        json!({"query": "cache", "filters": {"dateFrom": "2024-02-30"}}),
    );
    assert_eq!(x.details.as_ref().unwrap()["field"], "filters.dateFrom");
}

/// Regression: a wrong value's message ended "at line 1 column 46", so the same request
/// re-serialized (the JS API stringifies objects) got a different message than from the CLI.
#[test]
fn a_wrong_value_gets_the_same_message_however_the_json_is_formatted() {
    let e = engine();
    let compact = e
        .search_json(r#"{"query":"cache","filters":{"workspacePath":"en"}}"#)
        .unwrap_err();
    let pretty = e
        .search_json(
            "{\n  \"query\": \"cache\",\n  \"filters\": {\n    \"workspacePath\": \"en\"\n  }\n}",
        )
        .unwrap_err();
    assert_eq!(compact, pretty);
    assert!(!compact.message.contains("line"), "{}", compact.message);
    // Malformed JSON has no field to name: its position stays.
    let broken = e.search_json("{\"query\": ").unwrap_err();
    assert!(broken.message.contains("line 1"), "{}", broken.message);
}

#[test]
fn a_query_of_exactly_500_characters_is_accepted() {
    let e = engine();
    let q = "cache ".repeat(84)[..500].to_owned();
    assert_eq!(q.chars().count(), 500);
    ok(&e, json!({"query": q, "mode": "fulltext"}));
    // Characters, not bytes: 500 Cyrillic letters are 1000 bytes and still fine.
    let ru = "д".repeat(500);
    ok(&e, json!({"query": ru, "mode": "fulltext"}));
}

#[test]
fn a_project_id_must_match_the_collection() {
    let e = engine();
    let x = err(&e, json!({"query": "cache", "projectId": "acme/handbook"}));
    assert_eq!(x.error_code, ErrorCode::DocsCollectionUnavailable);
    let d = x.details.unwrap();
    assert_eq!(d["reason"], "ProjectNotFound");
    assert_eq!(d["projectId"], "acme/handbook");

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p.bundle");
    common::build(
        &common::fixtures(),
        &out,
        &["--project", "acme/handbook", "--no-embeddings"],
    );
    let p = Engine::from_bundle(&std::fs::read(&out).unwrap(), None).unwrap();
    let r = ok(
        &p,
        json!({"query": "cache", "projectId": "acme/handbook", "mode": "fulltext"}),
    );
    assert_eq!(r.results[0].document_path, "en/caching.md");
    let x = err(
        &p,
        json!({"query": "cache", "projectId": "acme/other", "mode": "fulltext"}),
    );
    assert_eq!(x.details.unwrap()["available"], "acme/handbook");
    // A bundle built without embeddings cannot answer hybrid or semantic requests.
    for mode in ["hybrid", "semantic"] {
        let x = err(&p, json!({"query": "cache", "mode": mode}));
        assert_eq!(x.error_code, ErrorCode::InvalidRequest, "{mode}");
        assert_eq!(x.details.unwrap()["reason"], "HybridNotSupported");
    }
    // A request that names no mode gets the fulltext answer, saying so (issue 62: a site
    // indexed with `--model none` answers every host as a keyword engine).
    let r = ok(&p, json!({"query": "cache"}));
    assert_eq!(r.applied_strategy, "bm25_docs_only");
    assert!(!r.fallback_applied);
    let fulltext = ok(&p, json!({"query": "cache", "mode": "fulltext"}));
    assert_eq!(paths(&r), paths(&fulltext));
    assert!(!r.results.is_empty());
}

#[test]
fn a_missing_embedding_model_is_reported_per_mode() {
    let e = Engine::from_bundle(common::fixture_bundle(), None).unwrap();
    let x = err(&e, json!({"query": "cache", "mode": "semantic"}));
    assert_eq!(x.error_code, ErrorCode::DocsCollectionUnavailable);
    assert_eq!(x.details.unwrap()["reason"], "EmbeddingModelNotLoaded");
    // The fused stage is what reranking stands on: a hybrid request that asks for reranking
    // is told the reranking path is unavailable.
    let x = err(&e, json!({"query": "cache"}));
    assert_eq!(x.error_code, ErrorCode::DocsRerankingUnavailable);
    assert_eq!(x.details.unwrap()["reason"], "FusedStageUnavailable");
    // One that does not (issue 25 #5) misses the semantic side, as a semantic request does.
    let x = err(&e, json!({"query": "cache", "rerank": false}));
    assert_eq!(x.error_code, ErrorCode::DocsCollectionUnavailable);
    assert_eq!(x.details.unwrap()["reason"], "EmbeddingModelNotLoaded");
}

// ---- filters, scope, facets ----------------------------------------------------------------

#[test]
fn filters_restrict_documents_before_ranking() {
    let e = engine();
    let q = |filters: Value| {
        ok(
            &e,
            json!({"query": "cache size performance installation документация", "mode": "fulltext",
                   "limit": 50, "filters": filters}),
        )
    };
    let all = q(json!({}));
    let mut every: Vec<&str> = paths(&all);
    every.sort();
    every.dedup();
    assert!(every.len() >= 4, "{every:?}");

    let md = q(json!({"documentTypes": [".MD"]}));
    assert_eq!(
        stable_json(md.clone()).len(),
        stable_json(all.clone()).len()
    );
    let pdf = q(json!({"documentTypes": ["pdf"]}));
    assert!(pdf.results.is_empty());
    assert_eq!(pdf.total, 0);

    let spring = q(json!({"dateFrom": "2024-04-01"}));
    assert!(!spring.results.is_empty());
    assert!(spring
        .results
        .iter()
        .all(|r| r.document_path == "en/performance.md"));
    let march = q(json!({"dateFrom": "2024-03-05", "dateTo": "2024-03-05"}));
    assert!(march
        .results
        .iter()
        .all(|r| r.document_path == "en/caching.md"));
    assert!(!march.results.is_empty(), "date bounds are inclusive");

    let tagged = q(json!({"tags": ["Configuration", "nonexistent"]}));
    assert!(!tagged.results.is_empty());
    assert!(tagged
        .results
        .iter()
        .all(|r| r.document_path == "en/caching.md"));

    let ru = q(json!({"sourcePrefix": "ru/"}));
    assert!(!ru.results.is_empty());
    assert!(ru
        .results
        .iter()
        .all(|r| r.document_path.starts_with("ru/")));
    let en_cach = q(json!({"sourcePrefix": "./en/cach"}));
    assert!(en_cach
        .results
        .iter()
        .all(|r| r.document_path == "en/caching.md"));

    // Filters combine with AND.
    let none = q(json!({"sourcePrefix": "ru/", "tags": ["configuration"]}));
    assert!(none.results.is_empty());
}

#[test]
fn a_workspace_path_scopes_the_search_to_a_folder() {
    let e = engine();
    let r = ok(
        &e,
        json!({"query": "установка", "mode": "fulltext", "workspacePath": "./ru/"}),
    );
    assert!(!r.results.is_empty());
    assert!(r.results.iter().all(|x| x.document_path.starts_with("ru/")));
    // A folder, not a string prefix: "r" is not "ru".
    let r = ok(
        &e,
        json!({"query": "установка", "mode": "fulltext", "workspacePath": "r"}),
    );
    assert!(r.results.is_empty());
    let r = ok(
        &e,
        json!({"query": "cache", "mode": "hybrid", "rerank": false, "workspacePath": "ru"}),
    );
    assert!(r.results.iter().all(|x| x.document_path.starts_with("ru/")));
}

#[test]
fn vector_search_honours_filters_too() {
    // Every neighbour counts here, however far (the model's floor is tested on its own): the
    // query is English, the scope Russian, and the fixture model knows no Russian.
    let e = engine().calibrate(Calibration {
        match_floor: Some(0.0),
        ..Default::default()
    });
    let r = ok(
        &e,
        json!({"query": "how can I speed up slow builds", "mode": "semantic",
                          "filters": {"sourcePrefix": "ru/"}}),
    );
    assert!(
        !r.results.is_empty(),
        "semantic search still fills the page from the scope"
    );
    assert!(r.results.iter().all(|x| x.document_path.starts_with("ru/")));
}

#[test]
fn facets_count_documents_of_the_whole_candidate_set() {
    let e = engine();
    let body = json!({"query": "cache performance compilation", "mode": "fulltext", "limit": 1});
    let r = ok(&e, body);
    assert_eq!(r.results.len(), 1);
    // Both dated documents match; the page shows one, the facets count both.
    assert_eq!(r.facets.dates.get("2024-03"), Some(&1), "{:?}", r.facets);
    assert_eq!(r.facets.dates.get("2024-05"), Some(&1), "{:?}", r.facets);
    let all = ok(
        &e,
        json!({"query": "cache performance compilation", "mode": "fulltext", "limit": 50}),
    );
    let docs: std::collections::BTreeSet<&str> = paths(&all).into_iter().collect();
    assert_eq!(r.facets.document_types.get("md"), Some(&docs.len()));
    // Facets follow the filters.
    let f = ok(
        &e,
        json!({"query": "cache performance compilation", "mode": "fulltext",
                          "filters": {"dateFrom": "2024-04-01"}}),
    );
    assert_eq!(f.facets.dates.len(), 1);
    assert_eq!(f.facets.dates.get("2024-05"), Some(&1));
    assert_eq!(f.facets.document_types.get("md"), Some(&1));
}

// ---- shaping the page ----------------------------------------------------------------------

#[test]
fn max_chunks_per_document_caps_each_document() {
    let e = engine();
    let count = |max: Option<usize>| {
        let mut body =
            json!({"query": "cache size eviction memory disk", "mode": "fulltext", "limit": 50});
        if let Some(m) = max {
            body["maxChunksPerDocument"] = json!(m);
        }
        let r = ok(&e, body);
        let n = r
            .results
            .iter()
            .filter(|x| x.document_path == "en/caching.md")
            .count();
        (n, r.total)
    };
    let (one, total_one) = count(Some(1));
    let (default, _) = count(None);
    let (ten, total_ten) = count(Some(10));
    assert_eq!(one, 1);
    assert!(ten > 1, "caching.md has several matching chunks");
    assert_eq!(default, ten.min(3));
    assert!(total_one < total_ten, "total counts what the cap leaves");
}

#[test]
fn context_brings_the_neighbouring_chunks() {
    let e = engine();
    let r = ok(
        &e,
        json!({"query": "cache size", "mode": "fulltext", "limit": 50}),
    );
    let mut saw_both = false;
    for res in &r.results {
        let ctx = res
            .context
            .as_ref()
            .expect("includeContext defaults to true");
        let doc = e
            .bundle()
            .expect("a whole bundle")
            .docs
            .documents
            .iter()
            .find(|d| d.path == res.document_path)
            .unwrap();
        for c in ctx {
            let expected = match c.position.as_str() {
                "before" => res.chunk_index - 1,
                "after" => res.chunk_index + 1,
                other => panic!("position {other}"),
            };
            assert_eq!(c.chunk_index, expected);
            assert!(c.chunk_index < doc.chunk_count);
            assert!(!c.text.is_empty());
        }
        let before = ctx.iter().any(|c| c.position == "before");
        let after = ctx.iter().any(|c| c.position == "after");
        assert_eq!(before, res.chunk_index > 0);
        assert_eq!(after, res.chunk_index + 1 < doc.chunk_count);
        saw_both |= before && after;
    }
    assert!(saw_both, "some hit sits between two chunks");
    let r = ok(
        &e,
        json!({"query": "cache size", "mode": "fulltext", "includeContext": false}),
    );
    let v = serde_json::to_value(&r).unwrap();
    assert!(v["results"][0].get("context").is_none());
}

#[test]
fn snippets_stay_bounded_and_highlights_point_into_them() {
    let e = engine();
    let r = ok(
        &e,
        json!({"query": "cache size configuration", "mode": "fulltext", "limit": 50}),
    );
    for res in &r.results {
        let chars: Vec<char> = res.snippet.chars().collect();
        assert!(chars.len() <= 242, "{}", res.snippet);
        for h in &res.highlights {
            assert!(h.start < h.end && h.end <= chars.len());
        }
    }
    assert!(r.results.iter().any(|x| !x.highlights.is_empty()));
}

#[test]
fn a_misspelled_word_gets_suggestions_from_the_collection() {
    let e = engine();
    let r = ok(&e, json!({"query": "cahce size", "mode": "fulltext"}));
    assert!(
        r.suggestions.iter().any(|s| s == "cache size"),
        "{:?}",
        r.suggestions
    );
    assert!(r.suggestions.len() <= 3);
    let r = ok(&e, json!({"query": "устоновка", "mode": "fulltext"}));
    assert!(
        r.suggestions.iter().any(|s| s == "установка"),
        "{:?}",
        r.suggestions
    );
    let r = ok(&e, json!({"query": "cache size", "mode": "fulltext"}));
    assert!(r.suggestions.is_empty(), "{:?}", r.suggestions);
}

// ---- typos and the word being typed ----------------------------------------------------------

/// The first result's path and score for a fulltext query.
fn top(e: &Engine, query: &str) -> (String, f32) {
    let r = ok(e, json!({"query": query, "mode": "fulltext"}));
    let first = r
        .results
        .first()
        .unwrap_or_else(|| panic!("{query:?} found nothing"));
    (first.document_path.clone(), first.score)
}

#[test]
fn a_word_one_or_two_edits_off_still_finds_its_page_below_the_exact_word() {
    let e = engine();
    let (page, exact) = top(&e, "invalidation");
    assert_eq!(page, "en/caching.md");
    for typo in [
        "invalidaton",   // a letter left out
        "invallidation", // one too many
        "invalodation",  // one wrong
        "invaildation",  // two swapped
        "invaldaton",    // two left out
        "inavlidaton",   // two swapped, one left out
    ] {
        let (found, score) = top(&e, typo);
        assert_eq!(found, page, "{typo}");
        assert!(score < exact, "{typo}: {score} ≥ the exact word's {exact}");
    }
    // Russian: «устоновка» is one letter off «установка».
    let (found, _) = top(&e, "устоновка");
    assert_eq!(found, "ru/установка.md");
}

/// Regression (a suggestion at 100K documents): «virtul destructr» was spelt «virtues
/// destructive». Index terms are stems, and a typed word is also measured without up to its
/// last three letters (`configuratin` against `configur`), so «virtu» (of «virtues») and
/// «destruct» (of «destructive») were at distance 0, ahead of «virtual» and «destructor» one
/// edit away, however much more common those were. Leaving out a tail now costs an edit in
/// the order of candidates.
#[test]
fn a_typo_is_spelt_as_the_word_one_edit_away_not_a_stem_it_begins_with() {
    let bundle = common::bundle_of(
        [
            (
                "virtual.md",
                "# Virtual destructors\n\nA virtual destructor runs the destructor of the derived \
                 class. Declare the destructor virtual in the base class; a virtual function call \
                 through a base pointer reaches the derived class.\n",
            ),
            // Other pages that use the words: they are the commoner ones.
            (
                "functions.md",
                "# Virtual functions\n\nA virtual function is overridden.\n",
            ),
            (
                "objects.md",
                "# Object lifetime\n\nThe destructor runs at the end of scope.\n",
            ),
            (
                "bases.md",
                "# Base classes\n\nA virtual base class and its destructor.\n",
            ),
            (
                "virtues.md",
                "# Virtues\n\nThe virtues of testing are not destructive.\n",
            ),
        ],
        &["--no-embeddings"],
    );
    let e = Engine::from_bundle(&bundle, None).unwrap();
    let r = ok(&e, json!({"query": "virtul destructr", "mode": "fulltext"}));
    assert_eq!(
        r.suggestions.first().map(String::as_str),
        Some("virtual destructor"),
        "{:?}",
        r.suggestions
    );
    assert_eq!(r.results[0].document_path, "virtual.md");
}

/// Regression: a suggestion wrote each stem as its most frequent word, so «Handliang Errors»
/// was spelt «handle errors» (`handling` and `handle` are both the stem `handl`), and
/// «Riesponse Headers» «responses headers». Of the stem's commonest words, the one nearest the
/// word as typed is written now; a word still being typed is measured against each word's
/// beginning, so a prefix keeps the commonest.
#[test]
fn a_suggestion_writes_the_stems_word_nearest_the_typed_one() {
    let bundle = common::bundle_of(
        [
            (
                "errors.md",
                "# Handling errors\n\nHandling errors means returning a response with a status code.\n",
            ),
            ("a.md", "# Events\n\nHandle the event; handle it once.\n"),
            ("b.md", "# Files\n\nA file handle to handle reads.\n"),
            ("c.md", "# Sockets\n\nClose the handle.\n"),
        ],
        &["--no-embeddings"],
    );
    let e = Engine::from_bundle(&bundle, None).unwrap();
    let r = ok(&e, json!({"query": "handliang errors", "mode": "fulltext"}));
    assert_eq!(
        r.suggestions.first().map(String::as_str),
        Some("handling errors"),
        "{:?}",
        r.suggestions
    );
    assert_eq!(r.results[0].document_path, "errors.md");
    // Misspelt the other way, the commoner word is the nearer one.
    let r = ok(&e, json!({"query": "hanlde errors", "mode": "fulltext"}));
    assert_eq!(
        r.suggestions.first().map(String::as_str),
        Some("handle errors"),
        "{:?}",
        r.suggestions
    );
}

#[test]
fn highlights_mark_the_word_a_typo_matched() {
    let e = engine();
    let r = ok(&e, json!({"query": "databse", "mode": "fulltext"}));
    let first = &r.results[0];
    let chars: Vec<char> = first.snippet.chars().collect();
    let marked: Vec<String> = first
        .highlights
        .iter()
        .map(|h| {
            chars[h.start..h.end]
                .iter()
                .collect::<String>()
                .to_lowercase()
        })
        .collect();
    assert!(
        marked.iter().any(|w| w == "database"),
        "{marked:?} in {:?}",
        first.snippet
    );
}

#[test]
fn the_last_word_of_a_query_matches_as_a_prefix() {
    let e = engine();
    // "invalid" is no word of the fixtures; "Invalidation" begins with it.
    let (found, _) = top(&e, "cache invali");
    assert_eq!(found, "en/caching.md");
    let (found, _) = top(&e, "устан");
    assert_eq!(found, "ru/установка.md");
    // Two letters are enough to complete ("ca" → cache), one is not.
    let (found, _) = top(&e, "ca");
    assert_eq!(found, "en/caching.md");
    let r = ok(&e, json!({"query": "c", "mode": "fulltext"}));
    assert!(r.results.is_empty(), "{:?}", paths(&r));
}

#[test]
fn a_query_of_mostly_unknown_words_is_another_language_not_typos() {
    // Regression: an English question over Russian pages had each of its words "corrected"
    // to some Latin-script term of the pages (`points` → `pzpn`), and those matches, counted
    // as lexical evidence, pulled hybrid's cross-language nDCG@10 from 0.89 to 0.58.
    let e = engine();
    let r = ok(
        &e,
        json!({"query": "how many points did the panthers defense surrender?", "mode": "fulltext"}),
    );
    assert!(r.results.is_empty(), "{:?}", paths(&r));
    assert!(r.suggestions.is_empty(), "{:?}", r.suggestions);
    // One or two typos among known words are still typos, and so are two alone.
    let (found, _) = top(&e, "cahce invalidaton");
    assert_eq!(found, "en/caching.md");
    let r = ok(&e, json!({"query": "cahce sise", "mode": "fulltext"}));
    assert!(!r.results.is_empty());
}

// ---- fusion --------------------------------------------------------------------------------

#[test]
fn a_section_titled_with_every_query_word_beats_a_semantic_near_miss() {
    let bundle = common::bundle_of(
        [
            (
                "tokens.md",
                "# Reference\n\n## Token rotation\n\nSee the scheduler settings table below for the \
                 interval values and the audit log format used by the service.\n",
            ),
            (
                "keys.md",
                "# Security\n\n## Renewing credentials\n\nReplace your access keys and secrets \
                 periodically; renew every credential before it expires so clients keep working.\n",
            ),
        ],
        &[],
    );
    // The near miss counts however far it is (the floor is tested on its own).
    let e = Engine::from_bundle(&bundle, Some(common::model_files()))
        .unwrap()
        .calibrate(Calibration {
            match_floor: Some(0.0),
            ..Default::default()
        });
    let r = ok(&e, json!({"query": "token rotation", "rerank": false}));
    assert_eq!(r.results[0].document_path, "tokens.md", "{:#?}", r.results);
    // The near miss is the semantically closer text.
    let keys = r
        .results
        .iter()
        .find(|x| x.document_path == "keys.md")
        .unwrap();
    assert_eq!(keys.ranking_signals.lexical, 0.0);
}

// ---- rerank stage ----------------------------------------------------------------------------

fn model_alone() -> Calibration {
    Calibration {
        rerank_weight: Some(1.0),
        ..Default::default()
    }
}

#[test]
fn a_rerank_model_reorders_the_candidate_pool() {
    let e = engine()
        .with_reranker(Box::new(WordOverlap))
        .calibrate(model_alone());
    let body = json!({"query": "zebracorn cache size", "includeContext": false});
    let r = ok(&e, body);
    assert!(!r.fallback_applied);
    assert!(r.degraded_reason.is_none());
    assert_eq!(r.applied_strategy, "bm25_plus_vector_rerank_docs_only");
    for res in &r.results {
        let p = res
            .ranking_signals
            .rerank
            .expect("every reranked result is scored");
        assert!(p > 0.0 && p < 1.0);
    }
    // Ordered by the model: non-increasing rerank probability, and scores follow.
    assert!(r
        .results
        .windows(2)
        .all(|w| w[0].ranking_signals.rerank >= w[1].ranking_signals.rerank));
    assert!(r.results.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(r.timings.rerank_ms > 0.0);
}

#[test]
fn the_rerank_weight_blends_model_and_fused_scores() {
    // With weight 0 a constant model leaves the fused order untouched ...
    let fused_only = Calibration {
        rerank_weight: Some(0.0),
        ..Default::default()
    };
    let e = engine()
        .with_reranker(Box::new(Constant))
        .calibrate(fused_only);
    let body = json!({"query": "cache size install", "limit": 20});
    let r = ok(&e, body.clone());
    assert!(!r.fallback_applied);
    let plain = ok(
        &engine(),
        json!({"query": "cache size install", "limit": 20, "rerank": false}),
    );
    let order = |r: &SearchResponse| -> Vec<(String, u32)> {
        r.results
            .iter()
            .map(|x| (x.document_path.clone(), x.chunk_index))
            .collect()
    };
    assert_eq!(order(&r), order(&plain));
    // ... and every blend keeps scores non-increasing and the model's signal reported.
    for w in [0.25, 0.5, 0.75] {
        let e = engine()
            .with_reranker(Box::new(WordOverlap))
            .calibrate(Calibration {
                rerank_weight: Some(w),
                ..Default::default()
            });
        let r = ok(&e, body.clone());
        assert!(
            r.results.windows(2).all(|x| x[0].score >= x[1].score),
            "{w}"
        );
        assert!(r.results.iter().all(|x| x.ranking_signals.rerank.is_some()));
    }
}

/// Word overlap again, shipped with a calibrated blend weight (as a manifest's `blendWeight`).
#[derive(Debug)]
struct Calibrated(f32);

impl Rerank for Calibrated {
    fn score(&self, query: &str, passage: &str) -> docloupe::Result<f32> {
        WordOverlap.score(query, passage)
    }

    fn blend_weight(&self) -> Option<f32> {
        Some(self.0)
    }
}

#[test]
fn a_models_calibrated_weight_applies_unless_the_host_sets_one() {
    let body = json!({"query": "cache size install windows", "limit": 20});
    let order = |r: &SearchResponse| -> Vec<(String, u32)> {
        r.results
            .iter()
            .map(|x| (x.document_path.clone(), x.chunk_index))
            .collect()
    };
    let fused = order(&ok(
        &engine(),
        json!({"query": "cache size install windows", "limit": 20, "rerank": false}),
    ));
    let by_model = order(&ok(
        &engine()
            .with_reranker(Box::new(WordOverlap))
            .calibrate(model_alone()),
        body.clone(),
    ));
    assert_ne!(fused, by_model, "the test needs a model that reorders");
    // Calibrated to 0: the model is scored and reported but the fused order stands.
    let r = ok(
        &engine().with_reranker(Box::new(Calibrated(0.0))),
        body.clone(),
    );
    assert_eq!(order(&r), fused);
    assert!(r.results.iter().all(|x| x.ranking_signals.rerank.is_some()));
    // The host's weight wins over the model's.
    let r = ok(
        &engine()
            .with_reranker(Box::new(Calibrated(0.0)))
            .calibrate(model_alone()),
        body,
    );
    assert_eq!(order(&r), by_model);
}

#[test]
fn while_the_models_load_hybrid_and_semantic_answer_lexically_and_say_so() {
    let bytes = common::fixture_bundle();
    let loading = docloupe::Engine::lexical(bytes)
        .unwrap()
        .with_options(EngineOptions {
            lexical_fallback: Some(docloupe::LexicalFallback::ModelsLoading),
            ..Default::default()
        });
    let lexical = ok(
        &loading,
        json!({"query": "cache size", "mode": "fulltext", "includeContext": false}),
    );
    assert!(!lexical.fallback_applied);
    for mode in ["hybrid", "semantic"] {
        let r = ok(
            &loading,
            json!({"query": "cache size", "mode": mode, "includeContext": false}),
        );
        assert!(r.fallback_applied, "{mode}");
        assert_eq!(r.degraded_reason.as_deref(), Some("models_loading"));
        // The strategy that ran (issue 25 #5), not the one asked for.
        assert_eq!(r.applied_strategy, "bm25_docs_only", "{mode}");
        assert_eq!(r.results, lexical.results, "{mode}: the lexical ranking");
        assert!(r.results.iter().all(|x| x.ranking_signals.rerank.is_none()));
    }
    // Without the host's word, a missing model is still a refusal (the contract's error).
    let plain = docloupe::Engine::lexical(bytes).unwrap();
    let e = plain.search_json(r#"{"query": "cache size"}"#).unwrap_err();
    assert_eq!(e.error_code, ErrorCode::DocsRerankingUnavailable);
    // And once the model is there, the flag changes nothing.
    let r = ok(
        &engine().with_options(EngineOptions {
            lexical_fallback: Some(docloupe::LexicalFallback::ModelsLoading),
            ..Default::default()
        }),
        json!({"query": "cache size", "rerank": false}),
    );
    assert!(!r.fallback_applied);
}

#[test]
fn a_host_without_the_models_answers_hybrid_and_semantic_lexically_and_says_why() {
    let bytes = common::fixture_bundle();
    let edge = docloupe::Engine::lexical(bytes)
        .unwrap()
        .with_options(EngineOptions {
            lexical_fallback: Some(docloupe::LexicalFallback::ModelsUnavailable),
            ..Default::default()
        });
    let lexical = ok(
        &edge,
        json!({"query": "cache size", "mode": "fulltext", "includeContext": false}),
    );
    assert!(!lexical.fallback_applied);
    assert_eq!(lexical.degraded_reason, None);
    for mode in ["hybrid", "semantic"] {
        let r = ok(
            &edge,
            json!({"query": "cache size", "mode": mode, "includeContext": false}),
        );
        assert!(r.fallback_applied, "{mode}");
        assert_eq!(r.degraded_reason.as_deref(), Some("models_unavailable"));
        assert_eq!(r.applied_strategy, "bm25_docs_only", "{mode}");
        assert_eq!(r.results, lexical.results, "{mode}: the lexical ranking");
    }
    for f in [
        docloupe::LexicalFallback::ModelsLoading,
        docloupe::LexicalFallback::ModelsUnavailable,
    ] {
        assert_eq!(docloupe::LexicalFallback::from_reason(f.reason()), Some(f));
    }
    assert_eq!(docloupe::LexicalFallback::from_reason("loading"), None);
}

#[test]
fn candidates_beyond_the_pool_follow_the_reranked_ones() {
    let e = engine().with_reranker(Box::new(WordOverlap));
    let r = ok(
        &e,
        json!({"query": "cache size install windows", "candidateLimit": 2,
                          "limit": 6, "mode": "hybrid"}),
    );
    assert!(r.results.len() > 2);
    assert!(r.results[..2]
        .iter()
        .all(|x| x.ranking_signals.rerank.is_some()));
    assert!(r.results[2..]
        .iter()
        .all(|x| x.ranking_signals.rerank.is_none()));
    assert!(r.results.windows(2).all(|w| w[0].score >= w[1].score));
    // One 0..1 scale (issue 25 #4): a reranked result scores the model's probability (the
    // model alone decides here), the rest their fused scores scaled under the pool's lowest.
    for x in &r.results[..2] {
        assert_eq!(Some(x.score), x.ranking_signals.rerank, "{x:?}");
    }
    assert!(r.results.iter().all(|x| (0.0..=1.0).contains(&x.score)));
}

#[test]
fn equal_rerank_scores_break_ties_by_path_then_chunk_index() {
    let e = engine()
        .with_reranker(Box::new(Constant))
        .calibrate(model_alone());
    let r = ok(
        &e,
        json!({"query": "cache size zebracorn install", "limit": 20, "candidateLimit": 100}),
    );
    assert!(!r.fallback_applied);
    assert!(r.results.len() > 3);
    let keys: Vec<(String, u32)> = r
        .results
        .iter()
        .map(|x| (x.document_path.clone(), x.chunk_index))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        keys, sorted,
        "all scores equal → documentPath, then chunkIndex"
    );
}

#[test]
fn a_failing_a_panicking_or_a_slow_model_falls_back_to_the_fused_order() {
    let fused = ok(&engine(), json!({"query": "cache size", "rerank": false}));
    let cases: Vec<(Engine, &str)> = vec![
        (engine().without_second_stage(), "rerank_model_unavailable"),
        (
            engine().with_reranker(Box::new(Failing::default())),
            "rerank_failed",
        ),
        (engine().with_reranker(Box::new(Panicking)), "rerank_failed"),
        (
            engine()
                .with_reranker(Box::new(WordOverlap))
                .with_options(EngineOptions {
                    rerank_budget_ms: 0,
                    ..Default::default()
                }),
            "rerank_budget_exceeded",
        ),
    ];
    for (e, reason) in cases {
        let r = ok(&e, json!({"query": "cache size"}));
        assert!(r.fallback_applied, "{reason}");
        assert_eq!(r.degraded_reason.as_deref(), Some(reason));
        assert_eq!(r.applied_strategy, "bm25_plus_vector_rerank_docs_only");
        assert!(r.results.iter().all(|x| x.ranking_signals.rerank.is_none()));
        // Same shape and the hybrid order.
        let mut a = r.clone();
        a.applied_strategy = fused.applied_strategy.clone();
        a.fallback_applied = false;
        a.degraded_reason = None;
        assert_eq!(stable_json(a), stable_json(fused.clone()), "{reason}");
    }
}

#[test]
fn error_on_total_failure_answers_docs_reranking_unavailable() {
    let strict = EngineOptions {
        fallback_policy: FallbackPolicy::ErrorOnTotalFailure,
        ..Default::default()
    };
    let cases: Vec<(Engine, &str)> = vec![
        (
            engine().without_second_stage().with_options(strict.clone()),
            "RerankModelUnavailable",
        ),
        (
            engine()
                .with_reranker(Box::new(Failing::default()))
                .with_options(strict.clone()),
            "RerankFailed",
        ),
        (
            engine()
                .with_reranker(Box::new(WordOverlap))
                .with_options(EngineOptions {
                    rerank_budget_ms: 0,
                    ..strict.clone()
                }),
            "RerankBudgetExceeded",
        ),
    ];
    for (e, reason) in cases {
        let x = err(&e, json!({"query": "cache size"}));
        assert_eq!(x.error_code, ErrorCode::DocsRerankingUnavailable);
        assert_eq!(x.details.unwrap()["reason"], reason);
        // Requests that do not rerank are unaffected by the policy.
        ok(&e, json!({"query": "cache size", "rerank": false}));
    }
}

#[test]
fn a_hundred_requests_against_a_failing_model_all_fall_back_validly() {
    let failing = Failing::default();
    let e = engine().with_reranker(Box::new(failing));
    let plain = engine();
    let queries = fixture_queries(&e);
    for q in &queries {
        let r = ok(&e, json!({"query": q}));
        let hybrid = ok(&plain, json!({"query": q, "rerank": false}));
        if hybrid.results.is_empty() {
            // Nothing matches ("when" is a stop word, and nothing is close enough in meaning):
            // nothing to rerank, so nothing fails.
            assert!(r.results.is_empty() && !r.fallback_applied, "{q}");
            continue;
        }
        assert!(r.fallback_applied, "{q}");
        assert_eq!(r.degraded_reason.as_deref(), Some("rerank_failed"), "{q}");
        let order = |r: &SearchResponse| -> Vec<(String, u32)> {
            r.results
                .iter()
                .map(|x| (x.document_path.clone(), x.chunk_index))
                .collect()
        };
        assert_eq!(order(&r), order(&hybrid), "{q}: hybrid order");
    }
}

#[test]
fn the_same_requests_give_the_same_json_run_after_run() {
    let run = || {
        let e = engine().with_reranker(Box::new(WordOverlap));
        fixture_queries(&e)
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let mode = ["hybrid", "fulltext", "semantic"][i % 3];
                stable_json(ok(&e, json!({"query": q, "mode": mode, "limit": 20})))
            })
            .collect::<Vec<String>>()
    };
    let first = run();
    let second = run();
    assert_eq!(first.len(), 100);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a, b);
    }
}

#[test]
fn an_embedding_model_is_not_accepted_as_a_reranker() {
    let m = common::model_files();
    let files = docloupe::RerankerFiles {
        id: "not-a-cross-encoder".into(),
        onnx: m.onnx.clone(),
        tokenizer: m.tokenizer.clone(),
        max_tokens: 128,
        blend_weight: None,
    };
    let e = docloupe::CrossEncoder::new(&files).unwrap_err();
    assert!(matches!(e, docloupe::Error::Model(_)), "{e}");
    assert!(e.to_string().contains("one logit"), "{e}");
    let garbage = docloupe::RerankerFiles {
        onnx: b"not onnx".to_vec(),
        ..files
    };
    assert!(matches!(
        docloupe::CrossEncoder::new(&garbage),
        Err(docloupe::Error::Model(_))
    ));
}

// ---- batch mode ------------------------------------------------------------------------------

#[test]
fn jsonl_batch_mode_answers_each_line_in_order() {
    use std::io::Write;
    let (_tmp, bundle) = common::fixture_bundle_file();
    let mut child = common::docloupe_search(&bundle)
        .arg("--jsonl")
        .args(["--models", common::model_dir().to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = [
        r#"{"query": "cache size", "mode": "fulltext"}"#,
        r#"{"query": ""}"#,
        "",
        r#"{"query": "how can I speed up slow builds", "rerank": false}"#,
        "not json",
        r#"{"query": "установка", "limit": 1, "mode": "fulltext"}"#,
    ]
    .join("\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        5,
        "blank lines are skipped, every other line answered"
    );
    assert_eq!(lines[0]["results"][0]["documentPath"], "en/caching.md");
    assert_eq!(lines[1]["errorCode"], "SEARCH_QUERY_EMPTY");
    assert_eq!(lines[2]["results"][0]["anchor"], "faster-compilation");
    assert_eq!(lines[3]["errorCode"], "INVALID_REQUEST");
    assert_eq!(lines[4]["results"].as_array().unwrap().len(), 1);
    // Batch answers equal the library's.
    let e = engine();
    let lib = stable_json(ok(&e, json!({"query": "cache size", "mode": "fulltext"})));
    let mut cli: SearchResponse = serde_json::from_value(lines[0].clone()).unwrap();
    cli.timings = Timings::default();
    assert_eq!(serde_json::to_string(&cli).unwrap(), lib);
}

#[test]
fn the_cli_json_format_prints_the_error_object() {
    let (_tmp, bundle) = common::fixture_bundle_file();
    let out = common::docloupe_search(&bundle)
        .args(["--mode", "fulltext"])
        .args(["--format", "json", "--limit", "77", "cache"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // `--format json` is search_documents' shape, its error object included.
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], false);
    assert_eq!(v["error"]["code"], "INVALID_QUERY");
    assert_eq!(v["error"]["details"]["field"], "limit");
}

#[test]
fn requests_round_trip_through_their_json_form() {
    let req = SearchRequest::new("cache")
        .limit(5)
        .mode(Mode::Semantic)
        .rerank(false);
    let json = serde_json::to_string(&req).unwrap();
    assert_eq!(SearchRequest::from_json(&json).unwrap(), req);
}
