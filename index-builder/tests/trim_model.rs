//! `index-builder trim-model`: multilingual E5 cut down to Latin and Cyrillic gives every text in
//! those scripts the full model's tokens and vector, bit for bit, and is accepted by a bundle
//! built with the full model. Needs `make models`. Texts: the fixtures, the docs questions
//! and the tuning questions (English and Russian), and XQuAD-R's English and Russian queries
//! and passages when `../shared/eval/xquad-r` (or `$DOCLOUPE_SHARED/eval/xquad-r`) is there.

use std::path::{Path, PathBuf};

use docloupe::embed::unigram::CompactTokenizer;
use docloupe::embed::{models_root, Embedder, ModelFiles};
use index_builder::trim::{self, Script};

const SCRIPTS: [Script; 2] = [Script::Latin, Script::Cyrillic];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn e5_dir() -> PathBuf {
    let dir = models_root().join("multilingual-e5-small");
    assert!(
        dir.join("manifest.json").is_file(),
        "multilingual E5 missing at {}: run `make models`",
        dir.display()
    );
    dir
}

/// The full model trimmed to Latin and Cyrillic, written into a temporary directory.
fn trimmed() -> (tempfile::TempDir, trim::Trimmed) {
    let t = trim::trim_model(&e5_dir(), &SCRIPTS).expect("E5 trims");
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in &t.files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    (dir, t)
}

/// Whether every letter of `text` is Latin or Cyrillic.
fn in_script(text: &str) -> bool {
    text.chars().all(|c| {
        let mut buf = [0u8; 4];
        !c.is_alphabetic() || trim::keeps(c.encode_utf8(&mut buf), &SCRIPTS)
    })
}

fn jsonl(path: &Path, field: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v[field].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

/// (queries, passages) to compare on.
fn texts() -> (Vec<String>, Vec<String>) {
    let mut queries = jsonl(
        &root().join("tests/questions/docs-questions.jsonl"),
        "question",
    );
    let mut tuning: Vec<PathBuf> = std::fs::read_dir(root().join("prebuild/tuning/questions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    tuning.sort();
    for f in tuning {
        queries.extend(jsonl(&f, "question"));
    }
    let mut passages = Vec::new();
    let mut stack = vec![root().join("tests/fixtures/docs")];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            passages.extend(
                text.split("\n\n")
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    let shared = std::env::var_os("DOCLOUPE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared"));
    let xquad = shared.join("eval/xquad-r");
    if xquad.is_dir() {
        for lang in ["en", "ru"] {
            for kind in ["sentence", "paragraph"] {
                let dir = xquad.join(format!("{lang}-{kind}"));
                if kind == "sentence" {
                    queries.extend(jsonl(&dir.join("queries.jsonl"), "text"));
                }
                passages.extend(jsonl(&dir.join("corpus.jsonl"), "text"));
            }
        }
    } else {
        eprintln!("{} is not here: XQuAD-R left out", xquad.display());
    }
    // Other scripts' letters beside Latin and Cyrillic, here whether XQuAD-R is or not.
    queries.extend(
        [
            "кэш 東京都 cache",
            "Ελληνικά и cache",
            "مرحبا cache",
            "ภาษาไทย docs",
        ]
        .map(String::from),
    );
    (queries, passages)
}

#[test]
fn a_text_in_the_kept_scripts_gets_the_full_models_tokens() {
    let (_dir, t) = trimmed();
    let full: CompactTokenizer =
        serde_json::from_slice(&std::fs::read(e5_dir().join("tokenizer.json")).unwrap()).unwrap();
    let json = &t.files.iter().find(|f| f.0 == "tokenizer.json").unwrap().1;
    let cut: CompactTokenizer = serde_json::from_slice(json).unwrap();
    assert_eq!(full.get_vocab_size(true), t.of);
    assert_eq!(cut.get_vocab_size(true), t.old_ids.len());
    assert!(
        t.old_ids.len() < t.of * 2 / 3,
        "{} of {}",
        t.old_ids.len(),
        t.of
    );

    let (queries, passages) = texts();
    let (mut same, mut other) = (0, 0);
    for text in queries.iter().chain(&passages) {
        for prefixed in [format!("query: {text}"), format!("passage: {text}")] {
            let a = full.encode(prefixed.as_str(), true).unwrap();
            let b = cut.encode(prefixed.as_str(), true).unwrap();
            if in_script(text) {
                let back: Vec<u32> = b.get_ids().iter().map(|&i| t.old_ids[i as usize]).collect();
                assert_eq!(back, a.get_ids(), "{text:?}");
                assert_eq!(b.get_offsets(), a.get_offsets(), "{text:?}");
                same += 1;
            } else {
                // Another script's letters: unknown tokens where the full model had pieces.
                assert!(b.get_ids().contains(&3), "{text:?}: no <unk>");
                other += 1;
            }
        }
    }
    eprintln!("{same} texts in Latin or Cyrillic, the same tokens; {other} with other letters");
    // The committed texts alone (fixtures, docs and tuning questions): 6,084 with both prefixes;
    // 16,566 with XQuAD-R.
    assert!(same > 6_000, "{same}");
    assert!(
        other >= 8,
        "{other}: the four mixed-script texts, with both prefixes, at least"
    );
}

/// Embeds every `step`-th in-script query and passage with both models: the same bits.
fn same_vectors(step: usize) {
    let (dir, t) = trimmed();
    let full = Embedder::new(&ModelFiles::from_dir(&e5_dir()).unwrap()).unwrap();
    let cut = Embedder::new(&ModelFiles::from_dir(dir.path()).unwrap()).unwrap();
    // The identity a bundle records: the full model's files.
    assert_eq!(cut.info(), full.info());
    let onnx = &t.files.iter().find(|f| f.0 == "model.int8.onnx").unwrap().1;
    assert!(onnx.len() < 85 << 20, "{} bytes", onnx.len());

    let (queries, passages) = texts();
    let pick = |texts: Vec<String>| -> Vec<String> {
        texts
            .into_iter()
            .filter(|t| in_script(t))
            .step_by(step)
            .collect()
    };
    let (queries, passages) = (pick(queries), pick(passages));
    for q in &queries {
        assert_eq!(
            cut.embed_query(q).unwrap(),
            full.embed_query(q).unwrap(),
            "{q:?}"
        );
    }
    for p in &passages {
        assert_eq!(
            cut.embed_passage(p).unwrap(),
            full.embed_passage(p).unwrap(),
            "{p:?}"
        );
    }
    eprintln!(
        "{} queries and {} passages: the same vectors",
        queries.len(),
        passages.len()
    );

    // The trimmed ONNX file with the full tokenizer is neither model: its own hashes.
    let onnx = std::fs::read(dir.path().join("model.int8.onnx")).unwrap();
    let tokenizer = std::fs::read(e5_dir().join("tokenizer.json")).unwrap();
    let (sha, _) = docloupe::embed::identity(&onnx, &tokenizer);
    assert_ne!(sha, full.info().sha256);
    assert_eq!(sha, docloupe::embed::sha256_hex(&onnx));
}

/// A sample (a twentieth of the texts: the tokens test covers them all); `make test`.
#[test]
fn the_trimmed_model_gives_the_full_models_vectors() {
    same_vectors(20);
}

/// Every text (about 8,000 with XQuAD-R; minutes): `cargo test --release -p index-builder
/// --test trim_model -- --ignored`, for the figures in docs/measurements.
#[test]
#[ignore]
fn the_trimmed_model_gives_the_full_models_vectors_on_every_text() {
    same_vectors(1);
}

#[test]
fn a_bundle_built_with_the_full_model_is_searched_with_the_trimmed_one() {
    let (dir, _) = trimmed();
    let out = tempfile::tempdir().unwrap();
    let bundle = out.path().join("e5.bundle");
    let built = std::process::Command::new(env!("CARGO_BIN_EXE_index-builder"))
        .args(["build", "--model", "e5-multilingual", "--quiet", "--out"])
        .arg(&bundle)
        .arg(root().join("tests/fixtures/docs"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let bytes = std::fs::read(&bundle).unwrap();
    let answers = |model: &Path| -> Vec<String> {
        let embedder = Embedder::new(&ModelFiles::from_dir(model).unwrap()).unwrap();
        let engine = docloupe::Engine::with_embedder(&bytes, Some(embedder)).unwrap();
        [
            "как настроить кэш",
            "how do I configure the cache",
            "Docker deployment",
        ]
        .iter()
        .flat_map(|q| {
            ["hybrid", "semantic"].map(|mode| {
                let req = format!(r#"{{"query":{q:?},"mode":"{mode}"}}"#);
                let mut r = serde_json::to_value(engine.search_json(&req).unwrap()).unwrap();
                assert_eq!(r["fallbackApplied"], false, "{r}");
                assert!(!r["results"].as_array().unwrap().is_empty(), "{r}");
                r["timings"] = serde_json::Value::Null;
                r["searchTimeMs"] = serde_json::Value::Null;
                r.to_string()
            })
        })
        .collect()
    };
    assert_eq!(answers(dir.path()), answers(&e5_dir()));
}

#[test]
fn a_trimmed_or_altered_model_is_not_trimmed_again() {
    let (dir, _) = trimmed();
    let e = trim::trim_model(dir.path(), &SCRIPTS).err().unwrap();
    assert!(e.to_string().contains("already trimmed"), "{e}");

    let copy = tempfile::tempdir().unwrap();
    for f in ["manifest.json", "model.int8.onnx", "tokenizer.json"] {
        std::fs::copy(e5_dir().join(f), copy.path().join(f)).unwrap();
    }
    std::fs::write(copy.path().join("tokenizer.json"), b"{}").unwrap();
    let e = trim::trim_model(copy.path(), &SCRIPTS).err().unwrap();
    assert!(
        e.to_string().contains("not the file its manifest names"),
        "{e}"
    );

    // A bundle records the full model: building with the trimmed one is refused.
    let out = tempfile::tempdir().unwrap();
    let built = std::process::Command::new(env!("CARGO_BIN_EXE_index-builder"))
        .args(["build", "--quiet", "--out"])
        .arg(out.path().join("x.bundle"))
        .arg("--model")
        .arg(dir.path())
        .arg(root().join("tests/fixtures/docs"))
        .output()
        .unwrap();
    assert!(!built.status.success());
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(stderr.contains("trimmed to some scripts"), "{stderr}");

    // MiniLM's vocabulary is WordPiece, not SentencePiece.
    let minilm = models_root().join("all-MiniLM-L6-v2");
    let e = trim::trim_model(&minilm, &SCRIPTS).err().unwrap();
    assert!(e.to_string().contains("only a Unigram"), "{e}");
}
