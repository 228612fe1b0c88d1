//! How a response reads: in a terminal (`--format text`, colours on a TTY) and as markdown
//! (`--format markdown`, and the text the MCP tools return beside their structured content).
//! Both group results per document, as `search_documents` does, and keep what a reader needs
//! to go to the source: the breadcrumb, `path:line` and the anchor.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;

use docloupe::search::documents::marked_with;
use docloupe::search::ContextChunk;
use docloupe::{SearchResponse, SearchResult};

/// Which part of the ranking an answer shows, for its header line.
pub struct Page {
    /// Documents (or, for a contract request, results) ranked before this page.
    offset: usize,
    /// At most this many documents are shown.
    limit: usize,
    /// `offset` counts results (`search_docs`' contract `offset`), not documents.
    in_results: bool,
    /// Results in the whole ranking (the contract's `total`), when `offset` counts results.
    total_results: usize,
}

impl Page {
    /// `limit` documents after the first `offset` (`search`, `search_documents`).
    pub fn documents(offset: usize, limit: usize) -> Page {
        Page {
            offset,
            limit,
            in_results: false,
            total_results: 0,
        }
    }

    /// The page of results a contract request asked for (`search_docs`).
    pub fn results(r: &SearchResponse, request: &serde_json::Value) -> Page {
        Page {
            offset: request
                .get("offset")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0) as usize,
            limit: usize::MAX,
            in_results: true,
            total_results: r.total,
        }
    }

    /// The number the page's first document is listed under (1 on the first page).
    fn first_number(&self) -> usize {
        if self.in_results {
            1
        } else {
            self.offset + 1
        }
    }

    /// "3 of 12 documents", "documents 11–20 of 34", "document 7 of 7", "results 51–60 of
    /// 120 (34 documents)".
    fn header(&self, r: &SearchResponse, shown: usize) -> String {
        let documents: usize = r.facets.document_types.values().sum();
        match (self.offset, self.in_results) {
            (0, _) => format!("{shown} of {documents} documents"),
            (_, false) if shown == 0 => {
                format!("no documents after {} of {documents}", self.offset)
            }
            (o, false) if shown == 1 => format!("document {} of {documents}", o + 1),
            (o, false) => format!("documents {}–{} of {documents}", o + 1, o + shown),
            (_, true) if r.results.is_empty() => {
                format!("no results after {} of {}", self.offset, self.total_results)
            }
            (o, true) => format!(
                "results {}–{} of {} ({documents} documents)",
                o + 1,
                o + r.results.len(),
                self.total_results
            ),
        }
    }
}

/// Results grouped by document, in the order of each document's best result; at most
/// `max_docs` documents.
fn by_document(r: &SearchResponse, max_docs: usize) -> Vec<Vec<&SearchResult>> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<&str, Vec<&SearchResult>> = BTreeMap::new();
    for res in &r.results {
        let doc = res.document_path.as_str();
        if !groups.contains_key(doc) {
            if order.len() == max_docs {
                continue;
            }
            order.push(doc);
        }
        groups.entry(doc).or_default().push(res);
    }
    order
        .into_iter()
        .map(|d| groups.remove(d).unwrap_or_default())
        .collect()
}

/// "hybrid, reranked" and the like, plus why it fell back.
fn strategy(r: &SearchResponse) -> String {
    let name = match r.applied_strategy.as_str() {
        docloupe::search::response::STRATEGY_RERANK => "hybrid, reranked",
        docloupe::search::response::STRATEGY_HYBRID => "hybrid",
        docloupe::search::response::STRATEGY_FULLTEXT => "fulltext",
        docloupe::search::response::STRATEGY_SEMANTIC => "semantic",
        other => other,
    };
    match &r.degraded_reason {
        Some(why) => format!("{name}; fallback: {why}"),
        None => name.to_owned(),
    }
}

/// Where to find a result: `path:line#anchor`, or `path p. 12#page=12` for paged formats,
/// followed by its citation (`[@key, p. 12]`) when the document has one.
fn location(res: &SearchResult) -> String {
    match res.cite() {
        Some(cite) => format!("{}  {cite}", place(res)),
        None => place(res),
    }
}

fn place(res: &SearchResult) -> String {
    let anchor = if res.anchor.is_empty() {
        String::new()
    } else {
        format!("#{}", res.anchor)
    };
    if let Some(pages) = res.pages() {
        return format!("{} {pages}{anchor}", res.document_path);
    }
    if res.line_start == res.line_end {
        format!("{}:{}{anchor}", res.document_path, res.line_start)
    } else {
        format!(
            "{}:{}-{}{anchor}",
            res.document_path, res.line_start, res.line_end
        )
    }
}

/// The signals the answer's strategy computed (a keyword-only answer has no cosine).
fn scores(r: &SearchResponse, res: &SearchResult) -> String {
    let s = &res.ranking_signals;
    let lexical_only = r.applied_strategy == docloupe::search::response::STRATEGY_FULLTEXT
        || matches!(
            r.degraded_reason.as_deref(),
            Some("models_loading" | "models_unavailable")
        );
    let semantic = if lexical_only {
        String::new()
    } else {
        format!(", cos {:.2}", s.semantic)
    };
    format!(
        "score {:.3} (bm25 {:.2}{semantic}{})",
        res.score,
        s.lexical,
        s.rerank
            .map(|p| format!(", rerank {p:.2}"))
            .unwrap_or_default()
    )
}

/// The terminal rendering.
pub fn text(
    out: &mut impl Write,
    r: &SearchResponse,
    page: &Page,
    color: bool,
) -> std::io::Result<()> {
    let (bold, dim, hl, reset) = if color {
        ("\x1b[1m", "\x1b[2m", "\x1b[1;33m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    // Everything below from the documents or the request goes through `printable`: a title
    // holding `ESC]0;…BEL` would retitle the terminal window, `ESC[2J` clear it.
    let p = printable;
    let groups = by_document(r, page.limit);
    writeln!(
        out,
        "{dim}{} for {:?} ({}, {:.0} ms){reset}",
        page.header(r, groups.len()),
        p(&r.query),
        strategy(r),
        r.timings.total_ms
    )?;
    if !r.suggestions.is_empty() {
        writeln!(
            out,
            "{dim}did you mean: {}{reset}",
            p(&r.suggestions.join(" | "))
        )?;
    }
    for (i, hits) in groups.iter().enumerate() {
        let first = hits[0];
        let date = date_suffix(first);
        writeln!(out)?;
        writeln!(
            out,
            "{bold}{}. {}{reset}  {dim}{} · {}{}{reset}",
            page.first_number() + i,
            p(&first.title),
            p(&first.document_path),
            p(&first.document_type),
            p(&date)
        )?;
        for res in hits {
            writeln!(out, "   {bold}{}{reset}", p(&res.section_path.join(" › ")))?;
            writeln!(
                out,
                "   {dim}{}  {}{reset}",
                p(&location(res)),
                scores(r, res)
            )?;
            let (before, after) = neighbours(res);
            for ctx in before {
                writeln!(out, "   {dim}… {}{reset}", p(&context_line(ctx)))?;
            }
            match &res.text {
                // Asked for with --max-chars-per-chunk: the text to quote, as it is.
                Some(text) => writeln!(out, "   {}", p(text))?,
                None => writeln!(
                    out,
                    "   {}",
                    marked_with(res, hl, reset, |t| p(t).into_owned())
                )?,
            }
            for ctx in after {
                writeln!(out, "   {dim}… {}{reset}", p(&context_line(ctx)))?;
            }
        }
    }
    Ok(())
}

/// `s` as a terminal can show it without obeying it: every C0 and C1 control but newline and
/// tab (escape sequences: window titles, clearing the screen, OSC 52 clipboard writes, OSC 8
/// links), DEL, and every bidi control (which reorders what a reader sees) is replaced with
/// U+FFFD. For the human formats (text, markdown, `stats`); JSON escapes on its own.
pub fn printable(s: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || docloupe::bundle::is_bidi_control(c)
    };
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| if unsafe_char(c) { '\u{FFFD}' } else { c })
            .collect(),
    )
}

/// A result's context chunks (asked for with `includeContext` / `--context`): those before
/// it and those after it.
fn neighbours(res: &SearchResult) -> (Vec<&ContextChunk>, Vec<&ContextChunk>) {
    let all = res.context.iter().flatten();
    all.partition(|c| c.position == "before")
}

/// Longest piece of a context chunk the text and markdown outputs show (characters).
const CONTEXT_CHARS: usize = 300;

/// A context chunk on one line, its location first, cut at a word near [`CONTEXT_CHARS`].
fn context_line(c: &ContextChunk) -> String {
    let flat = c.text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = if flat.chars().count() > CONTEXT_CHARS {
        let head: String = flat.chars().take(CONTEXT_CHARS).collect();
        let at = head.rfind(' ').unwrap_or(head.len());
        format!("{}…", &head[..at])
    } else {
        flat
    };
    let place = match c.page_start {
        Some(p) => format!("p. {p}"),
        None => format!("line {}", c.line_start),
    };
    format!("({} {place}) {cut}", c.position)
}

/// Markdown: pastes cleanly into a chat or an issue. Links are relative to the collection.
/// Nothing in it can drive a terminal ([`printable`]).
pub fn markdown(r: &SearchResponse, page: &Page) -> String {
    printable(&markdown_raw(r, page)).into_owned()
}

fn markdown_raw(r: &SearchResponse, page: &Page) -> String {
    let groups = by_document(r, page.limit);
    let mut md = format!(
        "**{}** for “{}” · {} · {:.0} ms\n",
        page.header(r, groups.len()),
        escape(&r.query),
        strategy(r),
        r.timings.total_ms
    );
    if !r.suggestions.is_empty() {
        let s: Vec<String> = r
            .suggestions
            .iter()
            .map(|s| format!("“{}”", escape(s)))
            .collect();
        md.push_str(&format!("\nDid you mean {}?\n", s.join(", ")));
    }
    for (i, hits) in groups.iter().enumerate() {
        let first = hits[0];
        let date = date_suffix(first);
        md.push_str(&format!(
            "\n{}. **{}** — `{}` · {}{date}\n",
            page.first_number() + i,
            escape(&first.title),
            first.document_path,
            first.document_type
        ));
        for res in hits {
            let (before, after) = neighbours(res);
            let quote = |c: &ContextChunk| format!("     > *{}*\n", escape(&context_line(c)));
            // The citation stays outside the code span, as pandoc reads `[@key, p. 12]`.
            md.push_str(&format!(
                "   - *{}* — `{}`{} · {}\n     > {}\n",
                escape(&res.section_path.join(" › ")),
                place(res),
                res.cite().map(|c| format!(" {c}")).unwrap_or_default(),
                scores(r, res),
                match &res.text {
                    Some(text) => escape(text),
                    None => marked_with(res, "**", "**", escape),
                }
                .replace('\n', " ")
            ));
            // Context below the fragment, in reading order, marked before/after.
            for c in before.into_iter().chain(after) {
                md.push_str(&quote(c));
            }
        }
    }
    if groups.is_empty() {
        md.push_str("\nNo documents matched.\n");
    }
    md
}

/// Markdown-escapes the characters that would change a line's meaning.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '|' | '\\'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// " · 2024-03-05" for a dated document, nothing otherwise (text and markdown headers).
fn date_suffix(hit: &SearchResult) -> String {
    hit.date
        .as_deref()
        .map(|d| format!(" · {d}"))
        .unwrap_or_default()
}
