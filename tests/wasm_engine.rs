//! Spec of the wasm bindings (`src/wasm.rs`), compiled to wasm32 and run by
//! wasm-bindgen-test in Node and in headless Chromium (`tests/wasm/run.sh`); empty natively.
//! The lexical build is what runs here; the full build (models) is covered through the JS
//! API in `tests/wasm/*.test.mjs`, in Node and in Chromium.
#![cfg(target_arch = "wasm32")]

use docloupe::wasm::{build_kind, take_panic, WasmEngine};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

/// Frozen bundle of `tests/fixtures/docs` in the current format, with vectors (see
/// tests/format_compat.rs).
const BUNDLE: &[u8] = include_bytes!("fixtures/bundles/v10-coded.bundle");
/// The format before it, which every build reads.
const V9: &[u8] = include_bytes!("fixtures/bundles/v9-coded.bundle");
/// The same in format 8, which no build reads any longer.
const V8: &[u8] = include_bytes!("fixtures/bundles/v8-coded.bundle");
/// The current format with some documents restricted to groups of readers.
const ACCESS: &[u8] = include_bytes!("fixtures/bundles/v10-access.bundle");

fn engine() -> WasmEngine {
    WasmEngine::new(BUNDLE).unwrap_or_else(|e| panic!("the frozen bundle loads: {e:?}"))
}

fn js(v: &Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap()
}

fn value(v: JsValue) -> Value {
    serde_json::from_str(&String::from(js_sys::JSON::stringify(&v).unwrap())).unwrap()
}

#[wasm_bindgen_test]
fn this_is_the_lexical_build_and_it_reads_the_bundle() {
    assert_eq!(build_kind(), "lexical");
    let info = value(engine().info());
    assert_eq!(info["documents"], 7);
    assert_eq!(info["projectId"], "docloupe/fixtures");
    assert_eq!(info["vectors"], 14);
    assert_eq!(info["embedding"], "all-MiniLM-L6-v2-int8wo");
    assert_eq!(info["semanticReady"], false);
}

#[wasm_bindgen_test]
fn fulltext_answers_the_contract_in_russian_and_english() {
    let e = engine();
    let ru = value(e.search(js(&json!({"query": "размер кэша", "mode": "fulltext"}))));
    assert_eq!(ru["results"][0]["documentPath"], "ru/документация.md");
    assert_eq!(ru["appliedStrategy"], "bm25_docs_only");
    assert_eq!(ru["fallbackApplied"], false);
    let en = value(e.search(js(&json!({"query": "cache size", "mode": "fulltext"}))));
    assert_eq!(en["results"][0]["documentPath"], "en/caching.md");
    assert!(en["results"][0]["highlights"].as_array().unwrap().len() >= 2);
}

/// The `timings` object is the one part that differs from call to call.
fn strip_timings(line: &str) -> String {
    match line.find(",\"timings\":{") {
        Some(start) => {
            let end = start + line[start..].find('}').unwrap() + 1;
            format!("{}{}", &line[..start], &line[end..])
        }
        None => line.to_owned(),
    }
}

/// The object `search` returns is `JSON.parse` of the bytes `searchJson` (and native) print:
/// every f32 the same JS number (not a widened f64), every field in the same order.
#[wasm_bindgen_test]
fn the_object_surface_is_the_parsed_json_surface() {
    let e = engine();
    for request in [
        json!({"query": "install update", "mode": "fulltext", "limit": 5, "includeContext": true}),
        json!({"query": "размер кэша", "mode": "fulltext", "filters": {"documentTypes": ["md"]}}),
        json!({"query": "cache", "limit": 99}),
    ] {
        let text = e.search_json(&request.to_string());
        let parsed = js_sys::JSON::parse(&text).unwrap();
        let stringify = |v: &JsValue| String::from(js_sys::JSON::stringify(v).unwrap());
        let object = e.search(js(&request));
        assert_eq!(
            strip_timings(&stringify(&object)),
            strip_timings(&stringify(&parsed))
        );
    }
}

#[wasm_bindgen_test]
fn bad_requests_are_returned_as_error_objects_never_thrown() {
    let e = engine();
    let cases = [
        (JsValue::from(42), "INVALID_REQUEST", ""),
        (JsValue::NULL, "INVALID_REQUEST", ""),
        (JsValue::UNDEFINED, "INVALID_REQUEST", ""),
        (js_sys::BigInt::from(7u64).into(), "INVALID_REQUEST", ""),
        (js(&json!(["cache"])), "INVALID_REQUEST", ""),
        (js(&json!({"query": 7})), "INVALID_REQUEST", "query"),
        (
            js(&json!({"query": "a", "limit": 51})),
            "INVALID_REQUEST",
            "limit",
        ),
        (
            js(&json!({"query": "a", "mode": "fuzzy"})),
            "INVALID_REQUEST",
            "mode",
        ),
        (
            js(&json!({"query": "a", "filters": {"dateTo": "May"}})),
            "INVALID_REQUEST",
            "filters.dateTo",
        ),
        (js(&json!({"query": "   "})), "SEARCH_QUERY_EMPTY", "query"),
        (
            js(&json!({"query": "x".repeat(501)})),
            "INVALID_REQUEST",
            "query",
        ),
    ];
    for (request, code, field) in cases {
        let r = value(e.search(request));
        assert_eq!(r["errorCode"], code, "{r}");
        assert_eq!(r["details"]["field"], field, "{r}");
        assert!(r["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let r: Value = serde_json::from_str(&e.search_json("{\"query\": ")).unwrap();
    assert_eq!(r["errorCode"], "INVALID_REQUEST");
    // The lexical build has no models: semantic is the contract's refusal.
    let r = value(e.search(js(&json!({"query": "cache", "mode": "semantic"}))));
    assert_eq!(r["errorCode"], "DOCS_COLLECTION_UNAVAILABLE");
    assert_eq!(take_panic(), None);
}

#[wasm_bindgen_test]
fn while_models_load_hybrid_is_answered_lexically_and_flagged() {
    let mut e = engine();
    e.set_models_loading(true);
    let r = value(e.search(js(&json!({"query": "cache size"}))));
    assert_eq!(r["fallbackApplied"], true);
    assert_eq!(r["degradedReason"], "models_loading");
    assert_eq!(r["results"][0]["documentPath"], "en/caching.md");
    e.set_models_loading(false);
    let r = value(e.search(js(&json!({"query": "cache size"}))));
    assert_eq!(r["errorCode"], "DOCS_RERANKING_UNAVAILABLE");
    // A host that never loads them (the edge Worker) says so instead.
    e.set_lexical_fallback(Some("models_unavailable".into()))
        .unwrap();
    let r = value(e.search(js(&json!({"query": "cache size", "mode": "semantic"}))));
    assert_eq!(r["degradedReason"], "models_unavailable");
    assert_eq!(r["results"][0]["documentPath"], "en/caching.md");
    let err = e.set_lexical_fallback(Some("later".into())).unwrap_err();
    assert_eq!(value(err)["errorCode"], "INVALID_REQUEST");
    e.set_lexical_fallback(None).unwrap();
    let r = value(e.search(js(&json!({"query": "cache size"}))));
    assert_eq!(r["errorCode"], "DOCS_RERANKING_UNAVAILABLE");
}

#[wasm_bindgen_test]
fn corrupt_truncated_and_foreign_bundles_are_typed_errors() {
    let mut damaged: Vec<Vec<u8>> = vec![Vec::new(), b"PK\x03\x04 not a bundle".to_vec()];
    damaged.extend((0..BUNDLE.len()).step_by(97).map(|n| BUNDLE[..n].to_vec()));
    for at in [8, 40, BUNDLE.len() / 2, BUNDLE.len() - 1] {
        let mut b = BUNDLE.to_vec();
        b[at] ^= 0x5a;
        damaged.push(b);
    }
    for bytes in damaged {
        let err = match WasmEngine::new(&bytes) {
            Ok(_) => panic!("{} damaged bytes were accepted", bytes.len()),
            Err(e) => value(e),
        };
        assert_eq!(err["errorCode"], "DOCS_COLLECTION_UNAVAILABLE", "{err}");
        assert!(err["details"]["reason"].is_string(), "{err}");
    }
}

/// The lexical build reads what every build reads: the current format and the one before.
#[wasm_bindgen_test]
fn the_previous_format_loads_and_answers_as_the_current_one() {
    let search = |bytes: &[u8]| {
        let engine = WasmEngine::new(bytes).unwrap_or_else(|e| panic!("{e:?}"));
        let r = value(engine.search(js(&json!({"query": "cache size", "mode": "fulltext"}))));
        r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x["documentPath"].clone(), x["chunkIndex"].clone()))
            .collect::<Vec<_>>()
    };
    assert!(!search(V9).is_empty());
    assert_eq!(search(V9), search(BUNDLE));
}

/// A bundle that restricts documents to groups of readers is for `docloupe serve`: the wasm
/// builds cannot tell readers apart, so they refuse it with a typed error rather than show
/// or hide its documents.
#[wasm_bindgen_test]
fn a_bundle_with_restricted_documents_is_refused() {
    let err = match WasmEngine::new(ACCESS) {
        Ok(_) => panic!("the lexical build opened a bundle with restricted documents"),
        Err(e) => value(e),
    };
    assert_eq!(err["errorCode"], "DOCS_COLLECTION_UNAVAILABLE", "{err}");
    assert_eq!(err["details"]["reason"], "AccessRestricted", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("docloupe serve"),
        "{err}"
    );
}

/// Formats 1 to 8 are refused by every build, this one included: a typed error that names
/// the index-builder to rebuild with.
#[wasm_bindgen_test]
fn an_older_format_bundle_is_refused_with_a_rebuild_error() {
    let mut v1 = V9.to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    for (bytes, found) in [(V8, 8), (&v1[..], 1)] {
        let err = match WasmEngine::new(bytes) {
            Ok(_) => panic!("the lexical build read a format-{found} bundle"),
            Err(e) => value(e),
        };
        assert_eq!(err["errorCode"], "DOCS_COLLECTION_UNAVAILABLE", "{err}");
        assert_eq!(err["details"]["reason"], "OlderFormat", "{err}");
        assert_eq!(err["details"]["found"], found, "{err}");
        assert_eq!(err["details"]["oldest"], 9, "{err}");
        let rebuild = err["details"]["rebuildWith"].as_str().unwrap();
        assert!(rebuild.starts_with("index-builder "), "{err}");
        assert!(err["message"].as_str().unwrap().contains(rebuild), "{err}");
    }
}

/// A split bundle through the bindings: `openSplit(core)`, searches that name their files,
/// `addFile` for each, then the whole bundle's exact answer; bad files throw the error object.
#[wasm_bindgen_test]
fn a_split_bundle_names_its_files_and_then_answers_like_the_whole_one() {
    let bundle = docloupe::bundle::decode(BUNDLE).unwrap();
    let files = docloupe::bundle::split::split(&bundle, BUNDLE).unwrap();
    let file = |name: &str| &files.iter().find(|(n, _)| n == name).unwrap().1;
    let mut split = WasmEngine::open_split(file("core.bin")).unwrap();
    assert_eq!(value(split.info())["split"], true);
    let request = r#"{"query": "cache size", "mode": "fulltext"}"#;
    let mut rounds = 0;
    let answer = loop {
        let r: Value = serde_json::from_str(&split.search_json(request)).unwrap();
        if r["details"]["reason"] != "BundleFilesNeeded" {
            break r;
        }
        assert_eq!(r["errorCode"], "DOCS_COLLECTION_UNAVAILABLE");
        for name in r["details"]["files"].as_array().unwrap() {
            let name = name.as_str().unwrap();
            split.add_file(name, file(name)).unwrap();
        }
        rounds += 1;
    };
    assert_eq!(rounds, 2);
    let whole: Value = serde_json::from_str(&engine().search_json(request)).unwrap();
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("timings");
        v
    };
    assert_eq!(strip(answer), strip(whole));

    let bad = split
        .add_file("lex-0.bin", &file("lex-0.bin")[1..])
        .map(|_| ())
        .unwrap_err();
    assert_eq!(value(bad)["details"]["reason"], "ChecksumMismatch");
    // The first-paint build has no vector search: it names no vector files and takes none.
    assert_eq!(value(split.info())["vectorFiles"], serde_json::json!([]));
    let vectors = split
        .add_file("vec-0.bin", file("vec-0.bin"))
        .map(|_| ())
        .unwrap_err();
    assert_eq!(value(vectors)["details"]["reason"], "Corrupt");
    let foreign = WasmEngine::open_split(BUNDLE).map(|_| ()).unwrap_err();
    assert_eq!(value(foreign)["details"]["reason"], "NotABundle");
}

/// The first pass over compact codes (integer bounds, summed with wasm's SIMD in this build)
/// keeps what the f32 scan keeps, ties included, with and without a filter: 6,000 vectors,
/// each twice.
#[wasm_bindgen_test]
fn the_bounded_first_pass_keeps_what_the_scan_keeps() {
    use docloupe::index::vector::{QVec, VectorIndex, Vectors};
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    };
    let dims = 64;
    let mut unit = |offset: f32| {
        let v: Vec<f32> = (0..dims)
            .map(|d| next() + offset * (d % 3) as f32)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
    };
    let vectors: Vec<QVec> = (0..3_000)
        .flat_map(|_| {
            let v = unit(0.3);
            [v.clone(), v]
        })
        .enumerate()
        .map(|(c, v)| QVec::quantize(c as u32, &v).to_4bit())
        .collect();
    let VectorIndex::Coded(coded) = VectorIndex::build(Vectors::from_qvecs(vectors).unwrap(), 1)
    else {
        panic!("compact codes from one vector on")
    };
    let sparse = |c: u32| c % 20 == 3;
    for _ in 0..3 {
        let q = unit(0.0);
        for n in [1, 2, 3, 100, 1_600, 5_999] {
            let bounded = coded.first_pass_best(&q, n);
            assert_eq!(bounded.len(), n);
            assert_eq!(bounded, coded.first_pass_scanned(&q, n, None), "best {n}");
            assert_eq!(
                coded.first_pass_best_where(&q, n, &sparse),
                coded.first_pass_scanned(&q, n, Some(&sparse)),
                "best {n}, one in 20"
            );
        }
    }
}
