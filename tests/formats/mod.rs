//! Fixture writers: the tests make their own PDF, DOCX and XLSX files with real writer
//! crates (lopdf, docx-rs, rust_xlsxwriter), so nothing downloaded is committed and every
//! fixture says in code what it holds.

#![allow(dead_code)]

use lopdf::content::{Content, Operation};
use lopdf::{
    dictionary, Bookmark, Document, EncryptionState, EncryptionVersion, Object, Permissions, Stream,
};

/// A page of a PDF: paragraphs, each a list of lines.
pub type Page<'a> = &'a [&'a [&'a str]];

/// A PDF with one page per entry of `pages` (Helvetica 12 pt; a wider gap between
/// paragraphs), an outline of `(level, title, page index)` bookmarks, and `title` in its
/// document information.
pub fn pdf(pages: &[Page], outline: &[(u8, &str, usize)], title: Option<&str>) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut page_ids = Vec::new();
    for paragraphs in pages {
        let mut ops = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 770.into()]),
        ];
        for (p, lines) in paragraphs.iter().enumerate() {
            if p > 0 {
                ops.push(Operation::new("Td", vec![0.into(), (-30).into()]));
            }
            for (l, line) in lines.iter().enumerate() {
                if l > 0 {
                    ops.push(Operation::new("Td", vec![0.into(), (-14).into()]));
                }
                ops.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
            }
        }
        ops.push(Operation::new("ET", vec![]));
        let content = Content { operations: ops };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        page_ids.push(doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        }));
    }
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => page_ids.iter().map(|id| Object::from(*id)).collect::<Vec<_>>(),
            "Count" => page_ids.len() as i64,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let mut parents: Vec<(u8, u32)> = Vec::new();
    for (level, text, page) in outline {
        while parents.last().is_some_and(|(l, _)| l >= level) {
            parents.pop();
        }
        let parent = parents.last().map(|(_, id)| *id);
        let id = doc.add_bookmark(
            Bookmark::new(text.to_string(), [0.0, 0.0, 0.0], 0, page_ids[*page]),
            parent,
        );
        parents.push((*level, id));
    }
    let mut catalog = dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    };
    if let Some(outline_id) = doc.build_outline() {
        catalog.set("Outlines", outline_id);
    }
    let catalog_id = doc.add_object(catalog);
    doc.trailer.set("Root", catalog_id);
    if let Some(t) = title {
        let info = doc.add_object(dictionary! { "Title" => Object::string_literal(t) });
        doc.trailer.set("Info", info);
    }
    doc.compress();
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A line of a [`pdf_typeset`] page: its type size and its text (any Unicode).
pub type SetLine<'a> = (f32, &'a str);

/// A PDF whose pages are lines of any script, each at its own type size, top to bottom (a
/// blank line, `(0.0, "")`, leaves a paragraph's gap), as typesetters write Russian text: one
/// simple font whose codes stand for the characters used, read back through its `ToUnicode`
/// map. `info` goes into the document information (`Title`, `CreationDate`, …).
pub fn pdf_typeset(pages: &[&[SetLine]], info: &[(&str, &str)]) -> Vec<u8> {
    let mut chars: Vec<char> = pages
        .iter()
        .flat_map(|p| p.iter())
        .flat_map(|(_, t)| t.chars())
        .collect();
    chars.sort();
    chars.dedup();
    assert!(chars.len() < 255, "{} distinct characters", chars.len());
    let code = |c: char| (chars.binary_search(&c).unwrap() + 1) as u8;
    let mut cmap = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
         /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
         /CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n\
         1 begincodespacerange\n<00> <FF>\nendcodespacerange\n",
    );
    for block in chars.chunks(100) {
        cmap.push_str(&format!("{} beginbfchar\n", block.len()));
        for &c in block {
            let mut units = [0u16; 2];
            let hex: String = c
                .encode_utf16(&mut units)
                .iter()
                .map(|u| format!("{u:04X}"))
                .collect();
            cmap.push_str(&format!("<{:02X}> <{hex}>\n", code(c)));
        }
        cmap.push_str("endbfchar\n");
    }
    cmap.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let to_unicode = doc.add_object(Stream::new(dictionary! {}, cmap.into_bytes()));
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "FirstChar" => 1,
        "LastChar" => chars.len() as i64,
        "Widths" => vec![Object::Integer(520); chars.len()],
        "ToUnicode" => to_unicode,
    });
    let mut page_ids = Vec::new();
    for lines in pages {
        let mut ops = vec![
            Operation::new("BT", vec![]),
            Operation::new("Td", vec![60.into(), 790.into()]),
        ];
        for (size, text) in lines.iter() {
            let size = if *size > 0.0 { *size } else { 11.0 };
            ops.push(Operation::new("Tf", vec!["F1".into(), size.into()]));
            ops.push(Operation::new("Td", vec![0.into(), (-(size * 1.5)).into()]));
            if !text.is_empty() {
                let bytes: Vec<u8> = text.chars().map(code).collect();
                ops.push(Operation::new(
                    "Tj",
                    vec![Object::String(bytes, lopdf::StringFormat::Hexadecimal)],
                ));
            }
        }
        ops.push(Operation::new("ET", vec![]));
        let content = Content { operations: ops };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        page_ids.push(doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        }));
    }
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => page_ids.iter().map(|id| Object::from(*id)).collect::<Vec<_>>(),
            "Count" => page_ids.len() as i64,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font_id } },
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    if !info.is_empty() {
        let mut d = lopdf::Dictionary::new();
        for (k, v) in info {
            d.set(
                *k,
                Object::String(utf16_text(v), lopdf::StringFormat::Hexadecimal),
            );
        }
        let info_id = doc.add_object(d);
        doc.trailer.set("Info", info_id);
    }
    doc.compress();
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A PDF text string in UTF-16BE with its byte order mark (any script).
fn utf16_text(s: &str) -> Vec<u8> {
    let mut out = vec![0xFE, 0xFF];
    for u in s.encode_utf16() {
        out.extend(u.to_be_bytes());
    }
    out
}

/// `pdf` with `CreationDate` and `ModDate` (PDF date strings, `D:YYYYMMDDHHmmSS…`) in its
/// document information.
pub fn pdf_dated(pdf: &[u8], created: &str, modified: &str) -> Vec<u8> {
    let mut doc = Document::load_mem(pdf).unwrap();
    let info = doc.add_object(dictionary! {
        "CreationDate" => Object::string_literal(created),
        "ModDate" => Object::string_literal(modified),
    });
    doc.trailer.set("Info", info);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// `pdf` encrypted (RC4, 128-bit key) with an owner password and `user_password` ("" opens it
/// for reading without a password, as owner-only protected files are).
pub fn encrypted_pdf(pdf: &[u8], user_password: &str) -> Vec<u8> {
    let mut doc = Document::load_mem(pdf).unwrap();
    // The key derivation uses the file identifier, which an encrypted file must carry.
    let id = Object::String(
        b"docloupe-fixture".to_vec(),
        lopdf::StringFormat::Hexadecimal,
    );
    doc.trailer.set("ID", vec![id.clone(), id]);
    let state = EncryptionState::try_from(EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner secret",
        user_password,
        key_length: 128,
        permissions: Permissions::all(),
    })
    .unwrap();
    doc.encrypt(&state).unwrap();
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A DOCX of `(style, text)` paragraphs: style "" is body text, "Title", "Heading1",
/// "Heading2", … the built-in styles; plus one table of `table` rows after them.
pub fn docx(paragraphs: &[(&str, &str)], table: &[&[&str]]) -> Vec<u8> {
    docx_dated(paragraphs, table, None)
}

/// [`docx`] with `(created, modified)` (W3CDTF, `2024-02-10T12:00:00Z`) in its core
/// properties; without them docx-rs writes the Unix epoch there.
pub fn docx_dated(
    paragraphs: &[(&str, &str)],
    table: &[&[&str]],
    dates: Option<(&str, &str)>,
) -> Vec<u8> {
    use docx_rs::{Docx, Paragraph, Run, Style, StyleType, Table, TableCell, TableRow};
    let mut d = Docx::new()
        .add_style(Style::new("Title", StyleType::Paragraph).name("Title"))
        .add_style(Style::new("Heading1", StyleType::Paragraph).name("heading 1"))
        .add_style(Style::new("Heading2", StyleType::Paragraph).name("heading 2"));
    for (style, text) in paragraphs {
        let mut p = Paragraph::new().add_run(Run::new().add_text(*text));
        if !style.is_empty() {
            p = p.style(style);
        }
        d = d.add_paragraph(p);
    }
    if !table.is_empty() {
        let rows = table
            .iter()
            .map(|cells| {
                TableRow::new(
                    cells
                        .iter()
                        .map(|c| {
                            TableCell::new()
                                .add_paragraph(Paragraph::new().add_run(Run::new().add_text(*c)))
                        })
                        .collect(),
                )
            })
            .collect();
        d = d.add_table(Table::new(rows));
    }
    if let Some((created, modified)) = dates {
        d = d.created_at(created).updated_at(modified);
    }
    let mut out = std::io::Cursor::new(Vec::new());
    d.build().pack(&mut out).unwrap();
    out.into_inner()
}

/// An XLSX with one worksheet per `(name, rows)`. A value that parses as a number is written
/// as a number, one shaped `YYYY-MM-DD` as a date cell (a serial number with a date format,
/// as Excel stores dates), anything else as text.
pub fn xlsx(sheets: &[(&str, &[&[&str]])]) -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let date_format = rust_xlsxwriter::Format::new().set_num_format("yyyy-mm-dd");
    for (name, rows) in sheets {
        let sheet = book.add_worksheet();
        sheet.set_name(*name).unwrap();
        for (r, row) in rows.iter().enumerate() {
            let (r, cells) = (r as u32, row.iter().enumerate());
            for (c, value) in cells {
                let c = c as u16;
                let ymd: Vec<&str> = value.split('-').collect();
                if let (Ok(n), false) = (value.parse::<f64>(), value.is_empty()) {
                    sheet.write_number(r, c, n).unwrap();
                } else if ymd.len() == 3
                    && ymd[0].len() == 4
                    && ymd.iter().all(|p| p.parse::<u16>().is_ok())
                {
                    let date = rust_xlsxwriter::ExcelDateTime::from_ymd(
                        ymd[0].parse().unwrap(),
                        ymd[1].parse().unwrap(),
                        ymd[2].parse().unwrap(),
                    )
                    .unwrap();
                    sheet
                        .write_datetime_with_format(r, c, &date, &date_format)
                        .unwrap();
                } else {
                    sheet.write_string(r, c, *value).unwrap();
                }
            }
        }
    }
    book.save_to_buffer().unwrap()
}

/// Hostile files (issue 24): each was once enough to stop a whole build.
pub mod hostile {
    use lopdf::{Document, Object};

    /// A workbook with two cells, at A1 and at XFD1048576, the last cell a sheet can have:
    /// 1.5 KB that a dense read turns into 17·10⁹ cells.
    pub fn xlsx_far_corners() -> Vec<u8> {
        let mut book = rust_xlsxwriter::Workbook::new();
        let sheet = book.add_worksheet();
        sheet.write_string(0, 0, "corner").unwrap();
        sheet.write_string(1_048_575, 16_383, "far corner").unwrap();
        book.save_to_buffer().unwrap()
    }

    /// `pdf` with its first outline entry's `key` (`First` or `Next`) pointing at itself: a
    /// cycle that recursed without end (`First`: stack overflow) or looped (`Next`: memory).
    pub fn pdf_outline_cycle(pdf: &[u8], key: &str) -> Vec<u8> {
        let mut doc = Document::load_mem(pdf).unwrap();
        let outlines = doc
            .catalog()
            .unwrap()
            .get(b"Outlines")
            .unwrap()
            .as_reference()
            .unwrap();
        let first = doc
            .get_dictionary(outlines)
            .unwrap()
            .get(b"First")
            .unwrap()
            .as_reference()
            .unwrap();
        doc.get_dictionary_mut(first)
            .unwrap()
            .set(key, Object::Reference(first));
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }
}
