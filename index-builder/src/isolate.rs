//! Converters of binary formats run in a child process with hard limits.
//!
//! PDF, DOCX and spreadsheet parsers are large, and a hostile file can make one of them
//! overflow its stack, allocate without bound or loop. `catch_unwind` only catches panics;
//! a stack overflow or a failed allocation aborts the process, and a loop never returns. So
//! the builder converts each binary file in a child (`index-builder convert-worker`, hidden)
//! with an address-space limit (`RLIMIT_AS`), a CPU-time limit (`RLIMIT_CPU`) and a wall-clock
//! deadline, and reads the [`ConversionResult`] back as JSON. Whatever happens to the child,
//! the file is skipped with a warning naming the reason and the build goes on.

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::convert::{convert, ConversionResult};
use crate::ingest::Format;

/// What one conversion may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Address space of the child, in bytes.
    pub memory_bytes: u64,
    /// Wall-clock seconds before the child is killed (CPU time is capped at the same).
    pub seconds: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 2 << 30,
            seconds: 300,
        }
    }
}

/// The child's answer.
#[derive(Serialize, Deserialize)]
struct Answer {
    result: Result<ConversionResult, String>,
    warnings: Vec<String>,
}

/// Converts one file like [`convert`], running binary formats in a limited child process
/// (text formats have linear parsers and a 16 MiB cap and are converted here).
pub fn convert_isolated(
    format: Format,
    bytes: &[u8],
    file_stem: &str,
    rel: &str,
    warnings: &mut Vec<String>,
    limits: Limits,
) -> Result<ConversionResult, String> {
    if format.is_text() {
        return convert(format, bytes, file_stem, rel, warnings);
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot start the converter (no path to index-builder: {e})"))?;
    convert_in_child(&exe, format, bytes, file_stem, rel, warnings, limits)
}

/// [`convert_isolated`] of a binary format by `worker`, a program that answers
/// `convert-worker --format F --stem S --rel R` as [`worker`] does (index-builder itself; the
/// isolation's tests give a worker that fails on purpose).
pub fn convert_in_child(
    worker: &std::path::Path,
    format: Format,
    bytes: &[u8],
    file_stem: &str,
    rel: &str,
    warnings: &mut Vec<String>,
    limits: Limits,
) -> Result<ConversionResult, String> {
    let mut cmd = Command::new(worker);
    cmd.args([
        "convert-worker",
        "--format",
        format.doc_type(),
        "--stem",
        file_stem,
        "--rel",
        rel,
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    limit_child(&mut cmd, limits);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the converter: {e}"))?;
    // Feed and drain on threads so neither pipe can fill up and stall the other.
    let mut stdin = child.stdin.take().expect("piped");
    let input = bytes.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + Duration::from_secs(limits.seconds);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("the converter was lost: {e}")),
        }
    };
    let _ = feeder.join();
    let out = reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let Some(status) = status else {
        return Err(format!(
            "converting it took longer than {} s (the converter was stopped)",
            limits.seconds
        ));
    };
    if !status.success() {
        return Err(crash_reason(status, &err, limits));
    }
    let answer: Answer = serde_json::from_slice(&out)
        .map_err(|e| format!("the converter answered nonsense ({e})"))?;
    warnings.extend(answer.warnings);
    answer.result
}

/// Why a child that did not exit cleanly failed, in words.
fn crash_reason(status: std::process::ExitStatus, stderr: &[u8], limits: Limits) -> String {
    let said = String::from_utf8_lossy(stderr);
    let last = said
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let what = match sig {
                9 | 24 => format!("it used more than {} s of CPU", limits.seconds),
                11 => "it crashed the converter (segmentation fault)".to_owned(),
                6 if said.contains("overflowed its stack") => {
                    "it overflowed the converter's stack".to_owned()
                }
                6 if said.contains("memory allocation") => format!(
                    "it needed more than {} MiB of memory",
                    limits.memory_bytes >> 20
                ),
                _ => format!("the converter died (signal {sig})"),
            };
            return what;
        }
    }
    if said.contains("memory allocation") {
        return format!(
            "it needed more than {} MiB of memory",
            limits.memory_bytes >> 20
        );
    }
    format!("the converter failed ({status}): {last}")
}

#[cfg(unix)]
fn limit_child(cmd: &mut Command, limits: Limits) {
    use std::os::unix::process::CommandExt;
    let memory = limits.memory_bytes as libc::rlim_t;
    let cpu = limits.seconds as libc::rlim_t;
    // SAFETY: runs in the forked child before exec; setrlimit is async-signal-safe and the
    // closure touches nothing but its copied arguments.
    unsafe {
        cmd.pre_exec(move || {
            let set = |resource, value: libc::rlim_t| {
                let lim = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            };
            set(libc::RLIMIT_AS, memory)?;
            set(libc::RLIMIT_CPU, cpu)?;
            // No core files of hostile documents.
            set(libc::RLIMIT_CORE, 0)?;
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn limit_child(_cmd: &mut Command, _limits: Limits) {}

/// `index-builder convert-worker --format F --stem S --rel R`: the child. Reads the file's
/// bytes on stdin, writes an [`Answer`] as JSON on stdout.
pub fn worker(format: &str, stem: &str, rel: &str) -> ExitCode {
    let Some(format) = Format::from_doc_type(format) else {
        eprintln!("convert-worker: unknown format {format:?}");
        return ExitCode::from(2);
    };
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
        eprintln!("convert-worker: cannot read the file: {e}");
        return ExitCode::from(2);
    }
    let mut warnings = Vec::new();
    let result = convert(format, &bytes, stem, rel, &mut warnings);
    let answer = Answer { result, warnings };
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, &answer)
        .map_err(std::io::Error::from)
        .and_then(|_| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("convert-worker: cannot answer: {e}");
            ExitCode::from(2)
        }
    }
}
