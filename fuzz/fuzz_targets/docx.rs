//! A DOCX file's bytes → its converter (in-process, as the isolated child runs it).
//!
//! A panic inside a parser crate that `convert` catches is handled, as in the builder (the
//! file is skipped with a warning naming it): libFuzzer's panic hook would abort on it all the
//! same, so this target sets a silent hook of its own. A panic that escapes `convert` still
//! aborts the run (libfuzzer-sys aborts on an unwinding target) and is a finding;
//! `DOCLOUPE_FUZZ_PANICS=1 cargo fuzz run TARGET ARTIFACT` shows its message.
#![no_main]

use index_builder::{convert, ingest::Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // Silent: a caught panic would print its message on every such input (a PDF
        // campaign wrote 1.4 GB of them in 15 minutes); an escaped one still aborts.
        // DOCLOUPE_FUZZ_PANICS=1 prints them, to read a finding's.
        if std::env::var_os("DOCLOUPE_FUZZ_PANICS").is_some() {
            let _ = std::panic::take_hook();
        } else {
            std::panic::set_hook(Box::new(|_| {}));
        }
    },
    |data: &[u8]| {
        let mut warnings = Vec::new();
        let _ = convert::convert(Format::Docx, data, "fuzz", "fuzz", &mut warnings);
    }
);
