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

use crate::ingest::{parse_document, Block, Format, Heading, ParsedDoc, Section, Slugger};

/// One document, converted.
#[derive(Debug, Clone)]
pub struct ConversionResult {
    /// 128 bits of the sha256 of the file's bytes, in hex: the same file, the same id.
    pub doc_id: String,
    /// Title, front matter, sections and heading tree (`doc.outline`).
    pub doc: ParsedDoc,
    /// Where each page's text lies in the converted text (empty for formats without pages).
    pub page_map: PageMap,
}

/// Page → byte range of the converted text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageMap {
    pub pages: Vec<PageRange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        let run = || match format {
            Format::Pdf => pdf::convert(bytes, file_stem, rel, warnings),
            Format::Docx => docx::convert(bytes, file_stem).map(|d| (d, PageMap::default())),
            _ => sheet::convert(bytes, file_stem).map(|d| (d, PageMap::default())),
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
    Ok(ConversionResult {
        doc_id,
        doc,
        page_map,
    })
}

/// A converted document in reading order, before it is cut into sections.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Heading {
        level: u8,
        title: String,
        page: Option<u32>,
    },
    Block(Block),
}

/// Sections (breadcrumbs from the heading levels, GitHub-style anchors) and the heading tree
/// from a converted document. As in markdown, a top-level heading that repeats the title is
/// kept out of the breadcrumb once.
pub fn assemble(title: &str, items: Vec<Item>) -> (Vec<Section>, Vec<Heading>) {
    let mut slugs = Slugger::default();
    let mut stack: Vec<(u8, String)> = Vec::new();
    let mut outline = Vec::new();
    let mut sections: Vec<Section> = vec![Section {
        headings: Vec::new(),
        anchor: String::new(),
        heading_line: None,
        blocks: Vec::new(),
    }];
    let mut title_seen = false;
    for item in items {
        match item {
            Item::Heading {
                level,
                title: h,
                page,
            } => {
                let anchor = slugs.slug(&h);
                outline.push(Heading {
                    level,
                    title: h.clone(),
                    anchor: anchor.clone(),
                    page,
                });
                while stack.last().is_some_and(|(l, _)| *l >= level) {
                    stack.pop();
                }
                let repeats_title = !title_seen && level == 1 && h == title;
                title_seen |= repeats_title;
                if !repeats_title {
                    stack.push((level, h));
                }
                sections.push(Section {
                    headings: stack.iter().map(|(_, h)| h.clone()).collect(),
                    anchor,
                    heading_line: None,
                    blocks: Vec::new(),
                });
            }
            Item::Block(b) => {
                let s = sections.last_mut().expect("never empty");
                s.heading_line.get_or_insert(b.line_start);
                s.blocks.push(b);
            }
        }
    }
    sections.retain(|s| !s.blocks.is_empty());
    (sections, outline)
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

/// A title taken from the text when the format has none: the first line when it reads like
/// one (short, not ending a sentence).
fn title_from_text(first_line: Option<&str>, file_stem: &str) -> String {
    match first_line.map(crate::ingest::collapse) {
        Some(l) if !l.is_empty() && l.chars().count() <= 100 && !l.ends_with('.') => l,
        _ => file_stem.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(text: &str, line: u32, page: Option<u32>) -> Item {
        Item::Block(Block {
            text: text.into(),
            line_start: line,
            line_end: line,
            page,
        })
    }

    fn heading(level: u8, title: &str) -> Item {
        Item::Heading {
            level,
            title: title.into(),
            page: None,
        }
    }

    #[test]
    fn headings_become_breadcrumbs_and_an_outline() {
        let (sections, outline) = assemble(
            "Manual",
            vec![
                block("front", 1, None),
                heading(1, "Manual"),
                block("intro", 2, None),
                heading(2, "Install"),
                heading(3, "Linux"),
                block("apt", 4, None),
                heading(2, "Install"),
                block("again", 6, None),
            ],
        );
        let got: Vec<(Vec<String>, String, &str)> = sections
            .iter()
            .map(|s| {
                (
                    s.headings.clone(),
                    s.anchor.clone(),
                    s.blocks[0].text.as_str(),
                )
            })
            .collect();
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (v(&[]), "".into(), "front"),
                (v(&[]), "manual".into(), "intro"),
                (v(&["Install", "Linux"]), "linux".into(), "apt"),
                (v(&["Install"]), "install-1".into(), "again"),
            ]
        );
        // The tree keeps headings without text of their own.
        let levels: Vec<(u8, &str)> = outline
            .iter()
            .map(|h| (h.level, h.title.as_str()))
            .collect();
        assert_eq!(
            levels,
            vec![(1, "Manual"), (2, "Install"), (3, "Linux"), (2, "Install")]
        );
    }

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
