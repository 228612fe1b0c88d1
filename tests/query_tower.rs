//! Spec: the docs-tuned query tower `make models` installs beside MiniLM (issue 64) embeds
//! questions into the base model's passage space. It searches the bundles built with MiniLM as
//! they are, never embeds a passage, answers the same bits every time, and brings the page
//! that answers a reader's question into the top 3.

mod common;

use docloupe::embed::{QueryModel, QUERY_TOWER_FILE};
use docloupe::{Embedder, ModelFiles};
use serde_json::json;

fn tower() -> Embedder {
    let dir = common::model_dir();
    assert!(
        dir.join(QUERY_TOWER_FILE).is_file(),
        "{QUERY_TOWER_FILE} missing in {}: run `make models`",
        dir.display()
    );
    let files = ModelFiles::for_queries(&dir, QueryModel::Docs).unwrap();
    Embedder::new(&files).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn the_tower_stands_for_the_model_whose_passages_it_meets() {
    let (tower, base) = (tower(), common::embedder());
    assert!(tower.is_query_tower());
    assert!(!base.is_query_tower());
    // A bundle records the passage model's hashes; the tower carries them, so it is accepted.
    assert_eq!(tower.info().sha256, base.info().sha256);
    assert_eq!(tower.info().tokenizer_sha256, base.info().tokenizer_sha256);
    assert_eq!(tower.dims(), base.dims());
    // `base` picks the model itself.
    let files = ModelFiles::for_queries(&common::model_dir(), QueryModel::Base).unwrap();
    assert!(!Embedder::new(&files).unwrap().is_query_tower());
}

#[test]
fn the_tower_refuses_to_embed_a_passage() {
    let err = tower()
        .embed_passage("Tee-Object saves command output in a file.")
        .unwrap_err();
    assert!(err.to_string().contains("query tower"), "{err}");
}

#[test]
fn the_tower_is_tuned_deterministic_and_near_the_base_model() {
    let (tower, base) = (tower(), common::embedder());
    let q = "show output on screen and write it to a file at the same time";
    let (t, b) = (tower.embed_query(q).unwrap(), base.embed_query(q).unwrap());
    assert_eq!(
        t,
        tower.embed(q).unwrap(),
        "a kept vector has a new run's bits"
    );
    let c = cosine(&t, &b);
    // Tuned, not a copy; still in the same space (the tuning starts from the base model).
    assert!(
        c < 0.999 && c > 0.5,
        "cosine to the base model's vector {c}"
    );
    assert!((cosine(&t, &t) - 1.0).abs() < 1e-5);
}

/// Pages written for this test (not from any evaluated docs set), each answering one
/// question asked in a reader's words, beside pages that share the questions' words.
const PAGES: [(&str, &str); 8] = [
    (
        "cmdlets/Tee-Object.md",
        "# Tee-Object\n\nSaves command output in a file or variable and also sends it down the \
         pipeline. If Tee-Object is the last command in the pipeline, the command output is \
         displayed at the prompt.\n\n## Parameters\n\n`-FilePath` names the file where the \
         object is saved. `-Append` adds the output to the end of the file.\n",
    ),
    (
        "cmdlets/Out-File.md",
        "# Out-File\n\nSends output to a file. The output is not displayed: the cmdlet writes \
         what the pipeline gives it, formatted as the terminal would show it, into the file \
         and nothing goes on to the next command.\n",
    ),
    (
        "cmdlets/Get-ChildItem.md",
        "# Get-ChildItem\n\nGets the items and child items in one or more specified locations. \
         With `-Recurse` it descends into every container below the location; `-Depth` limits \
         how far.\n",
    ),
    (
        "cpp/final-specifier.md",
        "# final specifier\n\nUse the `final` keyword to designate virtual functions that \
         can't be overridden, or classes that can't be derived from. A compiler error results \
         when a type derives from a class marked `final`.\n",
    ),
    (
        "cpp/virtual-functions.md",
        "# Virtual functions\n\nA virtual function is a member function that you expect to be \
         redefined in derived classes. When you refer to a derived class object through a \
         pointer or a reference to the base class, you call the derived class's version.\n",
    ),
    (
        "guide/component-events.md",
        "# Component events\n\nA component can emit custom events in its template with \
         `$emit('someEvent')`, and the parent listens to them with `v-on` (`@some-event`). \
         Declare the events a component emits with `defineEmits`.\n",
    ),
    (
        "guide/props.md",
        "# Props\n\nProps pass data from a parent component down to a child. Declare them with \
         `defineProps`; a child must not mutate a prop it receives.\n",
    ),
    (
        "book/lifetimes.md",
        "# Validating references with lifetimes\n\nEvery reference has a lifetime, the scope \
         for which it is valid. The borrow checker compares scopes and rejects a program whose \
         reference outlives the data it refers to: error E0597, `x` does not live long \
         enough.\n",
    ),
];

#[test]
fn questions_in_a_readers_words_find_their_page_in_the_top_3() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("tower.bundle");
    std::fs::write(&bundle, common::bundle_of(PAGES, &["--model", "minilm"])).unwrap();
    let asked = [
        (
            "show output on screen and write it to a file at the same time",
            "cmdlets/Tee-Object.md",
        ),
        (
            "prevent a class from being inherited",
            "cpp/final-specifier.md",
        ),
        (
            "how does a child component tell its parent that it was clicked",
            "guide/component-events.md",
        ),
        (
            "list every file in a folder and all its subfolders",
            "cmdlets/Get-ChildItem.md",
        ),
        (
            "compiler says my borrowed variable is dropped while still in use",
            "book/lifetimes.md",
        ),
    ];
    // Hybrid, the default mode. Semantic alone is not asserted: here the tower's cosines run
    // about 0.03 below the base model's, and "prevent a class from being inherited" meets its
    // answer at 0.223 (the base model: 0.265), under MiniLM's match floor (0.23). Over real
    // held-out questions the answers' 2.5th percentile is the same for both, 0.237
    // (`tests/bench/floors.py --tower`), so the floor stays one.
    let mode = "hybrid";
    for (question, page) in asked {
        let answer = ask(&bundle, question, mode);
        let top: Vec<&str> = answer["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"))
            .iter()
            .take(3)
            .map(|r| r["documentPath"].as_str().unwrap())
            .collect();
        assert!(
            top.iter().any(|p| p.ends_with(page)),
            "{mode}: {question:?} → {top:?}, want {page}"
        );
        assert_eq!(answer["fallbackApplied"], false, "{answer}");
    }
}

/// `docloupe search --jsonl`, the questions embedded by the tower.
fn ask(bundle: &std::path::Path, query: &str, mode: &str) -> serde_json::Value {
    use std::io::Write;
    let mut child = common::docloupe_search(bundle)
        .args(["--jsonl", "--query-model", "docs"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let request = json!({"query": query, "mode": mode, "limit": 5, "maxChunksPerDocument": 1});
    writeln!(child.stdin.take().unwrap(), "{request}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).expect("one contract answer")
}

#[test]
fn a_bad_query_model_setting_is_a_clear_error() {
    let (_tmp, bundle) = common::fixture_bundle_file();
    let out = common::docloupe_search(&bundle)
        .args(["--mode", "hybrid", "cache"])
        .env("DOCLOUPE_QUERY_MODEL", "tuned-ish")
        .env("DOCLOUPE_DAEMON", "off")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("DOCLOUPE_QUERY_MODEL"), "{err}");
}

#[test]
fn the_builder_refuses_a_query_tower_in_the_models_place() {
    let dir = common::model_dir();
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir(&models).unwrap();
    std::fs::copy(dir.join("manifest.json"), models.join("manifest.json")).unwrap();
    std::fs::copy(dir.join("tokenizer.json"), models.join("tokenizer.json")).unwrap();
    std::fs::copy(dir.join(QUERY_TOWER_FILE), models.join("model.int8.onnx")).unwrap();
    let out = std::process::Command::new(common::index_builder_bin())
        .arg("build")
        .arg(common::fixtures())
        .arg("--out")
        .arg(tmp.path().join("x.bundle"))
        .arg("--model")
        .arg(&models)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("query tower"), "{err}");
    assert!(!tmp.path().join("x.bundle").exists());
}
