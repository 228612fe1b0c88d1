//! DOCX: the body of `word/document.xml` in order. A paragraph is a block unless its style
//! is a heading (`Heading 1`…`Heading 9` by style name or id, or an outline level), which
//! opens a section; a table row is a block of its cells joined with ` | `. The title is the
//! document property `dc:title`, else the `Title`-styled paragraph, else the first heading.
//! A line is a paragraph (or table row) of the body, 1-based. Word files have no fixed pages:
//! results from them carry no page numbers.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::parsed;
use crate::ingest::{collapse, title_from_text, Block, Item, ParsedDoc};

/// A part of a DOCX (`word/document.xml`, styles, properties) that unpacks to more than this
/// is refused: a zip bomb, not a document (300 KB of zip made 200 MiB of XML).
const MAX_XML_BYTES: u64 = 64 * 1024 * 1024;

pub fn convert(bytes: &[u8], file_stem: &str) -> Result<ParsedDoc, String> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
        // Encrypted Office files are OLE compound files, not zips.
        if bytes.starts_with(&[0xd0, 0xcf, 0x11, 0xe0]) {
            "encrypted or legacy Word file (not a DOCX zip)".to_owned()
        } else {
            format!("broken DOCX: {e}")
        }
    })?;
    let document = read_entry(&mut zip, "word/document.xml")?
        .ok_or_else(|| "broken DOCX: word/document.xml is missing".to_owned())?;
    let styles = match read_entry(&mut zip, "word/styles.xml")? {
        Some(xml) => heading_styles(&xml)?,
        None => HashMap::new(),
    };
    let core_title = read_entry(&mut zip, "docProps/core.xml")?
        .and_then(|xml| element_text(&xml, b"dc:title"))
        .map(|t| collapse(&t))
        .filter(|t| !t.is_empty());

    let paras = body(&document, &styles)?;
    let style_title = paras
        .iter()
        .find(|p| p.kind == Kind::Title)
        .map(|p| p.text.clone());
    let first_heading = paras.iter().find_map(|p| match p.kind {
        Kind::Heading(_) => Some(p.text.clone()),
        _ => None,
    });
    // The title from the document's structure first (a standard's designation, an act's
    // header), its property where that is its own, then its styles (`title.rs`).
    let lines: Vec<super::title::Line> = paras
        .iter()
        .take(40)
        .map(|p| super::title::Line::new(p.text.clone(), 0.0))
        .collect();
    let mut head = String::new();
    for p in &paras {
        if head.len() >= super::dates::SCAN_CHARS {
            break;
        }
        head.push_str(&p.text);
        head.push('\n');
    }
    let title = super::title::choose(&super::title::Evidence {
        property: core_title.as_deref(),
        lines: &lines,
        styled: style_title.as_deref().or(first_heading.as_deref()),
        text: &head,
    })
    .unwrap_or_else(|| title_from_text(paras.first().map(|p| p.text.as_str()), file_stem));
    let (created, modified) = package_dates(bytes);

    let items = paras
        .into_iter()
        .filter(|p| p.kind != Kind::Title)
        .map(|p| match p.kind {
            Kind::Heading(level) => Item::Heading {
                level,
                title: p.text,
                id: None,
                page: None,
            },
            _ => Item::Block(Block {
                text: p.text,
                line_start: p.line,
                line_end: p.line,
                page: None,
            }),
        })
        .collect();
    let mut doc = parsed(title, items);
    super::dated(&mut doc.front, &head, created, modified);
    Ok(doc)
}

fn read_entry(
    zip: &mut zip::ZipArchive<Cursor<&[u8]>>,
    name: &str,
) -> Result<Option<String>, String> {
    let entry = match zip.by_name(name) {
        Ok(e) => e,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(format!("broken DOCX: {name}: {e}")),
    };
    let too_big = || {
        format!(
            "DOCX {name} unpacks to more than {} MiB, over the limit",
            MAX_XML_BYTES >> 20
        )
    };
    // The size in the zip directory can lie: the read is bounded either way.
    if entry.size() > MAX_XML_BYTES {
        return Err(too_big());
    }
    let mut xml = String::new();
    entry
        .take(MAX_XML_BYTES + 1)
        .read_to_string(&mut xml)
        .map_err(|e| format!("broken DOCX: {name}: {e}"))?;
    if xml.len() as u64 > MAX_XML_BYTES {
        return Err(too_big());
    }
    Ok(Some(xml))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Body,
    Title,
    Heading(u8),
}

struct Para {
    kind: Kind,
    text: String,
    line: u32,
}

fn attr(e: &BytesStart, key: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == key)
        .and_then(|a| {
            // Office XML is UTF-8.
            let raw = String::from_utf8_lossy(&a.value).into_owned();
            quick_xml::escape::unescape(&raw)
                .ok()
                .map(|v| v.into_owned())
        })
}

/// Heading level of a style id or name: `Heading2`, `heading 2` → 2; `Title` → title.
fn kind_of_style(name: &str) -> Option<Kind> {
    let n = name.to_ascii_lowercase().replace(' ', "");
    if n == "title" {
        return Some(Kind::Title);
    }
    let level: u8 = n.strip_prefix("heading")?.parse().ok()?;
    (1..=9).contains(&level).then_some(Kind::Heading(level))
}

/// styleId → heading kind, from `word/styles.xml`: by the style's name (localized Word files
/// keep English names there), else by its outline level.
fn heading_styles(xml: &str) -> Result<HashMap<String, Kind>, String> {
    let mut out = HashMap::new();
    let mut reader = Reader::from_str(xml);
    let mut current: Option<String> = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.name().as_ref() {
                b"w:style" => current = attr(&e, b"w:styleId"),
                b"w:name" => {
                    if let (Some(id), Some(kind)) = (
                        &current,
                        attr(&e, b"w:val").as_deref().and_then(kind_of_style),
                    ) {
                        out.insert(id.clone(), kind);
                    }
                }
                b"w:outlineLvl" => {
                    if let (Some(id), Some(l)) = (
                        &current,
                        attr(&e, b"w:val").and_then(|v| v.parse::<u8>().ok()),
                    ) {
                        if l < 9 {
                            out.entry(id.clone()).or_insert(Kind::Heading(l + 1));
                        }
                    }
                }
                _ => {}
            },
            Ok(Event::End(e)) if e.name().as_ref() == b"w:style" => current = None,
            Ok(Event::Eof) => return Ok(out),
            Err(e) => return Err(format!("broken DOCX: word/styles.xml: {e}")),
            _ => {}
        }
    }
}

/// An Office or OpenDocument file's own dates, (created, modified) as `YYYY-MM-DD`: DOCX and
/// XLSX keep them in `docProps/core.xml` (`dcterms:created`, `dcterms:modified`), ODS in
/// `meta.xml` (`meta:creation-date`, `dc:date`). Missing or unreadable: `None`.
pub(super) fn package_dates(bytes: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(mut zip) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        return (None, None);
    };
    let date = |xml: &str, tag: &[u8]| {
        element_text(xml, tag).and_then(|d| crate::ingest::metadata_date(&d))
    };
    if let Ok(Some(core)) = read_entry(&mut zip, "docProps/core.xml") {
        return (
            date(&core, b"dcterms:created"),
            date(&core, b"dcterms:modified"),
        );
    }
    if let Ok(Some(meta)) = read_entry(&mut zip, "meta.xml") {
        return (date(&meta, b"meta:creation-date"), date(&meta, b"dc:date"));
    }
    (None, None)
}

/// The text of the first `tag` element of `xml` (`dc:title` of `docProps/core.xml`).
fn element_text(xml: &str, tag: &[u8]) -> Option<String> {
    let mut reader = Reader::from_str(xml);
    let mut inside = false;
    let mut text = String::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) if e.name().as_ref() == tag => inside = true,
            Event::End(e) if e.name().as_ref() == tag => return Some(text),
            Event::Text(t) if inside => text.push_str(&t.decode().ok()?),
            Event::GeneralRef(r) if inside => text.push(entity(&r)?),
            Event::Eof => return None,
            _ => {}
        }
    }
}

fn entity(r: &quick_xml::events::BytesRef) -> Option<char> {
    if r.is_char_ref() {
        return r.resolve_char_ref().ok().flatten();
    }
    match r.decode().ok()?.as_ref() {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => None,
    }
}

/// The body's paragraphs and table rows in order, numbered.
fn body(xml: &str, styles: &HashMap<String, Kind>) -> Result<Vec<Para>, String> {
    let mut reader = Reader::from_str(xml);
    let mut out = Vec::new();
    let mut line = 0u32;
    // Paragraph being read: its kind and text.
    let mut para: Option<(Kind, String)> = None;
    let mut in_text = false;
    // Table rows being read (tables nest): cells of the innermost row.
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut cell_depth = 0usize;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("broken DOCX: word/document.xml: {e}"))?;
        match event {
            // An empty paragraph still counts as a line.
            Event::Empty(e) if e.name().as_ref() == b"w:p" && cell_depth == 0 => line += 1,
            Event::Empty(e) if e.name().as_ref() == b"w:p" => {}
            Event::Start(e) if e.name().as_ref() == b"w:p" => {
                para = Some((Kind::Body, String::new()))
            }
            Event::Start(e) if e.name().as_ref() == b"w:t" => in_text = true,
            Event::Start(e) if e.name().as_ref() == b"w:tr" => rows.push(Vec::new()),
            Event::Start(e) if e.name().as_ref() == b"w:tc" => {
                cell_depth += 1;
                if let Some(r) = rows.last_mut() {
                    r.push(String::new());
                }
            }
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                b"w:pStyle" => {
                    if let (Some(p), Some(v)) = (para.as_mut(), attr(&e, b"w:val")) {
                        p.0 = styles
                            .get(&v)
                            .copied()
                            .or_else(|| kind_of_style(&v))
                            .unwrap_or(Kind::Body);
                    }
                }
                b"w:outlineLvl" => {
                    if let (Some(p), Some(l)) = (
                        para.as_mut(),
                        attr(&e, b"w:val").and_then(|v| v.parse::<u8>().ok()),
                    ) {
                        if l < 9 && p.0 == Kind::Body {
                            p.0 = Kind::Heading(l + 1);
                        }
                    }
                }
                b"w:tab" => {
                    if let Some(p) = para.as_mut() {
                        p.1.push(' ');
                    }
                }
                // A line break inside a paragraph: where a word broken at it is joined again.
                b"w:br" | b"w:cr" => {
                    if let Some(p) = para.as_mut() {
                        p.1.push('\n');
                    }
                }
                _ => {}
            },
            Event::Text(t) if in_text => {
                if let Some(p) = para.as_mut() {
                    p.1.push_str(&t.decode().map_err(|e| format!("broken DOCX: {e}"))?);
                }
            }
            Event::GeneralRef(r) if in_text => {
                if let (Some(p), Some(c)) = (para.as_mut(), entity(&r)) {
                    p.1.push(c);
                }
            }
            Event::End(e) => match e.name().as_ref() {
                b"w:t" => in_text = false,
                b"w:p" => {
                    let Some((kind, text)) = para.take() else {
                        continue;
                    };
                    let text = collapse(&as_written(&text));
                    if cell_depth > 0 {
                        append_to_cell(&mut rows, &text);
                    } else {
                        push_line(&mut out, &mut line, kind, text);
                    }
                }
                b"w:tc" => cell_depth = cell_depth.saturating_sub(1),
                b"w:tr" => {
                    let cells = rows.pop().unwrap_or_default();
                    let text = cells
                        .into_iter()
                        .filter(|c| !c.is_empty())
                        .collect::<Vec<_>>()
                        .join(" | ");
                    if cell_depth > 0 {
                        // A nested table's row is part of the outer cell.
                        append_to_cell(&mut rows, &text);
                    } else {
                        push_line(&mut out, &mut line, Kind::Body, text);
                    }
                }
                _ => {}
            },
            Event::Eof => return Ok(out),
            _ => {}
        }
    }
}

/// A paragraph's text as written: soft hyphens (U+00AD) dropped, and a word broken with a
/// hyphen at a manual line break joined again (`super::hyphen`).
fn as_written(text: &str) -> String {
    if !text.contains('\n') {
        return super::hyphen::without_soft_hyphens(text).into_owned();
    }
    let hyphens = super::hyphen::Hyphens::none();
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        if out.is_empty() {
            out.push_str(line);
            continue;
        }
        match hyphens.join(&out, line) {
            Some(true) => {
                out.truncate(out.trim_end().len());
                out.pop();
            }
            Some(false) => {
                out.truncate(out.trim_end().len());
            }
            None => out.push(' '),
        }
        out.push_str(line.trim_start());
    }
    super::hyphen::without_soft_hyphens(&out).into_owned()
}

/// Adds `text` to the innermost open table cell (a paragraph in it, or a nested table's row).
fn append_to_cell(rows: &mut [Vec<String>], text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(cell) = rows.last_mut().and_then(|r| r.last_mut()) {
        if !cell.is_empty() {
            cell.push(' ');
        }
        cell.push_str(text);
    }
}

/// A body paragraph or table row: the next line, kept when it has text.
fn push_line(out: &mut Vec<Para>, line: &mut u32, kind: Kind, text: String) {
    *line += 1;
    if !text.is_empty() {
        out.push(Para {
            kind,
            text,
            line: *line,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A DOCX zip holding just `document.xml`.
    fn docx_with(document: &[u8]) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        let deflate = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("word/document.xml", deflate).unwrap();
        zip.write_all(document).unwrap();
        zip.finish().unwrap();
        out.into_inner()
    }

    fn body_of(paragraphs: usize, text: &str) -> Vec<u8> {
        let mut xml = String::from("<w:document><w:body>");
        let p = format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>");
        xml.reserve(paragraphs * p.len());
        for _ in 0..paragraphs {
            xml.push_str(&p);
        }
        xml.push_str("</w:body></w:document>");
        xml.into_bytes()
    }

    /// Regression (hostile documents): 300 KB of DOCX unpacked to 200 MiB of XML, took 1.5 GB
    /// and made 222k chunks. A part over the limit is refused while it is read.
    #[test]
    fn a_zip_bomb_is_refused_not_unpacked() {
        let xml = body_of(2_000_000, "aaaaaaaaaaaaaaaaaaaa");
        assert!(xml.len() as u64 > MAX_XML_BYTES);
        let file = docx_with(&xml);
        assert!(file.len() < 2 << 20, "{} bytes", file.len());
        let e = convert(&file, "bomb").unwrap_err();
        assert!(e.contains("over the limit"), "{e}");
        // A real document still reads.
        let doc = convert(&docx_with(&body_of(3, "hello")), "ok").unwrap();
        assert_eq!(doc.sections[0].blocks.len(), 3);
    }
}
