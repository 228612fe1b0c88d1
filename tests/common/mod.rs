//! Helpers shared by the spec tests: fixture paths, the real model, and running the real
//! `index-builder` binary (built beside the `docloupe` binary by `cargo test --workspace`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use docloupe::embed::default_model_dir;
use docloupe::{Embedder, ModelFiles};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs")
}

pub fn model_dir() -> PathBuf {
    let dir = default_model_dir();
    assert!(
        dir.join("manifest.json").is_file(),
        "embedding model missing at {}: run `make models`",
        dir.display()
    );
    dir
}

pub fn model_files() -> &'static ModelFiles {
    static FILES: OnceLock<ModelFiles> = OnceLock::new();
    FILES.get_or_init(|| ModelFiles::from_dir(&model_dir()).expect("model loads"))
}

pub fn embedder() -> Embedder {
    Embedder::new(model_files()).expect("model runs")
}

pub fn docloupe_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_docloupe"))
}

/// `docloupe search --bundle <bundle>`, ready for more arguments.
pub fn docloupe_search(bundle: &Path) -> Command {
    let mut cmd = Command::new(docloupe_bin());
    cmd.arg("search").arg("--bundle").arg(bundle);
    cmd
}

pub fn index_builder_bin() -> PathBuf {
    let p = docloupe_bin().with_file_name(format!("index-builder{}", std::env::consts::EXE_SUFFIX));
    assert!(
        p.is_file(),
        "{} is missing: run the tests with `cargo test --workspace`",
        p.display()
    );
    p
}

/// Runs `index-builder build <dir> --out <out> <extra...>` (with the test model unless `extra`
/// names one); panics with its stderr on failure.
pub fn build(dir: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let model = model_dir();
    let default_model = ["--model", model.to_str().unwrap()];
    let output = Command::new(index_builder_bin())
        .arg("build")
        .arg(dir)
        .arg("--out")
        .arg(out)
        .args(if extra.contains(&"--model") {
            &[][..]
        } else {
            &default_model[..]
        })
        .args(extra)
        .output()
        .expect("index-builder runs");
    assert!(
        output.status.success(),
        "index-builder failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("IngestResult JSON on stdout")
}

/// The `warnings` of a build's report (`IngestResult` JSON), one string each.
pub fn warnings(report: &serde_json::Value) -> Vec<String> {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect()
}

/// The bytes of a bundle [`build`] makes (with `extra`) from `pages`, each a path under the
/// collection's folder and its markdown, written into a temporary folder.
pub fn bundle_of<P: AsRef<Path>, T: AsRef<[u8]>>(
    pages: impl IntoIterator<Item = (P, T)>,
    extra: &[&str],
) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    for (path, text) in pages {
        let p = docs.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let out = tmp.path().join("pages.bundle");
    build(&docs, &out, extra);
    std::fs::read(&out).unwrap()
}

/// The fixture collection's bundle with embeddings, built once per test binary.
pub fn fixture_bundle() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("fixtures.bundle");
        build(&fixtures(), &out, &[]);
        std::fs::read(out).unwrap()
    })
}

/// The fixture collection built on the portable kernels: the same vectors, and so the same
/// scores to the last bit, on every x86-64 (the default kernels differ between CPU
/// generations in the last bits). Written to a temp file; keep the `TempDir` alive.
pub fn portable_fixture_bundle_file() -> (tempfile::TempDir, PathBuf) {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    let bytes = BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("fixtures.bundle");
        build(&fixtures(), &out, &["--kernels", "portable"]);
        std::fs::read(out).unwrap()
    });
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("p.bundle");
    std::fs::write(&bundle, bytes).unwrap();
    (tmp, bundle)
}

/// The fixture bundle written to a temp file, for tests that run the CLI on it. Keep the
/// `TempDir` alive while the path is used.
pub fn fixture_bundle_file() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("f.bundle");
    std::fs::write(&bundle, fixture_bundle()).unwrap();
    (tmp, bundle)
}

/// The contract's answer to `request` (a JSON object) over `bundle`, from `docloupe search
/// --jsonl`; a search that takes over 60 s fails the test rather than hanging it.
pub fn ask_jsonl(bundle: &Path, request: serde_json::Value) -> serde_json::Value {
    use std::io::Write;
    let mut child = docloupe_search(bundle)
        .arg("--jsonl")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{request}").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the search did not answer within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).expect("one contract answer")
}
