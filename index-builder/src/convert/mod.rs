//! Convert: every format the builder reads becomes one [`ConversionResult`]: a stable
//! `docId`, the document's heading tree (its `outline`), a `pageMap` for paged formats, and
//! the sections (breadcrumb, anchor, text blocks with line ranges and pages) that chunking
//! reads. Markdown and plain text are parsed by [`crate::ingest`]; PDF ([`pdf`]), DOCX
//! ([`docx`]) and spreadsheets ([`sheet`]) are converted here.
//!
//! A file a converter cannot read (encrypted, scanned images only, broken) is an `Err` with
//! the reason, which the build reports as a warning naming the file before going on. A
//! converter that panics on a malformed file is caught and reported the same way.

mod docx;
mod pdf;
mod sheet;

use std::panic::{catch_unwind, AssertUnwindSafe};

use docloupe::embed::sha256_hex;

use crate::ingest::{assemble, parse_document, Format, Item, ParsedDoc};

/// One document, converted.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ConversionResult {
    /// 128 bits of the sha256 of the file's bytes, in hex: the same file, the same id.
    pub doc_id: String,
    /// Title, front matter, sections and heading tree (`doc.outline`).
    pub doc: ParsedDoc,
    /// Where each page's text lies in the converted text (empty for formats without pages).
    pub page_map: PageMap,
}

/// Page → byte range of the converted text.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PageMap {
    pub pages: Vec<PageRange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageRange {
    /// 1-based.
    pub page: u32,
    pub start: usize,
    /// Exclusive.
    pub end: usize,
}

impl PageMap {
    /// The page whose text holds byte `offset` (the page before a gap between pages).
    pub fn page_at(&self, offset: usize) -> Option<u32> {
        let i = self.pages.partition_point(|p| p.start <= offset);
        self.pages.get(i.checked_sub(1)?).map(|p| p.page)
    }
}

/// Converts one file's bytes by its format. `file_stem` is the title of last resort;
/// `warnings` collects what was read but not understood (the document is still indexed).
pub fn convert(
    format: Format,
    bytes: &[u8],
    file_stem: &str,
    rel: &str,
    warnings: &mut Vec<String>,
) -> Result<ConversionResult, String> {
    let doc_id = sha256_hex(bytes)[..32].to_owned();
    let (doc, page_map) = if format.is_text() {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 ({e})"))?;
        let doc = parse_document(format, text, file_stem, warnings, rel);
        (doc, PageMap::default())
    } else {
        // Office and OpenDocument files carry their dates in their package (a PDF's come
        // with its conversion; an XLS keeps them where calamine does not read).
        let dated = |mut d: ParsedDoc| {
            let (created, modified) = docx::package_dates(bytes);
            d.front.date = modified.or_else(|| created.clone());
            d.front.created = created;
            (d, PageMap::default())
        };
        let run = || match format {
            Format::Pdf => pdf::convert(bytes, file_stem, rel, warnings),
            Format::Docx => docx::convert(bytes, file_stem).map(dated),
            _ => sheet::convert(bytes, file_stem).map(dated),
        };
        // The PDF and spreadsheet parsers assert on some malformed input; such a file is
        // broken, not a reason to stop the build.
        match catch_unwind(AssertUnwindSafe(run)) {
            Ok(r) => r?,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown failure".into());
                return Err(format!(
                    "broken {} file, its parser failed: {why}",
                    format.doc_type().to_uppercase()
                ));
            }
        }
    };
    // What a converted file extracts is held to the text formats' limit (a 300 KB DOCX
    // made 200 MiB of text and 222k chunks).
    let text: usize = doc
        .sections
        .iter()
        .flat_map(|s| &s.blocks)
        .map(|b| b.text.len())
        .sum();
    if text as u64 > crate::ingest::MAX_FILE_BYTES {
        return Err(format!(
            "it holds {} MiB of text, over the {} MiB limit",
            text >> 20,
            crate::ingest::MAX_FILE_BYTES >> 20
        ));
    }
    Ok(ConversionResult {
        doc_id,
        doc,
        page_map,
    })
}

/// A converted document (no front matter: only markdown has it) from its title and items.
fn parsed(title: String, items: Vec<Item>) -> ParsedDoc {
    let (sections, outline) = assemble(&title, items);
    ParsedDoc {
        front: crate::ingest::FrontMatter::default(),
        title,
        sections,
        outline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_map_finds_the_page_of_an_offset() {
        let map = PageMap {
            pages: vec![
                PageRange {
                    page: 1,
                    start: 0,
                    end: 10,
                },
                PageRange {
                    page: 2,
                    start: 12,
                    end: 20,
                },
            ],
        };
        assert_eq!(map.page_at(0), Some(1));
        assert_eq!(map.page_at(9), Some(1));
        assert_eq!(map.page_at(11), Some(1));
        assert_eq!(map.page_at(12), Some(2));
        assert_eq!(map.page_at(400), Some(2));
        assert_eq!(PageMap::default().page_at(3), None);
    }

    #[test]
    fn garbage_in_every_binary_format_is_an_error_not_a_panic() {
        for format in [
            Format::Pdf,
            Format::Docx,
            Format::Xlsx,
            Format::Xls,
            Format::Ods,
        ] {
            for bytes in [
                &b""[..],
                b"%PDF-1.7\n garbage",
                b"PK\x03\x04 not a zip",
                &[0xff; 300],
            ] {
                let r = convert(format, bytes, "x", "x", &mut Vec::new());
                assert!(r.is_err(), "{format:?} accepted {bytes:?}");
            }
        }
    }
}
