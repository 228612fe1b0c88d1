//! A XLSX file's bytes → its converter (in-process, as the isolated child runs it).
//!
//! A panic inside a parser crate that `convert` catches is handled, as in the builder (the
//! file is skipped with a warning naming it): libFuzzer's panic hook would abort on it all the
//! same, so this target keeps the default hook. A panic that escapes `convert` still aborts
//! the run (libfuzzer-sys aborts on an unwinding target) and is a finding.
#![no_main]

use index_builder::{convert, ingest::Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        let _ = std::panic::take_hook();
    },
    |data: &[u8]| {
        let mut warnings = Vec::new();
        let _ = convert::convert(Format::Xlsx, data, "fuzz", "fuzz", &mut warnings);
    }
);
