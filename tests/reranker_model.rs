//! Spec: the project's own reranker (prebuild/reranker/model) is the file its card describes,
//! loads by default, and tells relevant passages from irrelevant ones in English and Russian.

mod common;

use docloupe::search::rerank::{
    default_reranker_dir, CrossEncoder, Rerank, RerankerFiles, DEFAULT_RERANKER_SHA256,
};
use docloupe::Engine;

fn model() -> CrossEncoder {
    let files = RerankerFiles::default_model()
        .expect("the committed reranker is the pinned one")
        .expect("a reranker is committed");
    CrossEncoder::new(&files).expect("reranker loads")
}

#[test]
fn the_committed_model_is_the_pinned_file() {
    let dir = default_reranker_dir();
    let bytes = std::fs::read(dir.join("model.int8.onnx")).unwrap();
    assert_eq!(docloupe::embed::sha256_hex(&bytes), DEFAULT_RERANKER_SHA256);
    assert!(bytes.len() <= 25 * 1024 * 1024, "{} bytes", bytes.len());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["sha256"]["model.int8.onnx"],
        DEFAULT_RERANKER_SHA256
    );
    assert_eq!(manifest["kind"], "cross-encoder");
}

#[test]
fn a_tampered_model_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = default_reranker_dir();
    for f in ["manifest.json", "model.int8.onnx", "tokenizer.json"] {
        std::fs::copy(dir.join(f), tmp.path().join(f)).unwrap();
    }
    let mut onnx = std::fs::read(tmp.path().join("model.int8.onnx")).unwrap();
    let last = onnx.len() - 1;
    onnx[last] ^= 1;
    std::fs::write(tmp.path().join("model.int8.onnx"), onnx).unwrap();
    let err = RerankerFiles::from_dir(tmp.path()).err().expect("refused");
    assert!(
        err.to_string().contains("does not match manifest.json"),
        "{err}"
    );
}

#[test]
fn relevant_passages_outscore_irrelevant_ones_in_english_and_russian() {
    let m = model();
    // (query, relevant passage, irrelevant passage on a neighbouring subject)
    let cases = [
        (
            "how do I set the cache size",
            "Caching\nThe cache keeps recent responses in memory. Set `cache.size` in the \
             configuration file to the number of megabytes it may use; the default is 256.",
            "Logging\nLog files rotate daily. Set `log.level` to debug to see every request \
             the server receives, or to warn to keep the files small.",
        ),
        (
            "install on windows",
            "Installation\nOn Windows, download the installer from the releases page, run it \
             and follow the wizard; the program is added to your PATH.",
            "Uninstalling\nTo remove the application, delete its folder and the configuration \
             directory in your home folder.",
        ),
        (
            "publish a scoped package",
            "Scope\nScoped packages can be published from the CLI: run npm publish \
             --access public for a public scoped package.",
            "Folders\nnpm puts various things on your computer: local installs go into \
             node_modules of the current package root.",
        ),
        (
            "как обновить сервис",
            "Установка > Обновление\nЧтобы обновить сервис, остановите его, установите новую \
             версию пакета и запустите снова; данные сохраняются.",
            "Установка > Требования\nНужна 64-битная операционная система и около 200 МБ \
             свободного места на диске.",
        ),
        (
            "настройка кэша",
            "Кэширование\nКэш хранит последние ответы в памяти. Размер кэша задаётся в файле \
             настроек параметром cache.size.",
            "Журналы\nЖурналы сервера хранятся в папке logs и ротируются ежедневно.",
        ),
    ];
    for (q, good, bad) in cases {
        let g = m.score(q, good).unwrap();
        let b = m.score(q, bad).unwrap();
        eprintln!("{q}: relevant {g:.3}, irrelevant {b:.3}");
        assert!(g > b, "{q}: relevant {g} <= irrelevant {b}");
    }
}

#[test]
fn the_engine_reranks_with_the_committed_model() {
    let e = Engine::from_bundle(common::fixture_bundle(), Some(common::model_files()))
        .unwrap()
        .with_reranker(Box::new(model()));
    let r = e
        .search_json(r#"{"query": "how big can the cache be", "includeContext": false}"#)
        .unwrap();
    assert!(!r.fallback_applied, "{:?}", r.degraded_reason);
    assert_eq!(r.applied_strategy, "bm25_plus_vector_rerank_docs_only");
    assert_eq!(r.results[0].document_path, "en/caching.md");
    assert!(r
        .results
        .iter()
        .all(|x| x.ranking_signals.rerank.is_some_and(|p| p > 0.0)));
}

#[test]
fn the_cli_reranks_by_default_with_no_model_installed() {
    let (_tmp, bundle) = common::fixture_bundle_file();
    // The contract's own JSON (`--jsonl`), which carries the ranking signals.
    let mut child = common::docloupe_search(&bundle)
        .args(["--jsonl", "--models", common::model_dir().to_str().unwrap()])
        .env_remove("DOCLOUPE_RERANKER_DIR")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"query\": \"cache size\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fallbackApplied"], false, "{v}");
    assert!(v["results"][0]["rankingSignals"]["rerank"].is_number());
}
