//! Markdown and plain text (front matter, tables, line ends, encodings) → ingest: parsing,
//! sections, anchors, YAML, and the site renderer; the bytes as the builder reads a text file
//! (UTF-8 or UTF-16 with its byte order mark).
#![no_main]

use index_builder::{convert, ingest, site};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut warnings = Vec::new();
    for format in [ingest::Format::Markdown, ingest::Format::Text] {
        let _ = convert::convert(format, data, "fuzz", "fuzz.md", &mut warnings);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ingest::parse_markdown(text, "fuzz", &mut warnings, "fuzz.md");
    let _ = site::render_body(text);
});
