//! The query log's file: one JSON line per call, each written whole with one `write` on a file
//! opened for appending (nothing is buffered in the process, so a crash loses at most the line
//! in flight), rotated by size (`FILE` → `FILE.1` → … → `FILE.N`, the oldest dropped).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde_json::Value;

/// The query-log flags `mcp` and `serve` share.
#[derive(clap::Args)]
pub(crate) struct LogArgs {
    /// Append the query log (JSON lines) to this file instead of stderr.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Rotate the log file once it would grow past this many MiB (0: never).
    #[arg(long, default_value_t = 64, value_name = "MiB", requires = "log")]
    pub log_max_mib: u64,
    /// How many rotated files (FILE.1 … FILE.N) to keep.
    #[arg(long, default_value_t = 5, requires = "log")]
    pub log_keep: u32,
}

enum Sink {
    Stderr,
    File {
        path: PathBuf,
        file: std::fs::File,
        size: u64,
        max: u64,
        keep: u32,
    },
}

/// Where the query log goes.
pub(crate) struct QueryLog(Mutex<Sink>);

/// Opens `path` for appending, never through a symlink; a new log is readable by its owner
/// only (queries can be private).
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut open = std::fs::OpenOptions::new();
    open.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    open.open(path)
}

fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

impl QueryLog {
    pub(crate) fn open(args: &LogArgs) -> Result<QueryLog> {
        let sink = match &args.log {
            None => Sink::Stderr,
            Some(path) => {
                let file = open_append(path)
                    .with_context(|| format!("cannot open the log {}", path.display()))?;
                let size = file.metadata().map(|m| m.len()).unwrap_or(0);
                Sink::File {
                    path: path.clone(),
                    file,
                    size,
                    max: args.log_max_mib.saturating_mul(1 << 20),
                    keep: args.log_keep,
                }
            }
        };
        Ok(QueryLog(Mutex::new(sink)))
    }

    /// Appends `line`. A log that cannot be written never fails the call it records.
    pub(crate) fn write(&self, line: &Value) {
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        let Ok(mut sink) = self.0.lock() else { return };
        match &mut *sink {
            Sink::Stderr => {
                let _ = std::io::stderr().write_all(&bytes);
            }
            Sink::File {
                path,
                file,
                size,
                max,
                keep,
            } => {
                if *max > 0 && *size > 0 && *size + bytes.len() as u64 > *max {
                    if let Ok(fresh) = rotate(path, *keep) {
                        *file = fresh;
                        *size = 0;
                    }
                }
                if file.write_all(&bytes).is_ok() {
                    *size += bytes.len() as u64;
                }
            }
        }
    }
}

/// Shifts `path` to `path.1` (and so on up to `keep`) and opens a fresh `path`.
fn rotate(path: &Path, keep: u32) -> std::io::Result<std::fs::File> {
    if keep == 0 {
        std::fs::remove_file(path)?;
    } else {
        for n in (1..keep).rev() {
            let from = numbered(path, n);
            if from.exists() {
                std::fs::rename(&from, numbered(path, n + 1))?;
            }
        }
        std::fs::rename(path, numbered(path, 1))?;
    }
    open_append(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_rotates_by_size_and_keeps_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        let log = QueryLog::open(&LogArgs {
            log: Some(path.clone()),
            log_max_mib: 0,
            log_keep: 2,
        })
        .unwrap();
        // 1 MiB would take long to fill; the same rule at a small size.
        if let Sink::File { max, .. } = &mut *log.0.lock().unwrap() {
            *max = 100;
        }
        for i in 0..10 {
            log.write(&serde_json::json!({"i": i, "pad": "x".repeat(30)}));
        }
        let lines = |p: &Path| -> Vec<Value> {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        let (now, one, two) = (
            lines(&path),
            lines(&numbered(&path, 1)),
            lines(&numbered(&path, 2)),
        );
        assert!(!numbered(&path, 3).exists());
        // Every file under the limit, the newest lines in FILE, in order.
        for p in [&path, &numbered(&path, 1), &numbered(&path, 2)] {
            assert!(std::fs::metadata(p).unwrap().len() <= 100);
        }
        let order: Vec<i64> = two
            .iter()
            .chain(&one)
            .chain(&now)
            .map(|v| v["i"].as_i64().unwrap())
            .collect();
        assert_eq!(order.last(), Some(&9));
        assert!(order.windows(2).all(|w| w[1] == w[0] + 1), "{order:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        let path = dir.path().join("q.jsonl");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let opened = QueryLog::open(&LogArgs {
            log: Some(path),
            log_max_mib: 64,
            log_keep: 5,
        });
        assert!(opened.is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
