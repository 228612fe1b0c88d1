//! The converter's isolation (`isolate.rs`): a child that overflows its stack, runs out of
//! memory, hangs or spins costs one file, with the reason in words, and never the build. The
//! faults come from `examples/faulty_converter.rs`, which cargo builds beside the tests; the
//! release index-builder has no way to inject them.
use std::path::PathBuf;

use index_builder::ingest::Format;
use index_builder::isolate::{convert_in_child, Limits};

/// The example binary, built by `cargo test` into the profile's `examples/` folder.
fn faulty_converter() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let profile = deps.parent().unwrap().parent().unwrap();
    let exe = profile.join("examples").join("faulty_converter");
    assert!(exe.exists(), "{} (built by cargo test)", exe.display());
    exe
}

#[cfg(unix)]
#[test]
fn a_converter_that_overflows_its_stack_runs_out_of_memory_or_hangs_costs_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        memory_bytes: 512 << 20,
        seconds: 3,
    };
    for (fault, reason) in [
        ("stack-overflow", "overflowed the converter's stack"),
        ("allocate", "more than 512 MiB of memory"),
        ("hang", "longer than 3 s"),
        ("spin", "3 s"),
    ] {
        let worker = tmp.path().join(format!("faulty-{fault}"));
        std::os::unix::fs::symlink(faulty_converter(), &worker).unwrap();
        let mut warnings = Vec::new();
        let pdf = b"%PDF-1.4\n%%EOF\n";
        let started = std::time::Instant::now();
        let e = convert_in_child(
            &worker,
            Format::Pdf,
            pdf,
            "paper",
            "paper.pdf",
            &mut warnings,
            limits,
        )
        .expect_err(fault);
        assert!(e.contains(reason), "{fault}: {e}");
        assert!(started.elapsed().as_secs() < 30, "{fault}: stopped in time");
    }
    // The same worker with no fault converts (so the faults, not the harness, failed above).
    let worker = tmp.path().join("faulty-none");
    std::os::unix::fs::symlink(faulty_converter(), &worker).unwrap();
    let e = convert_in_child(
        &worker,
        Format::Pdf,
        b"not a pdf",
        "x",
        "x.pdf",
        &mut Vec::new(),
        limits,
    )
    .expect_err("a broken PDF");
    assert!(
        !e.contains("converter"),
        "the converter itself answered: {e}"
    );
}
