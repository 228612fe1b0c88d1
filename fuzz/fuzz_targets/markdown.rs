//! Markdown (with front matter) → ingest: parsing, sections, anchors, and the site renderer.
#![no_main]

use index_builder::{ingest, site};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut warnings = Vec::new();
    let _ = ingest::parse_markdown(text, "fuzz", &mut warnings, "fuzz.md");
    let _ = site::render_body(text);
});
