//! PDF: the text of each page (pdf-extract's layout-aware text output on lopdf), pages
//! joined by a blank line so no paragraph crosses a page; headings from the outline
//! (bookmarks) when the file has one, placed at the paragraph that opens with the heading's
//! text on its page (else at the top of that page). Lines are lines of the extracted text.

use lopdf::Document;
use pdf_extract::PlainTextOutput;

use super::{parsed, PageMap, PageRange};
use crate::ingest::{collapse, paragraphs, title_from_text, Item, ParsedDoc};

pub fn convert(
    bytes: &[u8],
    file_stem: &str,
    rel: &str,
    warnings: &mut Vec<String>,
) -> Result<(ParsedDoc, PageMap), String> {
    let mut doc = Document::load_mem(bytes).map_err(|e| match e {
        lopdf::Error::Decryption(_) => "encrypted PDF (it needs a password)".to_owned(),
        e => format!("broken PDF: {e}"),
    })?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err("encrypted PDF (it needs a password)".into());
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err("broken PDF: it has no pages".into());
    }

    let mut text = String::new();
    let mut map = PageMap::default();
    let mut unreadable = Vec::new();
    for &number in pages.keys() {
        let mut page = String::new();
        let result =
            pdf_extract::output_doc_page(&doc, &mut PlainTextOutput::new(&mut page), number);
        if result.is_err() {
            unreadable.push(number);
            continue;
        }
        let page = page.trim();
        if page.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let start = text.len();
        text.push_str(page);
        map.pages.push(PageRange {
            page: number,
            start,
            end: text.len(),
        });
    }
    if !unreadable.is_empty() {
        warnings.push(format!(
            "{rel}: the text of page(s) {} could not be extracted; the other pages are indexed",
            unreadable
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if text.trim().is_empty() {
        return Err(
            "no extractable text in this PDF (scanned images only? run OCR on it first)".into(),
        );
    }

    let blocks = paragraphs(&text, |offset| map.page_at(offset));
    let outline: Vec<(u8, String, u32)> = doc
        .get_toc()
        .map(|toc| {
            toc.toc
                .into_iter()
                .map(|t| (t.level.clamp(1, 6) as u8, collapse(&t.title), t.page as u32))
                .filter(|(_, t, _)| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();

    let info_title = doc
        .trailer
        .get(b"Info")
        .and_then(|o| doc.dereference(o))
        .ok()
        .and_then(|(_, o)| o.as_dict().ok())
        .and_then(|d| d.get(b"Title").ok())
        .and_then(|t| lopdf::decode_text_string(t).ok())
        .map(|t| collapse(&t))
        .filter(|t| !t.is_empty());
    // The first line of the first page is usually the title; the first outline entry is
    // usually "1 Introduction".
    let title = info_title.unwrap_or_else(|| {
        title_from_text(
            text.lines().map(str::trim).find(|l| !l.is_empty()),
            file_stem,
        )
    });

    Ok((parsed(title, place_headings(blocks, outline)), map))
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
