//! Convert: every format the builder reads becomes one [`ConversionResult`]: a stable
//! `docId`, the document's heading tree (its `outline`), a `pageMap` for paged formats, and
//! the sections (breadcrumb, anchor, text blocks with line ranges and pages) that chunking
//! reads. Markdown and plain text are parsed by [`crate::ingest`]; HTML pages ([`html`]), PDF
//! ([`pdf`]), DOCX ([`docx`]) and spreadsheets ([`sheet`]) are converted here.
//!
//! A file a converter cannot read (encrypted, scanned images only, broken) is an `Err` with
//! the reason, which the build reports as a warning naming the file before going on. A
//! converter that panics on a malformed file is caught and reported the same way.

pub mod dates;
mod docx;
pub mod html;
mod hyphen;
mod pdf;
mod sheet;
pub mod title;

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
        let text = decode_text(bytes)?;
        let doc = match format {
            Format::Html => html::convert(text.trim_start_matches('\u{feff}'), file_stem)?,
            _ => parse_document(format, &text, file_stem, warnings, rel),
        };
        (doc, PageMap::default())
    } else {
        // Spreadsheets carry their dates in their package (an XLS keeps them where calamine
        // does not read); PDF and Word documents are dated by their converters, from their
        // own text first.
        let run = || match format {
            Format::Pdf => pdf::convert(bytes, file_stem, rel, warnings),
            Format::Docx => docx::convert(bytes, file_stem).map(|d| (d, PageMap::default())),
            Format::Xlsx | Format::Xls | Format::Ods => {
                sheet::convert(bytes, file_stem).map(|mut d| {
                    let (created, modified) = docx::package_dates(bytes);
                    dated(&mut d.front, "", created, modified);
                    (d, PageMap::default())
                })
            }
            // Read as text above.
            Format::Markdown | Format::Text | Format::Html => {
                Err("text reached the binary converters".into())
            }
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

/// Sets a converted document's dates: those its first pages state (`head`; [`dates::stated`]:
/// adoption, approval, entry into force, revision), else the file's own (`created`,
/// `modified`: when it was produced), and says which.
pub(super) fn dated(
    front: &mut crate::ingest::FrontMatter,
    head: &str,
    created: Option<String>,
    modified: Option<String>,
) {
    use docloupe::bundle::DateSource;
    let stated = dates::stated(head);
    if !stated.is_empty() {
        front.date = stated.date();
        front.created = stated.created();
        front.date_source = Some(DateSource::Document);
    } else if modified.is_some() || created.is_some() {
        front.date = modified.or_else(|| created.clone());
        front.created = created;
        front.date_source = Some(DateSource::Metadata);
    }
}

/// A text file's characters: UTF-8 (a leading byte order mark is the parsers' to skip), or
/// UTF-16 with its byte order mark (as Windows editors save "Unicode" text).
pub fn decode_text(bytes: &[u8]) -> Result<std::borrow::Cow<'_, str>, String> {
    let utf16 = |bom: &str, unit: fn([u8; 2]) -> u16| {
        let body = &bytes[2..];
        if body.len() % 2 != 0 {
            return Err(format!(
                "it is UTF-16 text (byte order mark {bom}) with an odd number of bytes"
            ));
        }
        let units: Vec<u16> = body.chunks_exact(2).map(|p| unit([p[0], p[1]])).collect();
        String::from_utf16(&units)
            .map(std::borrow::Cow::Owned)
            .map_err(|_| format!("it is UTF-16 text (byte order mark {bom}) that does not decode"))
    };
    match bytes {
        [0xFF, 0xFE, ..] => utf16("FF FE", u16::from_le_bytes),
        [0xFE, 0xFF, ..] => utf16("FE FF", u16::from_be_bytes),
        _ => std::str::from_utf8(bytes)
            .map(std::borrow::Cow::Borrowed)
            .map_err(|e| {
                format!(
                    "not UTF-8 text: byte {} is not valid UTF-8 (save it as UTF-8)",
                    e.valid_up_to()
                )
            }),
    }
}

/// A converted document (no front matter: only markdown has it) from its title and items.
fn parsed(title: String, items: Vec<Item>) -> ParsedDoc {
    let title = crate::ingest::bounded_label(&title);
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

    /// Regression (hostile inputs, issue 59): a UTF-16 text file was refused as "invalid
    /// utf-8 … from index 0". Text with a UTF-16 byte order mark is read; other bytes that are
    /// not UTF-8 are named.
    #[test]
    fn utf16_text_is_read_and_other_encodings_are_named() {
        let utf16 = |text: &str, le: bool| -> Vec<u8> {
            let mut out = if le {
                vec![0xFF, 0xFE]
            } else {
                vec![0xFE, 0xFF]
            };
            for u in text.encode_utf16() {
                out.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
            }
            out
        };
        for le in [true, false] {
            let r = convert(
                Format::Markdown,
                &utf16("# Заголовок\n\nтекст\n", le),
                "x",
                "x.md",
                &mut Vec::new(),
            )
            .unwrap();
            assert_eq!(r.doc.title, "Заголовок");
            assert_eq!(r.doc.sections[0].blocks[0].line_start, 3);
        }
        let e = convert(Format::Text, b"ok \xe9t\xe9", "x", "x.txt", &mut Vec::new()).unwrap_err();
        assert!(e.contains("byte 3 is not valid UTF-8"), "{e}");
        let mut odd = utf16("ab", true);
        odd.push(0);
        let e = convert(Format::Text, &odd, "x", "x.txt", &mut Vec::new()).unwrap_err();
        assert!(e.contains("UTF-16"), "{e}");
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
