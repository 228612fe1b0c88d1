//! An XLSX file's bytes → its converter (in-process, as the isolated child runs it).
#![no_main]

use index_builder::{convert, ingest::Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut warnings = Vec::new();
    let _ = convert::convert(Format::Xlsx, data, "fuzz", "fuzz", &mut warnings);
});
