//! HTML pages (a built site's: broken markup, entities, ids, nesting, meta tags) → the page
//! reader: the survey the build takes before converting, and the conversion itself, both on
//! the text as the builder decodes a text file.
#![no_main]

use index_builder::convert::{self, html};
use index_builder::ingest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut warnings = Vec::new();
    let _ = convert::convert(ingest::Format::Html, data, "fuzz", "fuzz.html", &mut warnings);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = html::survey(text);
    if let Ok(doc) = html::convert(text, "fuzz") {
        // Anchors are the page's own ids (or empty: the page's top), never control characters.
        for s in &doc.sections {
            assert!(!s.anchor.chars().any(char::is_control), "{:?}", s.anchor);
        }
    }
});
