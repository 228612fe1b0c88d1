//! Markdown and plain text into the document model every converter fills ([`ParsedDoc`]:
//! sections of blocks, headings with their anchors, front matter): front matter read with
//! bounds on depth and aliases, tables whose padding would exhaust memory read as text, labels
//! and anchors bounded, and dates normalized.

use std::collections::HashMap;

use docloupe::analyze::Language;
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use yaml_rust2::{Yaml, YamlLoader};

use super::*;

/// Parses one text document (markdown or plain text) by its format. `file_stem` is the title
/// of last resort.
pub fn parse_document(
    format: Format,
    source: &str,
    file_stem: &str,
    warnings: &mut Vec<String>,
    rel: &str,
) -> ParsedDoc {
    match format {
        Format::Markdown => parse_markdown(source, file_stem, warnings, rel),
        _ => parse_text(source, file_stem),
    }
}

/// Plain text: one section of paragraphs (runs of non-blank lines). The title is the first
/// line when it reads like one (short, not ending a sentence), else the file name.
pub fn parse_text(source: &str, file_stem: &str) -> ParsedDoc {
    let source = &*unify_line_ends(source);
    let blocks = paragraphs(source, |_| None);
    let title = title_from_text(
        source.lines().map(str::trim).find(|l| !l.is_empty()),
        file_stem,
    );
    ParsedDoc {
        front: FrontMatter::default(),
        title,
        sections: vec![Section {
            headings: Vec::new(),
            anchor: String::new(),
            blocks,
        }],
        outline: Vec::new(),
    }
}

/// The paragraphs (runs of non-blank lines, joined with spaces) of `source` with their
/// 1-based line ranges; `page_of` gives the page of a byte offset for paged formats.
pub fn paragraphs(source: &str, page_of: impl Fn(usize) -> Option<u32>) -> Vec<Block> {
    paragraphs_joining(source, page_of, |_, _| None)
}

/// [`paragraphs`], where `join(line, next)` says how a line that ends in a broken word
/// continues: `Some(true)` the next line finishes the word (the break character goes),
/// `Some(false)` the word is a compound (its hyphen stays, no space), `None` a space.
pub fn paragraphs_joining(
    source: &str,
    page_of: impl Fn(usize) -> Option<u32>,
    join: impl Fn(&str, &str) -> Option<bool>,
) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    let mut offset = 0;
    for (i, raw) in source.split_inclusive('\n').enumerate() {
        let at = offset;
        offset += raw.len();
        let line = raw.trim();
        let n = i as u32 + 1;
        if line.is_empty() {
            blocks.extend(current.take());
            continue;
        }
        match &mut current {
            Some(b) => {
                match join(&b.text, line) {
                    Some(true) => {
                        b.text.pop();
                    }
                    Some(false) => {
                        b.text.pop();
                        b.text.push('-');
                    }
                    None => b.text.push(' '),
                }
                b.text.push_str(line);
                b.line_end = n;
            }
            None => {
                current = Some(Block {
                    text: line.to_owned(),
                    line_start: n,
                    line_end: n,
                    page: page_of(at),
                })
            }
        }
    }
    blocks.extend(current);
    blocks
}

/// Front matter fields docloupe understands.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FrontMatter {
    pub title: Option<String>,
    pub description: Option<String>,
    /// The document's date, normalized to `YYYY-MM-DD`: when it was last updated (front
    /// matter `updated`/`lastmod`/`modified`, a PDF's ModDate, an Office file's modified),
    /// else when it was made. Date filters and facets read it.
    pub date: Option<String>,
    /// When the document was made (front matter `date`/`created`/`ms.date`, a PDF's
    /// CreationDate, an Office file's created), `YYYY-MM-DD`.
    #[serde(default)]
    pub created: Option<String>,
    /// Where `date` and `created` come from.
    #[serde(default)]
    pub date_source: Option<docloupe::bundle::DateSource>,
    pub tags: Vec<String>,
    /// The page's kind ("tutorial", "reference", ...), from `type`.
    pub kind: Option<String>,
    pub lang: Option<Language>,
    /// The document's entry in `--references` (`citekey`, `citation-key` or `citation_key`).
    pub citekey: Option<String>,
    /// The groups that may read the page (`access: hr` or `access: [hr, legal]`): one of
    /// them is needed, on top of what `--access` asks of its path.
    #[serde(default)]
    pub access: Option<Vec<String>>,
    /// Why an `access:` the page names could not be read: such a page is skipped, never
    /// indexed for every reader.
    #[serde(default)]
    pub access_error: Option<String>,
}

/// A run of text from one top-level markdown block.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Block {
    pub text: String,
    /// 1-based, inclusive.
    pub line_start: u32,
    pub line_end: u32,
    /// The page it is on (paged formats; a block never crosses a page).
    pub page: Option<u32>,
}

/// The text under one heading (or before the first heading).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Section {
    /// Headings from the top of the page down to this one (not including the page title
    /// unless a heading differs from it).
    pub headings: Vec<String>,
    pub anchor: String,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ParsedDoc {
    pub front: FrontMatter,
    pub title: String,
    pub sections: Vec<Section>,
    /// Every heading in document order, sections with no text of their own included (the
    /// level gives the tree).
    pub outline: Vec<Heading>,
}

/// One entry of a document's heading tree.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Heading {
    /// 1 = top.
    pub level: u8,
    pub title: String,
    pub anchor: String,
    /// Where the heading is, for paged formats.
    pub page: Option<u32>,
}

/// The markdown dialect: CommonMark with tables, `{#id}` heading attributes, strikethrough,
/// task lists and footnotes (the site renderer parses with the same, so anchors agree).
pub(crate) fn markdown_options() -> Options {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_HEADING_ATTRIBUTES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    options.insert(Options::ENABLE_FOOTNOTES);
    options
}

/// Table cells a page may make the parser hold, beyond half its length in bytes (every cell
/// written takes at least two bytes, `x|`).
pub(super) const MAX_PADDED_CELLS: usize = 1 << 20;

/// [`markdown_options`] for `body`, without tables when its tables would make the parser
/// hold more than [`MAX_PADDED_CELLS`] cells beyond what the text itself writes: pulldown-cmark
/// pads every short row to its header's width (2^18 cells a table at most, but per table),
/// so 1 MB of 362-column headers over one-character rows asked for 6.3 GB. Such a page is
/// read with its tables as plain text; the second value is the cells its tables would have
/// taken then, for the warning.
pub(crate) fn markdown_options_for(body: &str) -> (Options, Option<usize>) {
    let mut options = markdown_options();
    let cells = table_cells(body);
    if cells > MAX_PADDED_CELLS.saturating_add(body.len() / 2) {
        options.remove(Options::ENABLE_TABLES);
        return (options, Some(cells));
    }
    (options, None)
}

/// An upper bound of the cells the parser makes for `body`'s tables: for each delimiter row
/// (`|---|:-:|`, inside quotes and lists too), its columns times the lines from its header to
/// the next blank line.
pub(super) fn table_cells(body: &str) -> usize {
    let lines: Vec<&str> = body.lines().collect();
    let mut cells = 0usize;
    let mut i = 1;
    while i < lines.len() {
        let Some(columns) = delimiter_columns(lines[i]) else {
            i += 1;
            continue;
        };
        let rows = 1 + lines[i + 1..]
            .iter()
            .take_while(|l| !l.trim().is_empty())
            .count();
        cells = cells.saturating_add(columns.saturating_mul(rows));
        i += rows;
    }
    cells
}

/// The columns of a table's delimiter row (`| --- | :-: |`), or `None` for any other line.
pub(super) fn delimiter_columns(line: &str) -> Option<usize> {
    let row = line.trim_start_matches(|c: char| c.is_whitespace() || c == '>');
    let row = row.trim_end();
    if !row.contains('|') || !row.contains('-') {
        return None;
    }
    if !row
        .chars()
        .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
    {
        return None;
    }
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    Some(inner.split('|').count())
}

/// `source` with every carriage return that ends a line alone (old Mac line ends, `a\rb`)
/// made a line feed: the same length, so byte offsets keep their place, and such a line is a
/// line for the parser and for line numbers, as it is in an editor. `\r\n` stays.
pub fn unify_line_ends(source: &str) -> std::borrow::Cow<'_, str> {
    let bytes = source.as_bytes();
    let lone = |i: usize| bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n');
    if !(0..bytes.len()).any(lone) {
        return std::borrow::Cow::Borrowed(source);
    }
    let unified: Vec<u8> = (0..bytes.len())
        .map(|i| if lone(i) { b'\n' } else { bytes[i] })
        .collect();
    // Only ASCII bytes were exchanged for ASCII bytes.
    std::borrow::Cow::Owned(String::from_utf8(unified).expect("still UTF-8"))
}

/// Titles and headings longer than this (in characters) are cut at a word, with an ellipsis:
/// a breadcrumb names a place, and every chunk of a section carries its breadcrumb (a 64 KiB
/// title over 200 sections made a bundle that no reader would load).
pub const MAX_LABEL_CHARS: usize = 256;

/// `label` cut to [`MAX_LABEL_CHARS`] at a word boundary (with `…`) when longer.
pub fn bounded_label(label: &str) -> String {
    let Some((end, _)) = label.char_indices().nth(MAX_LABEL_CHARS) else {
        return label.to_owned();
    };
    let head = &label[..end];
    let cut = match head.rfind(char::is_whitespace) {
        Some(at) if at >= end / 2 => &head[..at],
        _ => head,
    };
    format!("{}…", cut.trim_end())
}

/// Anchors longer than this (in bytes) are cut: an anchor is a place on a page, and a
/// 64 KiB heading would otherwise make a 64 KiB anchor in every chunk of its section.
pub const MAX_ANCHOR_BYTES: usize = 256;

/// `anchor` cut to at most [`MAX_ANCHOR_BYTES`] bytes at a character boundary.
pub(super) fn bounded_anchor(anchor: &str) -> &str {
    if anchor.len() <= MAX_ANCHOR_BYTES {
        return anchor;
    }
    let mut end = MAX_ANCHOR_BYTES;
    while !anchor.is_char_boundary(end) {
        end -= 1;
    }
    &anchor[..end]
}

/// Where the markdown body starts, after any front matter.
pub(crate) fn body_offset(source: &str) -> usize {
    split_front_matter(source, &mut Vec::new(), "").1
}

/// Parses one markdown file's text. `file_stem` is the title of last resort.
pub fn parse_markdown(
    source: &str,
    file_stem: &str,
    warnings: &mut Vec<String>,
    rel: &str,
) -> ParsedDoc {
    let source = &*unify_line_ends(source);
    let (front, body_offset) = split_front_matter(source, warnings, rel);
    let body = &source[body_offset..];
    let lines = LineIndex::new(source);

    let (options, too_many_cells) = markdown_options_for(body);
    if let Some(cells) = too_many_cells {
        warnings.push(format!(
            "{rel}: its tables would expand to {cells} cells (short rows are padded to their header's width); they are read as plain text"
        ));
    }

    // The document in reading order: headings (with levels and `{#id}`s) and blocks.
    let mut items: Vec<Item> = Vec::new();
    let mut depth = 0usize;
    let mut in_heading: Option<(u8, Option<String>)> = None;
    let mut buf = String::new();
    let mut block_range = 0..0;

    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        let range = range.start + body_offset..range.end + body_offset;
        match event {
            Event::Start(Tag::Heading { level, id, .. }) if depth == 0 => {
                in_heading = Some((level_num(level), id.map(|s| s.to_string())));
                buf.clear();
                depth += 1;
            }
            Event::End(TagEnd::Heading(_)) if depth == 1 && in_heading.is_some() => {
                let (level, id) = in_heading.take().expect("checked");
                items.push(Item::Heading {
                    level,
                    title: collapse(&buf),
                    id,
                    page: None,
                });
                buf.clear();
                depth = 0;
            }
            Event::Start(_) => {
                if depth == 0 {
                    block_range = range;
                    buf.clear();
                }
                depth += 1;
            }
            Event::End(end) => {
                depth = depth.saturating_sub(1);
                match end {
                    TagEnd::Paragraph
                    | TagEnd::Item
                    | TagEnd::TableRow
                    | TagEnd::TableHead
                    | TagEnd::CodeBlock
                        if !buf.ends_with('\n') =>
                    {
                        buf.push('\n')
                    }
                    TagEnd::TableCell => buf.push_str(" | "),
                    _ => {}
                }
                if depth == 0 && in_heading.is_none() {
                    let text = buf.trim().to_owned();
                    if !text.is_empty() && block_range.end > block_range.start {
                        let block = Block {
                            text,
                            line_start: lines.line_of(block_range.start),
                            line_end: lines
                                .line_of(block_range.end.saturating_sub(1).max(block_range.start)),
                            page: None,
                        };
                        items.push(Item::Block(block));
                    }
                    buf.clear();
                }
            }
            Event::Text(t) | Event::Code(t) => buf.push_str(&t),
            Event::SoftBreak => buf.push(' '),
            Event::HardBreak => buf.push('\n'),
            // Raw HTML is markup, not prose; text inside HTML blocks is dropped with it.
            Event::Html(_) | Event::InlineHtml(_) => {}
            Event::Rule if depth == 0 => {}
            _ => {}
        }
    }

    let headings = || {
        items.iter().filter_map(|i| match i {
            Item::Heading { level, title, .. } => Some((*level, title)),
            Item::Block(_) => None,
        })
    };
    let title = front
        .title
        .clone()
        .or_else(|| {
            headings()
                .find(|(level, _)| *level == 1)
                .or_else(|| headings().next())
                .map(|(_, t)| t.clone())
        })
        .filter(|t| !t.is_empty())
        .map(|t| bounded_label(&t))
        .unwrap_or_else(|| file_stem.to_owned());
    let (sections, outline) = assemble(&title, items);
    ParsedDoc {
        front,
        title,
        sections,
        outline,
    }
}

/// A document in reading order, before it is cut into sections: what markdown parsing and
/// every converter produce.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Heading {
        /// 1 = top.
        level: u8,
        title: String,
        /// An explicit anchor (markdown's `{#id}`), else the title's slug.
        id: Option<String>,
        page: Option<u32>,
    },
    Block(Block),
}

/// Sections and the heading tree from a document's items: each heading opens a section whose
/// breadcrumb is the headings above it by level, and whose anchor is its GitHub-style slug
/// (`{#id}` wins; repeats get `-1`, `-2`). A top-level heading that repeats the title (the
/// page's own H1) is kept out of the breadcrumb once. Sections without text are dropped; the
/// heading tree keeps every heading.
pub fn assemble(title: &str, items: Vec<Item>) -> (Vec<Section>, Vec<Heading>) {
    assemble_with(title, items, false)
}

/// [`assemble`] for a page whose anchors exist already (HTML): a heading's `id` is its anchor
/// as it is, repeats included (a browser goes to the first), and a heading without one takes
/// the anchor of the nearest heading above it by level that has one (else the page's top):
/// never a slug the page does not hold.
pub fn assemble_anchored(title: &str, items: Vec<Item>) -> (Vec<Section>, Vec<Heading>) {
    assemble_with(title, items, true)
}

fn assemble_with(title: &str, items: Vec<Item>, verbatim: bool) -> (Vec<Section>, Vec<Heading>) {
    let mut slugs = Slugger::default();
    // The anchors of the headings on `stack`, by level (verbatim mode's inheritance).
    let mut anchors: Vec<(u8, String)> = Vec::new();
    let mut stack: Vec<(u8, String)> = Vec::new();
    let mut outline = Vec::new();
    let mut sections = vec![Section {
        headings: Vec::new(),
        anchor: String::new(),
        blocks: Vec::new(),
    }];
    let mut title_seen = false;
    for item in items {
        match item {
            Item::Heading {
                level,
                title: h,
                id,
                page,
            } => {
                while anchors.last().is_some_and(|(l, _)| *l >= level) {
                    anchors.pop();
                }
                let anchor = match (id, verbatim) {
                    (Some(id), false) => slugs.reserve(&id),
                    (None, false) => slugs.slug(&h),
                    (Some(id), true) => id,
                    (None, true) => anchors.last().map(|(_, a)| a.clone()).unwrap_or_default(),
                };
                anchors.push((level, anchor.clone()));
                let h = bounded_label(&h);
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
                    blocks: Vec::new(),
                });
            }
            Item::Block(b) => sections.last_mut().expect("never empty").blocks.push(b),
        }
    }
    sections.retain(|s| !s.blocks.is_empty());
    (sections, outline)
}

/// A title taken from the text when a document has none of its own: its first line when that
/// reads like one (at most 100 characters, not ending a sentence), else `file_stem`.
pub fn title_from_text(first_line: Option<&str>, file_stem: &str) -> String {
    match first_line.map(collapse) {
        Some(l) if !l.is_empty() && l.chars().count() <= 100 && !l.ends_with('.') => l,
        _ => file_stem.to_owned(),
    }
}

pub(super) fn level_num(level: HeadingLevel) -> u8 {
    level as u8
}

pub(crate) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Byte offset → 1-based line number.
pub(super) struct LineIndex {
    pub(super) starts: Vec<usize>,
}

impl LineIndex {
    pub(super) fn new(s: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(s.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    pub(super) fn line_of(&self, offset: usize) -> u32 {
        (self.starts.partition_point(|&s| s <= offset)).max(1) as u32
    }
}

/// GitHub-style heading slugs: lowercase, letters/digits/`-`/`_` kept, spaces → `-`,
/// repeats get `-1`, `-2`, ...
#[derive(Default)]
pub struct Slugger {
    pub(super) seen: HashMap<String, usize>,
    /// Suffixed candidates tried so far (the regression test counts them).
    pub(super) probes: usize,
}

impl Slugger {
    pub fn slug(&mut self, heading: &str) -> String {
        let base: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        self.reserve(&base)
    }

    /// `base`, or the first free `base-N` after the last one handed out for `base` (github-
    /// slugger's rule). The counter per base only grows, so `## a-1 … ## a-N` followed by N
    /// × `## a` costs N steps in all, not N² (each repeat used to walk the taken suffixes
    /// again).
    pub(crate) fn reserve(&mut self, base: &str) -> String {
        let base = bounded_anchor(base);
        let mut candidate = base.to_owned();
        while self.seen.contains_key(&candidate) {
            let n = self.seen.entry(base.to_owned()).or_insert(0);
            *n += 1;
            candidate = format!("{base}-{n}");
            self.probes += 1;
        }
        self.seen.insert(candidate.clone(), 0);
        candidate
    }
}

/// Splits off a leading `---` YAML block. Returns the front matter and where the markdown
/// body starts (byte offset), so body line numbers stay those of the file.
pub(super) fn split_front_matter(
    source: &str,
    warnings: &mut Vec<String>,
    rel: &str,
) -> (FrontMatter, usize) {
    let start = if source.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = &source[start..];
    let Some(after_open) = rest
        .strip_prefix("---\n")
        .or_else(|| rest.strip_prefix("---\r\n"))
    else {
        return (FrontMatter::default(), start);
    };
    let open_len = rest.len() - after_open.len();
    let mut offset = 0;
    for line in after_open.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = &after_open[..offset];
            let body = start + open_len + offset + line.len();
            return (parse_front_matter(yaml, warnings, rel), body);
        }
        offset += line.len();
    }
    // No closing fence: not front matter, just a thematic break at the top.
    (FrontMatter::default(), start)
}

/// Front matter nested deeper than this is not loaded (real pages nest two or three levels).
pub(super) const MAX_YAML_DEPTH: usize = 32;

/// Why `yaml` is not loaded as a document, if it should not be: it uses aliases (the loader
/// expands each alias into a copy of its anchor, so 500 bytes of nested aliases, a "billion
/// laughs", become gigabytes), or it nests deeper than [`MAX_YAML_DEPTH`] (the loader
/// recurses once per level, and 10 KB of nested `- ` overflowed a worker's stack). Read from
/// the event stream, which the parser makes one event at a time without recursing and which
/// stays as small as the text. A scan error is left for the real load to report.
pub(super) fn yaml_refusal(yaml: &str) -> Option<String> {
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(yaml);
    let mut depth = 0usize;
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) | Err(_) => return None,
            Ok((Event::Alias(_), _)) => {
                return Some("it uses YAML aliases (*name), which docloupe does not expand".into())
            }
            Ok((Event::SequenceStart(..) | Event::MappingStart(..), _)) => {
                depth += 1;
                if depth > MAX_YAML_DEPTH {
                    return Some(format!("it nests deeper than {MAX_YAML_DEPTH} levels"));
                }
            }
            Ok((Event::SequenceEnd | Event::MappingEnd, _)) => depth = depth.saturating_sub(1),
            Ok(_) => {}
        }
    }
}

pub(super) fn parse_front_matter(yaml: &str, warnings: &mut Vec<String>, rel: &str) -> FrontMatter {
    let mut front = read_front_matter(yaml, warnings, rel);
    // Front matter that was not loaded whole may have lost an `access:` (a list, or a value
    // past the line that broke it): a page that names one is not indexed for everyone.
    let names_access = yaml.lines().any(|l| {
        let l = l.trim_start_matches(['"', '\'']);
        l.strip_prefix("access")
            .is_some_and(|rest| rest.trim_start_matches(['"', '\'']).starts_with(':'))
    });
    if front.access.is_none() && front.access_error.is_none() && names_access {
        front.access_error =
            Some("its front matter names `access:`, which could not be read".into());
    }
    front
}

fn read_front_matter(yaml: &str, warnings: &mut Vec<String>, rel: &str) -> FrontMatter {
    let loaded = match yaml_refusal(yaml) {
        Some(why) => Err(why),
        None => YamlLoader::load_from_str(yaml).map_err(|e| format!("it is not valid YAML ({e})")),
    };
    let docs = match loaded {
        Ok(d) => d,
        Err(e) => {
            // Real docs sets carry front matter that only lenient parsers accept (e.g. a flow
            // list continued at column 1). Keep what is unambiguous: the scalar lines.
            warnings.push(format!(
                "{rel}: front matter was not loaded: {e}; only its simple `key: value` lines were read"
            ));
            let simple: String = yaml
                .lines()
                .filter(|l| {
                    let Some((key, value)) = l.split_once(": ") else {
                        return false;
                    };
                    // A scalar: no flow collection, no alias, after any anchor or tag.
                    let value = value.trim_start();
                    let value = match value.strip_prefix(['&', '!']) {
                        Some(rest) => rest.split_once(' ').map_or("", |(_, v)| v).trim_start(),
                        None => value,
                    };
                    !l.starts_with([' ', '\t', '-', '"', '[', '#'])
                        && !value.starts_with(['[', '{', '*', '&', '!'])
                        && key
                            .chars()
                            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
                })
                .map(|l| format!("{l}\n"))
                .collect();
            // Simple lines hold scalars only (no collection, no alias), so nothing in them can
            // multiply or nest; checked all the same.
            if yaml_refusal(&simple).is_some() {
                return FrontMatter::default();
            }
            match YamlLoader::load_from_str(&simple) {
                Ok(d) => d,
                Err(_) => return FrontMatter::default(),
            }
        }
    };
    let Some(doc) = docs.into_iter().next() else {
        return FrontMatter::default();
    };
    let text = |key: &str| match &doc[key] {
        Yaml::String(s) => Some(collapse(s)).filter(|s| !s.is_empty()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        _ => None,
    };
    let first_date = |keys: &[&str]| {
        keys.iter()
            .filter_map(|k| text(k))
            .find_map(|d| normalize_date(&d))
    };
    let created = first_date(&["date", "created", "ms.date"]);
    let date = first_date(&["updated", "lastmod", "modified"]).or_else(|| created.clone());
    let mut tags = Vec::new();
    for key in ["tags", "keywords"] {
        match &doc[key] {
            Yaml::Array(items) => {
                tags.extend(items.iter().filter_map(|i| i.as_str().map(collapse)))
            }
            Yaml::String(s) => tags.extend(s.split(',').map(collapse)),
            _ => {}
        }
    }
    tags.retain(|t| !t.is_empty());
    tags.sort();
    tags.dedup();
    let (access, access_error) = match front_matter_access(&doc["access"]) {
        Ok(a) => (a, None),
        Err(why) => (None, Some(why)),
    };
    FrontMatter {
        access,
        access_error,
        title: text("title"),
        description: text("description"),
        date_source: (date.is_some() || created.is_some())
            .then_some(docloupe::bundle::DateSource::FrontMatter),
        date,
        created,
        tags,
        kind: text("type"),
        lang: text("lang")
            .or_else(|| text("language"))
            .and_then(|l| Language::from_code(&l)),
        citekey: ["citekey", "citation-key", "citation_key"]
            .iter()
            .find_map(|k| text(k)),
    }
}

/// The groups of an `access:` key: a name, names separated by commas or spaces, or a list of
/// names; `None` without the key. Anything else (a number, a mapping, an empty list, a name
/// that cannot be a group) is an error, which skips the page.
fn front_matter_access(value: &Yaml) -> Result<Option<Vec<String>>, String> {
    let names: Vec<String> = match value {
        Yaml::BadValue => return Ok(None),
        Yaml::String(s) => s
            .split([',', ' '])
            .filter(|g| !g.is_empty())
            .map(str::to_owned)
            .collect(),
        Yaml::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or(()))
            .collect::<Result<_, ()>>()
            .map_err(|()| "`access:` lists something that is not a group name".to_owned())?,
        _ => return Err("`access:` must be a group name or a list of them".into()),
    };
    if names.is_empty() {
        return Err("`access:` names no group".into());
    }
    if let Some(bad) = names.iter().find(|g| !docloupe::bundle::valid_group(g)) {
        let bad: String = bad.chars().take(70).collect();
        return Err(format!(
            "`access:` group {bad:?} is not a group name (1 to {} letters, digits, '-', '_', '.', '@')",
            docloupe::bundle::MAX_GROUP_CHARS
        ));
    }
    Ok(Some(names))
}

/// A date from a file's own metadata (PDF info, Office and OpenDocument properties),
/// normalized; the Unix epoch (`1970-01-01`), which writers put where no date was set, is
/// no date.
pub fn metadata_date(s: &str) -> Option<String> {
    normalize_date(s).filter(|d| d != "1970-01-01")
}

/// `2024-03-05`, `2024-03-05T10:00:00Z`, `2024/03/05` or US `03/05/2024` → `2024-03-05`.
pub fn normalize_date(s: &str) -> Option<String> {
    let s = s.trim();
    let nums: Vec<&str> = s
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .take(3)
        .collect();
    if nums.len() < 3 {
        return None;
    }
    let (y, m, d) = if nums[0].len() == 4 {
        (nums[0], nums[1], nums[2])
    } else if nums[2].len() == 4 {
        (nums[2], nums[0], nums[1])
    } else {
        return None;
    };
    let (y, m, d): (u32, u32, u32) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || !(1900..=2200).contains(&y) {
        return None;
    }
    Some(format!("{y:04}-{m:02}-{d:02}"))
}
