//! HTML pages as a site serves them: the output of any static-site generator (Sphinx, MkDocs,
//! Hugo, rustdoc, Docusaurus, …) read with its real heading ids, so every result lands on an
//! element that exists.
//!
//! - The content: the element marked `data-docloupe-body`, else `<main>` / `[role=main]`,
//!   else `<body>` without `<nav>`, `<header>`, `<footer>` and `<aside>`; narrowed to the one
//!   `<article>` inside it when there is exactly one (Docusaurus keeps its table of contents
//!   beside the article, in `<main>`). Scripts, styles, templates, navigation, buttons,
//!   hidden elements and anything marked `data-docloupe-ignore` are never read.
//! - Headings `h1`–`h6` are the breadcrumb tree; a heading's anchor is its `id`, else the
//!   `id`/`name` of a link inside it, else the `id` of the innermost element around it that
//!   holds no earlier heading (Sphinx and Javadoc put the id on `<section>`), else its
//!   parent heading's. Never a made-up slug: a slug the page lacks is a link that lands
//!   nowhere.
//! - Title (`<title>`, without a site-name suffix the first `<h1>` shows, else the `<h1>`),
//!   language (`<html lang>`), description, dates (`article:modified_time`,
//!   `article:published_time`, the first `<time datetime>` of the content) and
//!   `data-docloupe-meta` / `data-docloupe-filter` attributes fill the front matter.
//! - Pages marked `noindex` and `<meta http-equiv=refresh>` redirects are not documents.
//!
//! Every string from the page is text (entities decoded once by the parser); nothing of it is
//! ever markup again. Block "lines" are the content's blocks in reading order, 1-based (a
//! served page has no source lines a reader would open).

use docloupe::analyze::Language;
use ego_tree::iter::Edge;
use ego_tree::NodeRef;
use scraper::{Html, Node};

use crate::ingest::{
    assemble_anchored, bounded_label, collapse, normalize_date, Block, FrontMatter, Item,
    ParsedDoc, MAX_ANCHOR_BYTES,
};

/// What the build must know of a page before it converts any: whether the page marks its
/// content (`data-docloupe-body`: on a site where any page does, the pages that do not are
/// not indexed) and the URL it names as canonical (pages naming the same one are indexed
/// once).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Survey {
    pub body_marked: bool,
    pub canonical: Option<String>,
}

/// A page's [`Survey`], by the same reading [`convert`] takes (a marker inside a `<template>`
/// is no more a marker here than there). A page [`convert`] refuses has none.
pub fn survey(text: &str) -> Survey {
    let Ok(html) = parse(text) else {
        return Survey::default();
    };
    let f = facts(&html);
    Survey {
        body_marked: f.marked.is_some(),
        canonical: f.canonical,
    }
}

/// The site's pages that are documents: on a site where any page marks its content
/// (`data-docloupe-body`), only the pages that do; of pages naming the same canonical URL,
/// the one served there (else the first by path). Each page left out is named in `warnings`;
/// files of other formats pass through.
pub fn site_documents(
    files: Vec<crate::ingest::SourceFile>,
    warnings: &mut Vec<String>,
) -> Vec<crate::ingest::SourceFile> {
    use crate::ingest::Format;
    use rayon::prelude::*;
    if !files.iter().any(|f| f.format == Format::Html) {
        return files;
    }
    // A page that cannot be read is left for the conversion to report.
    let surveys: Vec<Option<Survey>> = files
        .par_iter()
        .map(|f| {
            (f.format == Format::Html)
                .then(|| crate::ingest::read_source(f, f.format.max_bytes()).ok())
                .flatten()
                .and_then(|b| super::decode_text(&b).ok().map(|t| survey(&t)))
        })
        .collect();
    let marked = surveys.iter().flatten().any(|s| s.body_marked);
    let mut groups: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, s) in surveys.iter().enumerate() {
        if let Some(c) = s.as_ref().and_then(|s| s.canonical.as_deref()) {
            if !c.is_empty() && (!marked || s.as_ref().is_some_and(|s| s.body_marked)) {
                groups
                    .entry(canonical_key(c, &files[i].rel))
                    .or_default()
                    .push(i);
            }
        }
    }
    let mut dropped = vec![None::<String>; files.len()];
    // The page a server sends for any missing URL (Hugo, Jekyll, VitePress, Docusaurus,
    // mdBook and Sphinx themes all write one): "page not found" answers no question.
    for (i, f) in files.iter().enumerate() {
        if f.format == Format::Html && is_not_found_page(&f.rel) {
            dropped[i] = Some("skipped, it is the site's not-found page".into());
        }
    }
    for (key, members) in &groups {
        if members.len() < 2 {
            continue;
        }
        let keep = members
            .iter()
            .copied()
            .find(|&i| {
                let served = served_path(&files[i].rel);
                key.trim_start_matches('/') == served
                    || (!served.is_empty() && key.ends_with(&format!("/{served}")))
            })
            .unwrap_or(members[0]);
        for &i in members.iter().filter(|&&i| i != keep) {
            dropped[i] = Some(format!(
                "skipped, it names the same canonical URL ({key}) as {}",
                files[keep].rel
            ));
        }
    }
    if marked {
        for (i, s) in surveys.iter().enumerate() {
            if s.as_ref().is_some_and(|s| !s.body_marked) {
                dropped[i] = Some(
                    "skipped, the site marks its content with data-docloupe-body and this page \
                     has none"
                        .into(),
                );
            }
        }
    }
    files
        .into_iter()
        .zip(dropped)
        .filter_map(|(f, why)| match why {
            Some(why) => {
                warnings.push(format!("{}: {why}", f.rel));
                None
            }
            None => Some(f),
        })
        .collect()
}

/// `404.html` (or `404/index.html`) at the site's root.
fn is_not_found_page(rel: &str) -> bool {
    let rel = rel.to_ascii_lowercase();
    ["404.html", "404.htm", "404/index.html", "404/index.htm"].contains(&rel.as_str())
}

/// The path a site serves a page at, relative to its root: `a/index.html` → `a/`,
/// `index.html` → ``, `a.html` → `a.html`.
pub fn served_path(rel: &str) -> &str {
    for index in ["index.html", "index.htm"] {
        if rel == index {
            return "";
        }
        if let Some(dir) = rel.strip_suffix(index) {
            if dir.ends_with('/') {
                return dir;
            }
        }
    }
    rel
}

/// A canonical URL as a path from the site's host (`https://x.org/docs/a/?q#f` → `/docs/a/`),
/// a relative one resolved against the page's own served path.
pub fn canonical_key(canonical: &str, rel: &str) -> String {
    let href = canonical.split(['#', '?']).next().unwrap_or("");
    let path = match href.find("://") {
        Some(i) => match href[i + 3..].find('/') {
            Some(j) => href[i + 3 + j..].to_owned(),
            None => "/".to_owned(),
        },
        None if href.starts_with("//") => match href[2..].find('/') {
            Some(j) => href[2 + j..].to_owned(),
            None => "/".to_owned(),
        },
        None if href.starts_with('/') => href.to_owned(),
        None => {
            let served = served_path(rel);
            let dir = served.rfind('/').map_or("", |i| &served[..=i]);
            format!("/{dir}{href}")
        }
    };
    // `.` and `..` segments, as a browser resolves them.
    let mut parts: Vec<&str> = Vec::new();
    let trailing = path.ends_with('/');
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut key = format!("/{}", parts.join("/"));
    if trailing && key != "/" {
        key.push('/');
    }
    key
}

/// Elements whose text is never a page's content.
fn never_read(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "template"
            | "noscript"
            | "nav"
            | "aside"
            | "footer"
            | "iframe"
            | "object"
            | "embed"
            | "svg"
            | "math"
            | "canvas"
            | "button"
            | "select"
            | "textarea"
            | "input"
            | "head"
            | "title"
            | "dialog"
    )
}

/// Elements that end a block of text where they open and where they close.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "blockquote"
            | "dd"
            | "details"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "form"
            | "header"
            | "hr"
            | "li"
            | "main"
            | "ol"
            | "p"
            | "pre"
            | "section"
            | "summary"
            | "table"
            | "caption"
            | "thead"
            | "tbody"
            | "tfoot"
            | "tr"
            | "ul"
            | "body"
    )
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

fn element<'a>(node: &NodeRef<'a, Node>) -> Option<&'a scraper::node::Element> {
    node.value().as_element()
}

/// Hidden from every reader: `hidden`, `aria-hidden="true"`, `data-docloupe-ignore`.
fn hidden(e: &scraper::node::Element) -> bool {
    e.attr("hidden").is_some()
        || e.attr("data-docloupe-ignore").is_some()
        || e.attr("aria-hidden")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Text that is only a mark (`¶`, `#`, `§`, `🔗`, zero-width spaces): a heading's self link.
fn only_marks(text: &str) -> bool {
    text.chars().all(|c| !c.is_alphanumeric())
}

/// An id usable as an anchor: present, not blank, and not so long that it was cut.
fn usable_id(id: Option<&str>) -> Option<String> {
    let id = id?.trim();
    (!id.is_empty() && id.len() <= MAX_ANCHOR_BYTES && !id.chars().any(char::is_control))
        .then(|| id.to_owned())
}

/// `root`'s edges in document order, less the subtrees [`Walk::prune`] is given: neither a
/// pruned node's own edges nor anything inside it. `root` itself is never pruned. The one
/// walk every reading of a page takes (what is never read stays unread in all of them).
struct Walk<'a> {
    edges: ego_tree::iter::Traverse<'a, Node>,
    root: ego_tree::NodeId,
    pruned: Option<ego_tree::NodeId>,
}

impl<'a> Walk<'a> {
    fn new(root: NodeRef<'a, Node>) -> Self {
        Walk {
            edges: root.traverse(),
            root: root.id(),
            pruned: None,
        }
    }

    /// Leaves out the rest of `node`, whose `Open` edge was just given.
    fn prune(&mut self, node: NodeRef<'a, Node>) {
        if node.id() != self.root {
            self.pruned = Some(node.id());
        }
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = Edge<'a, Node>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let edge = self.edges.next()?;
            match (self.pruned, edge) {
                (None, edge) => return Some(edge),
                (Some(p), Edge::Close(n)) if n.id() == p => self.pruned = None,
                _ => {}
            }
        }
    }
}

/// The text under `node`, whitespace collapsed, without what is never read and without links
/// that are only a mark.
fn text_of(node: NodeRef<'_, Node>) -> String {
    let mut out = String::new();
    let mut walk = Walk::new(node);
    while let Some(edge) = walk.next() {
        match edge {
            Edge::Open(n) => match n.value() {
                Node::Element(e) => {
                    let self_link = e.name() == "a" && only_marks(&raw_text(n));
                    if never_read(e.name()) || hidden(e) || self_link {
                        walk.prune(n);
                    }
                }
                Node::Text(t) => out.push_str(t),
                _ => {}
            },
            Edge::Close(n) => {
                if element(&n).is_some_and(|e| e.name() == "br") {
                    out.push(' ');
                }
            }
        }
    }
    collapse(&out)
}

/// Every text node under `node`, as it is.
fn raw_text(node: NodeRef<'_, Node>) -> String {
    node.descendants()
        .filter_map(|n| n.value().as_text().map(|t| t.to_string()))
        .collect()
}

/// What the head and the attributes of a page say about it.
#[derive(Default)]
struct Facts<'a> {
    title: Option<String>,
    lang: Option<Language>,
    metas: Vec<(String, String)>,
    refresh: bool,
    marked: Option<NodeRef<'a, Node>>,
    main: Option<NodeRef<'a, Node>>,
    role_main: Option<NodeRef<'a, Node>>,
    body: Option<NodeRef<'a, Node>>,
    first_h1: Option<String>,
    /// The first `<link rel=canonical>`'s `href`.
    canonical: Option<String>,
    annotated: Vec<NodeRef<'a, Node>>,
}

fn facts(html: &Html) -> Facts<'_> {
    let mut f = Facts::default();
    let mut walk = Walk::new(html.tree.root());
    while let Some(edge) = walk.next() {
        let Edge::Open(n) = edge else { continue };
        let Some(e) = element(&n) else { continue };
        match e.name() {
            "script" | "style" | "template" | "noscript" => {
                walk.prune(n);
                continue;
            }
            "html" if f.lang.is_none() => {
                f.lang = e.attr("lang").and_then(|l| {
                    let primary = l.split(['-', '_']).next().unwrap_or("");
                    Language::from_code(primary)
                });
            }
            "title" if f.title.is_none() => {
                f.title = Some(collapse(&raw_text(n))).filter(|t| !t.is_empty());
            }
            "meta" => {
                if let Some(content) = e.attr("content") {
                    let content = content.to_owned();
                    if let Some(eq) = e.attr("http-equiv") {
                        if eq.eq_ignore_ascii_case("refresh") {
                            f.refresh = true;
                        }
                    }
                    if let Some(key) = e.attr("name").or_else(|| e.attr("property")) {
                        f.metas.push((key.trim().to_ascii_lowercase(), content));
                    }
                }
            }
            "link"
                if f.canonical.is_none()
                    && e.attr("rel").is_some_and(|r| {
                        r.split_ascii_whitespace()
                            .any(|t| t.eq_ignore_ascii_case("canonical"))
                    }) =>
            {
                f.canonical = e.attr("href").map(|h| h.trim().to_owned());
            }
            "main" if f.main.is_none() => f.main = Some(n),
            "body" if f.body.is_none() => f.body = Some(n),
            "h1" if f.first_h1.is_none() => {
                f.first_h1 = Some(text_of(n)).filter(|t| !t.is_empty());
            }
            _ => {}
        }
        if f.role_main.is_none() && e.attr("role").is_some_and(|r| r.trim() == "main") {
            f.role_main = Some(n);
        }
        if f.marked.is_none() && e.attr("data-docloupe-body").is_some() {
            f.marked = Some(n);
        }
        if e.attr("data-docloupe-meta").is_some() || e.attr("data-docloupe-filter").is_some() {
            f.annotated.push(n);
        }
    }
    f
}

impl Facts<'_> {
    fn meta(&self, key: &str) -> Option<&str> {
        self.metas
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// `key`, `key:value` or `key[attribute]` pairs from a `data-docloupe-meta` or
/// `data-docloupe-filter` attribute, the value of a bare key being the element's text.
fn annotations(node: NodeRef<'_, Node>, attr: &str) -> Vec<(String, String)> {
    let Some(e) = element(&node) else {
        return Vec::new();
    };
    let Some(spec) = e.attr(attr) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for part in spec.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (key, value) = if let Some((k, v)) = part.split_once(':') {
            (k.trim(), v.trim().to_owned())
        } else if let Some((k, a)) = part.strip_suffix(']').and_then(|p| p.split_once('[')) {
            (k.trim(), e.attr(a.trim()).unwrap_or("").trim().to_owned())
        } else {
            (part, text_of(node))
        };
        let value = collapse(&value);
        if !key.is_empty() && !value.is_empty() {
            out.push((key.to_ascii_lowercase(), value));
        }
    }
    out
}

/// Pages nested deeper than this are refused: the parsing algorithm looks through the open
/// elements for every tag, so a page of 100,000 nested `<div>`s took the parser hours.
/// Documentation pages nest a few dozen deep.
pub const MAX_DEPTH: usize = 1024;

/// An upper estimate of how deep `text`'s elements nest, from its tags alone: start tags
/// count, end tags uncount; void elements, self-closed tags and the elements that close
/// implicitly (`p`, `li`, table cells …) do not nest; comments and script or style bodies
/// are skipped.
pub fn nesting_estimate(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut depth, mut max, mut i) = (0usize, 0usize, 0usize);
    let find = |from: usize, pat: &[u8]| {
        b[from.min(b.len())..]
            .windows(pat.len())
            .position(|w| w.eq_ignore_ascii_case(pat))
            .map(|p| from + p)
    };
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        if b[i + 1..].starts_with(b"!--") {
            i = find(i + 4, b"-->").map_or(b.len(), |e| e + 3);
            continue;
        }
        let end_tag = b.get(i + 1) == Some(&b'/');
        let start = i + 1 + end_tag as usize;
        let name_end = b[start..]
            .iter()
            .position(|c| !c.is_ascii_alphanumeric())
            .map_or(b.len(), |p| start + p);
        if name_end == start || !b[start].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let name = text[start..name_end].to_ascii_lowercase();
        let close = b[name_end..]
            .iter()
            .position(|&c| c == b'>')
            .map_or(b.len(), |p| name_end + p);
        let self_closed = close > 0 && b.get(close - 1) == Some(&b'/');
        i = close + 1;
        let flat = matches!(
            name.as_str(),
            "area"
                | "base"
                | "br"
                | "col"
                | "embed"
                | "hr"
                | "img"
                | "input"
                | "link"
                | "meta"
                | "source"
                | "track"
                | "wbr"
                | "param"
                | "p"
                | "li"
                | "dt"
                | "dd"
                | "option"
                | "tr"
                | "td"
                | "th"
                | "html"
                | "head"
                | "body"
        );
        if end_tag {
            if !flat {
                depth = depth.saturating_sub(1);
            }
        } else if !flat && !self_closed {
            depth += 1;
            max = max.max(depth);
            if matches!(name.as_str(), "script" | "style" | "textarea" | "title") {
                let pat = format!("</{name}");
                i = find(i, pat.as_bytes()).unwrap_or(b.len());
            }
        }
    }
    max
}

/// The page's tree, unless it nests deeper than [`MAX_DEPTH`] (refused before it is parsed).
fn parse(text: &str) -> Result<Html, String> {
    let depth = nesting_estimate(text);
    if depth > MAX_DEPTH {
        return Err(format!(
            "its elements nest {depth} deep, over the {MAX_DEPTH} limit"
        ));
    }
    Ok(Html::parse_document(text))
}

/// Converts one HTML page. `Err` for a page that is not a document (noindex, a redirect).
pub fn convert(text: &str, file_stem: &str) -> Result<ParsedDoc, String> {
    let html = parse(text)?;
    let f = facts(&html);
    if f.meta("robots").is_some_and(|r| {
        r.split(',')
            .any(|t| matches!(t.trim().to_ascii_lowercase().as_str(), "noindex" | "none"))
    }) {
        return Err("it is marked noindex (<meta name=\"robots\">)".into());
    }
    if f.refresh {
        return Err("it is a redirect (<meta http-equiv=\"refresh\">)".into());
    }
    // The content root, and whether page furniture (header, footer) is to be left out: it is
    // wherever the page did not say where its content is.
    let (root, furnished) = match (f.marked, f.main.or(f.role_main)) {
        (Some(m), _) => (m, false),
        (None, Some(m)) => (m, false),
        (None, None) => match f.body {
            Some(b) => (b, true),
            None => (html.tree.root(), true),
        },
    };
    let root = if f.marked.is_none() {
        let articles: Vec<_> = root
            .descendants()
            .filter(|n| element(n).is_some_and(|e| e.name() == "article"))
            .take(2)
            .collect();
        match articles.as_slice() {
            [one] => *one,
            _ => root,
        }
    } else {
        root
    };

    let mut front = FrontMatter {
        lang: f.lang,
        description: f
            .meta("description")
            .or_else(|| f.meta("og:description"))
            .map(collapse)
            .filter(|d| !d.is_empty()),
        ..FrontMatter::default()
    };
    let mut created = f.meta("article:published_time").and_then(normalize_date);
    let mut date = f.meta("article:modified_time").and_then(normalize_date);
    if let Some(keywords) = f.meta("keywords") {
        front.tags.extend(keywords.split(',').map(collapse));
    }
    let mut meta_title = None;
    for &node in &f.annotated {
        for (key, value) in annotations(node, "data-docloupe-meta") {
            match key.as_str() {
                "title" => meta_title = Some(value),
                "description" => front.description = Some(value),
                "date" | "modified" | "updated" => date = normalize_date(&value).or(date),
                "created" | "published" => created = normalize_date(&value).or(created),
                "type" => front.kind = Some(value),
                "lang" | "language" => front.lang = Language::from_code(&value).or(front.lang),
                _ => {}
            }
        }
        for (key, value) in annotations(node, "data-docloupe-filter") {
            match key.as_str() {
                "tag" | "tags" => front.tags.push(value),
                "type" => front.kind = Some(value),
                _ => front.tags.push(format!("{key}:{value}")),
            }
        }
    }

    let (items, first_time) = walk(root, furnished);
    if date.is_none() && created.is_none() {
        date = first_time;
    }
    front.date = date.or_else(|| created.clone());
    front.created = created;
    if front.date.is_some() {
        front.date_source = Some(docloupe::bundle::DateSource::FrontMatter);
    }
    for t in &mut front.tags {
        *t = bounded_label(t);
    }
    front.tags.retain(|t| !t.is_empty());
    front.tags.sort();
    front.tags.dedup();
    if let Some(d) = &mut front.description {
        *d = bounded_label(d);
    }

    let title = meta_title
        .or_else(|| {
            let title = f.title.clone()?;
            // "Install — Project 1.0 documentation" over an `<h1>` "Install": the page's own
            // name, without the site's.
            match &f.first_h1 {
                Some(h1) if title.len() > h1.len() && title.starts_with(h1.as_str()) => {
                    let rest = title[h1.len()..].trim_start();
                    if rest.starts_with(['-', '|', '—', '–', '·', ':', '•']) {
                        Some(h1.clone())
                    } else {
                        Some(title)
                    }
                }
                _ => Some(title),
            }
        })
        .or_else(|| f.first_h1.clone())
        .unwrap_or_else(|| file_stem.to_owned());
    let title = bounded_label(&title);
    front.title = Some(title.clone());
    let (sections, outline) = assemble_anchored(&title, items);
    Ok(ParsedDoc {
        front,
        title,
        sections,
        outline,
    })
}

/// The content's headings and blocks in reading order, and the first `<time datetime>` in it.
fn walk(root: NodeRef<'_, Node>, furnished: bool) -> (Vec<Item>, Option<String>) {
    let mut items = Vec::new();
    let mut first_time = None;
    let mut buf = String::new();
    let mut blocks = 0u32;
    let mut pre = 0usize;
    // Open elements with an id, and whether a heading has been seen inside each since.
    let mut ided: Vec<(ego_tree::NodeId, String, bool)> = Vec::new();
    // The anchor of the heading just read, until text follows it (its self link is skipped).
    let mut after_heading: Option<String> = None;

    let flush = |buf: &mut String, items: &mut Vec<Item>, blocks: &mut u32, pre: bool| {
        let text = if pre {
            buf.trim_matches('\n').trim_end().to_owned()
        } else {
            collapse(buf)
        };
        buf.clear();
        if !text.is_empty() {
            *blocks += 1;
            items.push(Item::Block(Block {
                text,
                line_start: *blocks,
                line_end: *blocks,
                page: None,
            }));
        }
    };

    let mut walk = Walk::new(root);
    while let Some(edge) = walk.next() {
        match edge {
            Edge::Open(n) => match n.value() {
                Node::Text(t) => {
                    if !t.trim().is_empty() {
                        after_heading = None;
                    }
                    buf.push_str(t);
                }
                Node::Element(e) => {
                    let name = e.name();
                    if first_time.is_none() && name == "time" {
                        first_time = e.attr("datetime").and_then(normalize_date);
                    }
                    let furniture = furnished && matches!(name, "header" | "footer");
                    let self_link = name == "a"
                        && after_heading.as_ref().is_some_and(|a| {
                            e.attr("href")
                                .is_some_and(|h| h.strip_prefix('#') == Some(a))
                        });
                    if never_read(name) || hidden(e) || furniture || self_link {
                        walk.prune(n);
                        continue;
                    }
                    if let Some(level) = heading_level(name) {
                        flush(&mut buf, &mut items, &mut blocks, pre > 0);
                        let title = text_of(n);
                        let anchor = usable_id(e.attr("id"))
                            .or_else(|| {
                                n.descendants().find_map(|d| {
                                    let de = element(&d).filter(|de| de.name() == "a")?;
                                    usable_id(de.attr("id")).or(usable_id(de.attr("name")))
                                })
                            })
                            .or_else(|| {
                                ided.iter()
                                    .rev()
                                    .find(|(_, _, seen)| !seen)
                                    .map(|(_, id, _)| id.clone())
                            });
                        for entry in &mut ided {
                            entry.2 = true;
                        }
                        if !title.is_empty() {
                            after_heading = anchor.clone();
                            items.push(Item::Heading {
                                level,
                                title,
                                id: anchor,
                                page: None,
                            });
                        }
                        walk.prune(n);
                        continue;
                    }
                    if let Some(id) = usable_id(e.attr("id")) {
                        ided.push((n.id(), id, false));
                    }
                    if name == "pre" {
                        flush(&mut buf, &mut items, &mut blocks, false);
                        pre += 1;
                    } else if is_block(name) {
                        flush(&mut buf, &mut items, &mut blocks, pre > 0);
                    } else if matches!(name, "td" | "th") && !buf.trim().is_empty() {
                        buf.push_str(" | ");
                    }
                }
                _ => {}
            },
            Edge::Close(n) => {
                let Some(e) = element(&n) else { continue };
                let name = e.name();
                if ided.last().is_some_and(|(id, _, _)| *id == n.id()) {
                    ided.pop();
                }
                if name == "br" {
                    buf.push(if pre > 0 { '\n' } else { ' ' });
                } else if name == "pre" {
                    flush(&mut buf, &mut items, &mut blocks, true);
                    pre = pre.saturating_sub(1);
                } else if is_block(name) {
                    flush(&mut buf, &mut items, &mut blocks, pre > 0);
                }
            }
        }
    }
    flush(&mut buf, &mut items, &mut blocks, pre > 0);
    (items, first_time)
}

#[cfg(test)]
mod tests;
