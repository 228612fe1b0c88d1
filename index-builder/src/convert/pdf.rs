//! PDF: the text of each page (pdf-extract's layout-aware text output on lopdf), pages
//! joined by a blank line so no paragraph crosses a page; headings from the outline
//! (bookmarks) when the file has one, placed at the paragraph that opens with the heading's
//! text on its page (else at the top of that page). Lines are lines of the extracted text.

use std::collections::{BTreeMap, BTreeSet};

use lopdf::{Dictionary, Document, Object, ObjectId};
use pdf_extract::PlainTextOutput;

use super::{parsed, PageMap, PageRange};
use crate::ingest::{collapse, paragraphs_joining, title_from_text, Item, ParsedDoc};

pub fn convert(
    bytes: &[u8],
    file_stem: &str,
    rel: &str,
    warnings: &mut Vec<String>,
) -> Result<(ParsedDoc, PageMap), String> {
    check_xref_widths(bytes)?;
    let mut doc = Document::load_mem(bytes).map_err(|e| match e {
        lopdf::Error::Decryption(_) => "encrypted PDF (it needs a password)".to_owned(),
        e => format!("broken PDF: {e}"),
    })?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err("encrypted PDF (it needs a password)".into());
    }
    let pages: Vec<(u32, ObjectId)> = doc.get_pages().into_iter().collect();
    if pages.is_empty() {
        return Err("broken PDF: it has no pages".into());
    }
    check_streams(&doc)?;
    // The outline and the document information are read before the page tree is rewired.
    let outline = outline(&doc);
    let info = doc
        .trailer
        .get(b"Info")
        .and_then(|o| doc.dereference(o))
        .ok()
        .and_then(|(_, o)| o.as_dict().ok());
    let info_text = |key: &[u8]| {
        info.and_then(|d| d.get(key).ok())
            .and_then(|t| lopdf::decode_text_string(t).ok())
    };
    let info_title = info_text(b"Title")
        .map(|t| collapse(&t))
        .filter(|t| !t.is_empty());
    let created = info_text(b"CreationDate").and_then(|d| pdf_date(&d));
    let modified = info_text(b"ModDate").and_then(|d| pdf_date(&d));

    let mut text = String::new();
    let mut map = PageMap::default();
    let mut unreadable = Vec::new();
    let mut tree = SoloPageTree::new(&mut doc, &pages)?;
    // The first page with text is also read for its layout (lines and type sizes), which the
    // title is chosen from.
    let mut first_page: Option<Vec<Glyph>> = None;
    for &(number, id) in &pages {
        let mut page = String::new();
        let mut glyphs = first_page.is_none().then(Vec::new);
        if tree.extract(id, &mut page, glyphs.as_mut()).is_err() {
            unreadable.push(number);
            continue;
        }
        if first_page.is_none() && !page.trim().is_empty() {
            first_page = glyphs;
        }
        let page = page.trim();
        if page.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        if text.len() + page.len() > MAX_TEXT_BYTES {
            return Err(format!(
                "its text passes {} MiB (at page {number}), over the limit",
                MAX_TEXT_BYTES >> 20
            ));
        }
        let start = text.len();
        text.push_str(page);
        map.pages.push(PageRange {
            page: number,
            start,
            end: text.len(),
        });
    }
    if text.trim().is_empty() {
        return Err(if unreadable.len() == pages.len() {
            "broken PDF: the text of none of its pages could be extracted".into()
        } else {
            "no extractable text in this PDF (scanned images only? run OCR on it first)".into()
        });
    }
    if !unreadable.is_empty() {
        let mut listed: Vec<String> = unreadable.iter().take(20).map(u32::to_string).collect();
        if unreadable.len() > listed.len() {
            listed.push(format!("and {} more", unreadable.len() - listed.len()));
        }
        warnings.push(format!(
            "{rel}: the text of page(s) {} could not be extracted; the other pages are indexed",
            listed.join(", ")
        ));
    }

    // Words broken across lines are joined again, soft hyphens inside lines dropped (`hyphen`).
    let hyphens = super::hyphen::Hyphens::of(&text);
    let mut blocks = paragraphs_joining(
        &text,
        |offset| map.page_at(offset),
        |line, next| hyphens.join(line, next),
    );
    for b in &mut blocks {
        if let std::borrow::Cow::Owned(t) = super::hyphen::without_soft_hyphens(&b.text) {
            b.text = t;
        }
    }
    // The title: from the first page's structure and layout, the title property where it is
    // the document's own (`title.rs`); never the outline's first entry ("1 Introduction").
    let lines = first_page.map(|g| layout_lines(&g)).unwrap_or_default();
    let head: String = text.chars().take(super::dates::SCAN_CHARS).collect();
    let title = super::title::choose(&super::title::Evidence {
        property: info_title.as_deref(),
        lines: &lines,
        styled: None,
        text: &head,
    })
    .unwrap_or_else(|| {
        title_from_text(
            text.lines().map(str::trim).find(|l| !l.is_empty()),
            file_stem,
        )
    });

    let mut parsed = parsed(title, place_headings(blocks, outline));
    super::dated(&mut parsed.front, &head, created, modified);
    Ok((parsed, map))
}

/// The page tree rewired so that pdf-extract reads each page in constant time and never
/// walks a cycle. pdf-extract's `output_doc_page` fetches the whole page list again for every
/// page (extraction was quadratic: 10,000 pages took about a minute, 25,000 never ended), and
/// looks up a page's inherited `Resources` and `MediaBox` along `/Parent` without looking
/// back (a 554-byte file whose page-tree node is its own parent spun until the converter was
/// stopped). So each page first gets its inherited attributes written into it, read up the
/// tree once with every node visited at most once; then, one page at a time, the catalog's
/// page tree is a single node holding only that page, which is page 1.
struct SoloPageTree<'a> {
    doc: &'a mut Document,
    /// The one-page node.
    solo: ObjectId,
}

/// The page attributes pdf-extract inherits from the page tree.
const INHERITED: [&[u8]; 2] = [b"Resources", b"MediaBox"];

/// Nodes walked up from a page at most (real trees are a few levels deep).
const MAX_TREE_DEPTH: usize = 64;

impl<'a> SoloPageTree<'a> {
    fn new(doc: &'a mut Document, pages: &[(u32, ObjectId)]) -> Result<SoloPageTree<'a>, String> {
        for &(_, page) in pages {
            let mut found: Vec<(&[u8], Object)> = Vec::new();
            for key in INHERITED {
                let mut seen = BTreeSet::from([page]);
                let mut node = doc.get_dictionary(page).ok();
                while let Some(dict) = node {
                    if let Ok(value) = dict.get(key) {
                        found.push((key, value.clone()));
                        break;
                    }
                    let parent = dict.get(b"Parent").and_then(Object::as_reference).ok();
                    node = parent
                        .filter(|&p| seen.len() < MAX_TREE_DEPTH && seen.insert(p))
                        .and_then(|p| doc.get_dictionary(p).ok());
                }
            }
            let Ok(dict) = doc.get_dictionary_mut(page) else {
                continue;
            };
            for (key, value) in found {
                dict.set(key, value);
            }
            // A page with no media box anywhere above it is read as US Letter (pdf-extract
            // would stop on it).
            if !dict.has(b"MediaBox") {
                dict.set("MediaBox", vec![0.into(), 0.into(), 612.into(), 792.into()]);
            }
        }
        let solo = doc.new_object_id();
        doc.catalog_mut()
            .map_err(|e| format!("broken PDF: {e}"))?
            .set("Pages", solo);
        Ok(SoloPageTree { doc, solo })
    }

    /// Appends the text of the page `id` to `out`, and its glyphs to `glyphs` when given. A
    /// page pdf-extract cannot read, or stops on (it asserts on some malformed content), is an
    /// error; the other pages are read.
    fn extract(
        &mut self,
        id: ObjectId,
        out: &mut String,
        glyphs: Option<&mut Vec<Glyph>>,
    ) -> Result<(), ()> {
        let mut node = Dictionary::new();
        node.set("Type", Object::Name(b"Pages".to_vec()));
        node.set("Kids", vec![Object::Reference(id)]);
        node.set("Count", 1);
        self.doc.objects.insert(self.solo, Object::Dictionary(node));
        self.doc
            .get_dictionary_mut(id)
            .map_err(|_| ())?
            .set("Parent", self.solo);
        let doc: &Document = self.doc;
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match glyphs {
            Some(glyphs) => pdf_extract::output_doc_page(
                doc,
                &mut Recording {
                    text: PlainTextOutput::new(&mut *out),
                    glyphs,
                },
                1,
            ),
            None => pdf_extract::output_doc_page(doc, &mut PlainTextOutput::new(&mut *out), 1),
        }));
        match read {
            Ok(Ok(())) => Ok(()),
            _ => Err(()),
        }
    }
}

/// One character as pdf-extract places it on a page: its position (PDF units, y up), its
/// advance and its type size.
#[derive(Debug, Clone)]
struct Glyph {
    x: f64,
    y: f64,
    end: f64,
    size: f64,
    text: String,
}

/// Pages at most this many glyphs long are kept for layout (a title page is far shorter).
const MAX_LAYOUT_GLYPHS: usize = 20_000;

/// The plain-text output, and each glyph's place and size beside it.
struct Recording<'a, 'b> {
    text: PlainTextOutput<&'a mut String>,
    glyphs: &'b mut Vec<Glyph>,
}

impl pdf_extract::OutputDev for Recording<'_, '_> {
    fn begin_page(
        &mut self,
        page: u32,
        media_box: &pdf_extract::MediaBox,
        art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), pdf_extract::OutputError> {
        self.text.begin_page(page, media_box, art_box)
    }

    fn end_page(&mut self) -> Result<(), pdf_extract::OutputError> {
        self.text.end_page()
    }

    fn output_character(
        &mut self,
        trm: &pdf_extract::Transform,
        width: f64,
        spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), pdf_extract::OutputError> {
        if self.glyphs.len() < MAX_LAYOUT_GLYPHS {
            // The size as pdf-extract measures it: the side of the square of the same area as
            // the font size's box under the text matrix.
            let (vx, vy) = (
                font_size * (trm.m11 + trm.m21),
                font_size * (trm.m12 + trm.m22),
            );
            let size = (vx * vy).abs().sqrt();
            self.glyphs.push(Glyph {
                x: trm.m31,
                y: trm.m32,
                end: trm.m31 + width * size,
                size,
                text: char.to_owned(),
            });
        }
        self.text
            .output_character(trm, width, spacing, font_size, char)
    }

    fn begin_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        self.text.begin_word()
    }

    fn end_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        self.text.end_word()
    }

    fn end_line(&mut self) -> Result<(), pdf_extract::OutputError> {
        self.text.end_line()
    }
}

/// A page's glyphs as lines, top to bottom: a glyph more than half its size above or below
/// the line's baseline starts another line; a gap wider than a tenth of the size is a space.
/// Each line's size is its largest glyph's.
fn layout_lines(glyphs: &[Glyph]) -> Vec<super::title::Line> {
    struct Open {
        y: f64,
        end: f64,
        size: f64,
        text: String,
    }
    let mut lines: Vec<Open> = Vec::new();
    for g in glyphs {
        let same = lines.last().is_some_and(|l| {
            (g.y - l.y).abs() <= g.size.max(l.size) * 0.5 && g.x >= l.end - l.size
        });
        if !same {
            lines.push(Open {
                y: g.y,
                end: g.end,
                size: g.size,
                text: String::new(),
            });
        }
        let line = lines.last_mut().expect("pushed");
        if !line.text.is_empty() && g.x > line.end + g.size * 0.1 {
            line.text.push(' ');
        }
        line.text.push_str(&g.text);
        line.end = g.end;
        line.size = line.size.max(g.size);
    }
    // Content streams need not draw top to bottom: order by height, keeping the drawing order
    // among lines at one height.
    lines.sort_by(|a, b| b.y.total_cmp(&a.y));
    lines
        .into_iter()
        .map(|l| super::title::Line::new(collapse(&l.text), l.size as f32))
        .filter(|l| !l.text.is_empty())
        .collect()
}

/// A PDF date (`D:20240305103000+01'00'`, the `D:` and everything after the day optional) as
/// `YYYY-MM-DD`; a month or day left out is the first.
fn pdf_date(s: &str) -> Option<String> {
    let digits: String = s
        .trim()
        .trim_start_matches("D:")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if digits.len() < 4 {
        return None;
    }
    let part = |from: usize| digits.get(from..from + 2).unwrap_or("01");
    crate::ingest::metadata_date(&format!("{}-{}-{}", &digits[..4], part(4), part(6)))
}

/// Text extracted from one PDF at most (the text formats' limit).
const MAX_TEXT_BYTES: usize = crate::ingest::MAX_FILE_BYTES as usize;
/// One stream may inflate to this much, all of a file's streams together to the second.
const MAX_STREAM_BYTES: u64 = 64 << 20;
const MAX_STREAMS_BYTES: u64 = 256 << 20;

/// Largest field width an xref stream's `/W` may give. The fields are big-endian integers
/// (PDF 32000 §7.5.8.2), eight bytes at most in any real file; a CIDFont's `/W` (glyph
/// widths: CIDs below 65,536, widths in thousandths of an em) stays far below this too.
const MAX_XREF_FIELD_BYTES: u64 = 1 << 20;

/// lopdf reads an xref stream by allocating a buffer of each of its `/W` field widths before
/// it reads a byte: `/W [1 4 2666978747572656]` asked for 2.6 PB and aborted the process
/// (found by fuzzing). When every width is 0, it loops over the `/Index` counts (up to
/// 2^63) without reading anything. The raw file is scanned for any `/W` array of integers
/// (its name spelled with `#` escapes too, comments between the tokens, as lopdf parses
/// them) before lopdf sees it; one with a width over [`MAX_XREF_FIELD_BYTES`], or whose three
/// widths are all 0, refuses the file. Strings are not skipped, so a `/W` written inside one
/// counts as well: the scan may refuse more than lopdf would read, never less.
fn check_xref_widths(bytes: &[u8]) -> Result<(), String> {
    let is_regular = |c: u8| !b" \t\n\r\0\x0C()<>[]{}/%".contains(&c);
    let skip_space = |mut at: usize| {
        while let Some(&c) = bytes.get(at) {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b'\0' | b'\x0C' => at += 1,
                b'%' => {
                    while bytes.get(at).is_some_and(|&c| c != b'\n' && c != b'\r') {
                        at += 1;
                    }
                }
                _ => break,
            }
        }
        at
    };
    let mut at = 0;
    while let Some(slash) = bytes[at..].iter().position(|&c| c == b'/') {
        at += slash + 1;
        // The name, its `#xx` escapes decoded (a `#` without two hex digits ends it).
        let mut name = [0u8; 2];
        let mut len = 0;
        loop {
            match bytes.get(at) {
                Some(b'#') => match bytes.get(at + 1..at + 3) {
                    Some(&[h, l]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                        let digit = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
                        if len < 2 {
                            name[len] = digit(h) << 4 | digit(l);
                        }
                        len += 1;
                        at += 3;
                    }
                    _ => break,
                },
                Some(&c) if is_regular(c) => {
                    if len < 2 {
                        name[len] = c;
                    }
                    len += 1;
                    at += 1;
                }
                _ => break,
            }
        }
        if len != 1 || name[0] != b'W' {
            continue;
        }
        let mut i = skip_space(at);
        if bytes.get(i) != Some(&b'[') {
            continue;
        }
        i += 1;
        let mut widths = Vec::new();
        loop {
            i = skip_space(i);
            match bytes.get(i) {
                Some(b']') => break,
                Some(&c) if c == b'+' || c == b'-' || c.is_ascii_digit() => {
                    let negative = c == b'-';
                    if !c.is_ascii_digit() {
                        i += 1;
                    }
                    let mut value = 0u64;
                    let start = i;
                    while let Some(d) = bytes.get(i).filter(|d| d.is_ascii_digit()) {
                        value = value.saturating_mul(10).saturating_add(u64::from(d - b'0'));
                        i += 1;
                    }
                    if i == start {
                        break;
                    }
                    widths.push(if negative { 0 } else { value });
                }
                // Anything else (a nested array, a real number): lopdf refuses the array as
                // an xref stream's widths before allocating.
                _ => {
                    widths.clear();
                    break;
                }
            }
        }
        let fields = &widths[..widths.len().min(3)];
        if let Some(&w) = fields.iter().find(|&&w| w > MAX_XREF_FIELD_BYTES) {
            return Err(format!(
                "broken PDF: an xref stream field of {w} bytes (/W), over the limit"
            ));
        }
        if fields.len() == 3 && fields.iter().all(|&w| w == 0) {
            return Err("broken PDF: an xref stream whose fields are all 0 bytes wide (/W)".into());
        }
    }
    Ok(())
}

/// Measures what every Flate stream the text extractor may read (all but images) inflates
/// to, with a bound, before lopdf inflates them without one: a 1 MB file of deflated spaces
/// held 2.1 GB. Over [`MAX_STREAM_BYTES`] for one or [`MAX_STREAMS_BYTES`] in all, the file is
/// refused.
fn check_streams(doc: &Document) -> Result<(), String> {
    let mut total = 0u64;
    for stream in doc.objects.values().filter_map(|o| o.as_stream().ok()) {
        let image = stream
            .dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .is_ok_and(|n| n == b"Image");
        let flate = stream
            .filters()
            .is_ok_and(|f| f.first().is_some_and(|&f| f == b"FlateDecode"));
        if image || !flate {
            continue;
        }
        let inflated = inflated_size(&stream.content, MAX_STREAM_BYTES + 1);
        total += inflated;
        if inflated > MAX_STREAM_BYTES || total > MAX_STREAMS_BYTES {
            return Err(format!(
                "its compressed streams unpack to more than {} MiB, over the limit (a decompression bomb?)",
                if inflated > MAX_STREAM_BYTES { MAX_STREAM_BYTES } else { MAX_STREAMS_BYTES } >> 20
            ));
        }
    }
    Ok(())
}

/// How many bytes `deflated` (zlib) inflates to, counting at most `limit`; a corrupt stream
/// counts what came out before the error.
fn inflated_size(deflated: &[u8], limit: u64) -> u64 {
    use std::io::Read;
    let mut decoder = flate2::read::ZlibDecoder::new(deflated).take(limit);
    let mut buf = [0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        match decoder.read(&mut buf) {
            Ok(0) | Err(_) => return n,
            Ok(k) => n += k as u64,
        }
    }
}

/// At most this many outline entries are read (real books have a few thousand).
const MAX_OUTLINE_ENTRIES: usize = 10_000;
/// Outline levels below this are not descended into.
const MAX_OUTLINE_DEPTH: usize = 32;
/// References followed to reach a destination, and name-tree nodes read to look one up.
const MAX_HOPS: usize = 8;
const MAX_NAME_TREE_NODES: usize = 10_000;

/// The outline (bookmarks) as (level 1..=6, title, page), in reading order. lopdf's
/// `get_toc` recurses along `/First` and loops along `/Next` without looking back, so an
/// outline whose entry points at itself overflowed the stack or ran out of memory (851 bytes
/// did it). This walk is iterative, visits each entry once, and stops at
/// [`MAX_OUTLINE_ENTRIES`] entries and [`MAX_OUTLINE_DEPTH`] levels. Entries whose
/// destination is not a page of this file are left out.
fn outline(doc: &Document) -> Vec<(u8, String, u32)> {
    let page_of: BTreeMap<ObjectId, u32> =
        doc.get_pages().into_iter().map(|(n, id)| (id, n)).collect();
    let Ok(catalog) = doc.catalog() else {
        return Vec::new();
    };
    let Some(first) = catalog
        .get(b"Outlines")
        .ok()
        .and_then(|o| dict_of(doc, o))
        .and_then(|d| d.get(b"First").ok())
        .and_then(|o| o.as_reference().ok())
    else {
        return Vec::new();
    };
    let mut names = NamedDests::new(doc, catalog);
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    // Depth-first, pre-order: an entry, then its children, then its next sibling.
    let mut stack = vec![(first, 1usize)];
    while let Some((id, level)) = stack.pop() {
        if seen.len() >= MAX_OUTLINE_ENTRIES || !seen.insert(id) {
            continue;
        }
        let Ok(node) = doc.get_dictionary(id) else {
            continue;
        };
        if let Some(next) = node.get(b"Next").ok().and_then(|o| o.as_reference().ok()) {
            stack.push((next, level));
        }
        if level < MAX_OUTLINE_DEPTH {
            if let Some(child) = node.get(b"First").ok().and_then(|o| o.as_reference().ok()) {
                stack.push((child, level + 1));
            }
        }
        let title = node
            .get(b"Title")
            .ok()
            .and_then(|t| deref(doc, t))
            .and_then(|t| lopdf::decode_text_string(t).ok())
            .map(|t| collapse(&t))
            .unwrap_or_default();
        let target = node.get(b"Dest").ok().or_else(|| {
            let action = node.get(b"A").ok().and_then(|a| dict_of(doc, a))?;
            let kind = action.get(b"S").ok()?.as_name().ok()?;
            (kind == b"GoTo").then(|| action.get(b"D").ok()).flatten()
        });
        let page = target
            .and_then(|t| names.page_ref(t))
            .and_then(|id| page_of.get(&id).copied());
        if let (false, Some(page)) = (title.is_empty(), page) {
            out.push((level.clamp(1, 6) as u8, title, page));
        }
    }
    out
}

/// Follows references (at most [`MAX_HOPS`]) to a direct object.
fn deref<'a>(doc: &'a Document, mut o: &'a Object) -> Option<&'a Object> {
    for _ in 0..MAX_HOPS {
        match o {
            Object::Reference(id) => o = doc.get_object(*id).ok()?,
            direct => return Some(direct),
        }
    }
    None
}

fn dict_of<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Dictionary> {
    deref(doc, o)?.as_dict().ok()
}

/// Named destinations (the catalog's `/Dests`, or the `/Names /Dests` name tree), read only
/// when an entry names one, each tree node once.
struct NamedDests<'a> {
    doc: &'a Document,
    catalog: &'a Dictionary,
    map: Option<BTreeMap<Vec<u8>, &'a Object>>,
}

impl<'a> NamedDests<'a> {
    fn new(doc: &'a Document, catalog: &'a Dictionary) -> Self {
        NamedDests {
            doc,
            catalog,
            map: None,
        }
    }

    /// The page object a destination (an array, a name, or a `{/D …}` dictionary) points to.
    fn page_ref(&mut self, target: &'a Object) -> Option<ObjectId> {
        let mut target = deref(self.doc, target)?;
        for _ in 0..MAX_HOPS {
            match target {
                Object::Array(a) => return a.first()?.as_reference().ok(),
                Object::Dictionary(d) => target = deref(self.doc, d.get(b"D").ok()?)?,
                Object::String(name, _) | Object::Name(name) => {
                    let found = *self.names().get(name.as_slice())?;
                    target = deref(self.doc, found)?;
                }
                _ => return None,
            }
        }
        None
    }

    fn names(&mut self) -> &BTreeMap<Vec<u8>, &'a Object> {
        let (doc, catalog) = (self.doc, self.catalog);
        self.map.get_or_insert_with(|| {
            let mut map = BTreeMap::new();
            if let Some(dests) = catalog.get(b"Dests").ok().and_then(|o| dict_of(doc, o)) {
                for (k, v) in dests.iter() {
                    map.insert(k.clone(), v);
                }
            }
            let tree = catalog
                .get(b"Names")
                .ok()
                .and_then(|o| dict_of(doc, o))
                .and_then(|n| n.get(b"Dests").ok());
            let mut stack: Vec<&Object> = tree.into_iter().collect();
            let mut seen = BTreeSet::new();
            while let Some(node) = stack.pop() {
                if seen.len() >= MAX_NAME_TREE_NODES {
                    break;
                }
                if let Object::Reference(id) = node {
                    if !seen.insert(*id) {
                        continue;
                    }
                }
                let Some(node) = dict_of(doc, node) else {
                    continue;
                };
                if let Ok(kids) = node.get(b"Kids").and_then(Object::as_array) {
                    stack.extend(kids.iter());
                }
                if let Ok(pairs) = node.get(b"Names").and_then(Object::as_array) {
                    for pair in pairs.chunks_exact(2) {
                        if let Ok(key) = pair[0].as_str() {
                            map.entry(key.to_vec()).or_insert(&pair[1]);
                        }
                    }
                }
            }
            map
        })
    }
}

/// `text` (lowercase) without a leading section number ("2.1 ", "3. ", "a.3. ", "iv. "),
/// which outlines often leave out of the heading.
fn unnumbered(text: &str) -> &str {
    let Some((first, rest)) = text.split_once(' ') else {
        return text;
    };
    let lead = first.chars().take_while(|c| c.is_ascii_lowercase()).count();
    let (letters, tail) = first.split_at(lead);
    let letters_ok = lead <= 1 || letters.chars().all(|c| "ivxlcdm".contains(c));
    let tail_ok = tail.chars().all(|c| c.is_ascii_digit() || c == '.');
    let marked = first.contains('.') || first.chars().any(|c| c.is_ascii_digit());
    if first.len() <= 8 && letters_ok && tail_ok && marked {
        rest.trim_start()
    } else {
        text
    }
}

/// Interleaves outline entries with the paragraphs: each heading goes before the first
/// paragraph on its page that starts with the heading's words, else before the page's first
/// paragraph. Entries are taken in outline order and never move backwards.
fn place_headings(blocks: Vec<crate::ingest::Block>, outline: Vec<(u8, String, u32)>) -> Vec<Item> {
    let norm = |s: &str| collapse(s).to_lowercase();
    let mut at: Vec<usize> = Vec::with_capacity(outline.len());
    let mut from = 0;
    for (_, title, page) in &outline {
        let on_page = |b: &&crate::ingest::Block| b.page == Some(*page);
        let wanted = norm(title);
        let pos = blocks[from..]
            .iter()
            .position(|b| {
                let text = norm(&b.text);
                on_page(&b) && (text.starts_with(&wanted) || unnumbered(&text).starts_with(&wanted))
            })
            .or_else(|| blocks[from..].iter().position(|b| b.page >= Some(*page)))
            .map_or(blocks.len(), |p| from + p);
        at.push(pos);
        from = pos;
    }
    let mut items = Vec::with_capacity(blocks.len() + outline.len());
    let mut headings = outline.into_iter().zip(at).peekable();
    for (i, block) in blocks.into_iter().enumerate() {
        while let Some(((level, title, page), _)) = headings.next_if(|(_, pos)| *pos == i) {
            items.push(Item::Heading {
                level,
                title,
                id: None,
                page: Some(page),
            });
        }
        items.push(Item::Block(block));
    }
    for ((level, title, page), _) in headings {
        items.push(Item::Heading {
            level,
            title,
            id: None,
            page: Some(page),
        });
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{dictionary, Stream};

    /// A one-page PDF whose content stream is `content`, deflated; an outline of `entries`
    /// titles, each entry's `Next` the following one (`cycle_at`: that entry's `First` points
    /// at itself).
    fn pdf(content: &[u8], entries: &[&str], cycle_at: Option<usize>) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let mut stream = Stream::new(dictionary! {}, content.to_vec());
        stream.compress().unwrap();
        let contents = doc.add_object(stream);
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => contents,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(
                dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 },
            ),
        );
        let outlines = doc.new_object_id();
        let ids: Vec<ObjectId> = entries.iter().map(|_| doc.new_object_id()).collect();
        for (i, title) in entries.iter().enumerate() {
            let mut d = dictionary! {
                "Title" => Object::string_literal(*title),
                "Parent" => outlines,
                "Dest" => vec![page.into(), "Fit".into()],
            };
            if let Some(next) = ids.get(i + 1) {
                d.set("Next", *next);
            }
            if cycle_at == Some(i) {
                d.set("First", ids[i]);
            }
            doc.objects.insert(ids[i], Object::Dictionary(d));
        }
        let mut o = dictionary! { "Type" => "Outlines" };
        if let Some(first) = ids.first() {
            o.set("First", *first);
        }
        doc.objects.insert(outlines, Object::Dictionary(o));
        let catalog = doc.add_object(
            dictionary! { "Type" => "Catalog", "Pages" => pages_id, "Outlines" => outlines },
        );
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    const TEXT: &[u8] = b"BT /F1 12 Tf 72 700 Td (Chapter one text) Tj ET";

    /// Regression (hostile documents): an outline entry whose `First` is itself overflowed
    /// lopdf's stack (851 bytes); each entry is now read once.
    #[test]
    fn a_cyclic_outline_is_walked_once() {
        let file = pdf(TEXT, &["One", "Two"], Some(0));
        let doc = Document::load_mem(&file).unwrap();
        let entries: Vec<String> = outline(&doc).into_iter().map(|e| e.1).collect();
        assert_eq!(entries, ["One", "Two"]);
        let (parsed, _) = convert(&file, "f", "f.pdf", &mut Vec::new()).unwrap();
        let titles: Vec<&str> = parsed.outline.iter().map(|h| h.title.as_str()).collect();
        assert_eq!(titles, ["One", "Two"]);
    }

    /// Regression (hostile documents): 1 MB of deflated spaces took 2.1 GB to extract. A
    /// stream that inflates past the limit is refused before anything inflates it in full.
    #[test]
    fn a_decompression_bomb_is_refused() {
        let mut content = TEXT.to_vec();
        content.extend(std::iter::repeat_n(
            b' ',
            (MAX_STREAM_BYTES + 1024) as usize,
        ));
        let file = pdf(&content, &[], None);
        assert!(file.len() < 1 << 20, "{} bytes", file.len());
        let e = convert(&file, "bomb", "bomb.pdf", &mut Vec::new()).unwrap_err();
        assert!(e.contains("decompression bomb"), "{e}");
        assert!(convert(&pdf(TEXT, &[], None), "ok", "ok.pdf", &mut Vec::new()).is_ok());
    }

    /// Regression (fuzzing, pdf target): an xref stream's `/W [1 4 2666978747572656 2]` made
    /// lopdf allocate 2.6 PB and abort; widths that are all 0 loop over `/Index` without
    /// reading. Both are refused before lopdf reads the file, however the name is spelled.
    #[test]
    fn an_xref_stream_with_absurd_field_widths_is_refused() {
        let mut doc = Document::load_mem(&pdf(TEXT, &[], None)).unwrap();
        let mut file = Vec::new();
        let options = lopdf::SaveOptions::builder().use_xref_streams(true).build();
        doc.save_with_options(&mut file, options).unwrap();
        assert!(convert(&file, "ok", "ok.pdf", &mut Vec::new()).is_ok());
        let at = file.windows(2).rposition(|w| w == b"/W").unwrap();
        let end = at + file[at..].iter().position(|&c| c == b']').unwrap() + 1;
        for widths in [
            &b"/W [1 4 2666978747572656 2]"[..],
            b"/W[18888888888888 4 2]",
            b"/#57 % a comment\n[1 66666666664 2]",
            b"/W [0 0 0]",
        ] {
            let mut hostile = file[..at].to_vec();
            hostile.extend_from_slice(widths);
            hostile.extend_from_slice(&file[end..]);
            let e = convert(&hostile, "x", "x.pdf", &mut Vec::new()).unwrap_err();
            assert!(e.contains("xref stream"), "{e}");
        }
        // A CIDFont's glyph widths are a `/W` array too, and stay readable.
        for fine in [
            &b"<< /Type /Font /W [1 [500 600] 3 100 1000] >>"[..],
            b"<</W[1 100 2000]>>",
            b"<</Wx [0 0 0] /W [1 2 1]>>",
        ] {
            assert_eq!(check_xref_widths(fine), Ok(()));
        }
    }

    #[test]
    fn section_numbers_are_not_part_of_the_heading() {
        assert_eq!(unnumbered("2.1 asn.1 syntax"), "asn.1 syntax");
        assert_eq!(unnumbered("3. usage"), "usage");
        assert_eq!(unnumbered("a.3. annex"), "annex");
        assert_eq!(unnumbered("iv. results"), "results");
        assert_eq!(unnumbered("b. appendix"), "appendix");
        assert_eq!(unnumbered("the results"), "the results");
        assert_eq!(unnumbered("asn.1 syntax"), "asn.1 syntax");
        assert_eq!(unnumbered("i.e. this"), "i.e. this");
        assert_eq!(unnumbered("version"), "version");
    }
}
