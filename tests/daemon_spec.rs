//! Spec (issue 60): a `docloupe search` that needs the embedding model asks the user's search
//! daemon, which keeps the model loaded, and answers exactly what the command would itself; a
//! bundle rebuilt on disk is read again.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// `docloupe search --bundle B QUERY` with the daemon on, in `cache`: its stdout without the
/// header line (which says how long it took).
fn search(
    cache: &Path,
    bundle: &Path,
    models: &Path,
    query: &str,
    daemon: bool,
) -> Result<String, String> {
    let out = common::docloupe_search(bundle)
        .arg("--models")
        .arg(models)
        .args(["-l", "3", query])
        .env("DOCLOUPE_CACHE", cache)
        .env("DOCLOUPE_DAEMON", if daemon { "on" } else { "off" })
        .env("DOCLOUPE_DAEMON_IDLE", "120")
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8(out.stdout).unwrap();
    Ok(text.lines().skip(1).collect::<Vec<_>>().join("\n"))
}

/// The daemon's process id, once it listens (at most 60 s).
fn daemon_pid(cache: &Path) -> u32 {
    let run = cache.join("run");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(pid) = std::fs::read_to_string(run.join("search.pid")) {
            if run.join("search.sock").exists() {
                return pid.trim().parse().unwrap();
            }
        }
        assert!(Instant::now() < deadline, "no daemon started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops the daemon this test started, by its process id.
struct Stop(u32);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.to_string()).status();
    }
}

#[test]
fn the_daemon_answers_as_the_command_would_and_reads_a_rebuilt_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    // A model of the test's own: its file goes away below, so that only a loaded model can
    // answer.
    let models: PathBuf = tmp.path().join("model");
    std::fs::create_dir(&models).unwrap();
    for entry in std::fs::read_dir(common::model_dir()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), models.join(entry.file_name())).unwrap();
    }
    let docs = tmp.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    for entry in std::fs::read_dir(common::fixtures().join("en")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), docs.join(entry.file_name())).unwrap();
    }
    let bundle = tmp.path().join("docs.bundle");
    common::build(
        &docs,
        &bundle,
        &["--quiet", "--model", models.to_str().unwrap()],
    );
    let query = "how do I make the cache faster";

    let alone = search(&cache, &bundle, &models, query, false).unwrap();
    assert!(!cache.join("run").exists(), "no daemon when it is off");
    let first = search(&cache, &bundle, &models, query, true).unwrap();
    assert_eq!(first, alone);
    let _stop = Stop(daemon_pid(&cache));
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(cache.join("run"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o700,
            "the socket's folder is the user's alone"
        );
    }
    // Without the model file, only the daemon, which holds the model, can answer: the same.
    let onnx = models.join("model.int8.onnx");
    std::fs::rename(&onnx, tmp.path().join("away.onnx")).unwrap();
    assert!(search(&cache, &bundle, &models, query, false).is_err());
    assert_eq!(
        search(&cache, &bundle, &models, query, true).unwrap(),
        alone
    );
    std::fs::rename(tmp.path().join("away.onnx"), &onnx).unwrap();

    // The bundle rebuilt with a new page: the daemon reads it again.
    std::fs::write(
        docs.join("zebra.md"),
        "# Zebra cache\n\nThe zebra cache makes the cache faster for striped keys.\n",
    )
    .unwrap();
    common::build(
        &docs,
        &bundle,
        &["--quiet", "--model", models.to_str().unwrap()],
    );
    let rebuilt = search(&cache, &bundle, &models, "zebra cache striped keys", true).unwrap();
    assert!(rebuilt.contains("zebra.md"), "{rebuilt}");
    assert_eq!(
        rebuilt,
        search(&cache, &bundle, &models, "zebra cache striped keys", false).unwrap()
    );
}
