//! Presentation: a ranked hit becomes a result with breadcrumb, location, snippet and
//! highlight offsets. Highlights are offsets, never markup, so no front end has to trust
//! document text as HTML.

use std::collections::{BTreeMap, BTreeSet};

use super::corpus::Corpus;
use super::fuse::Hit;
use super::request::Plan;
use super::response::{ContextChunk, Facets, Highlight, RankingSignals, SearchResult, SOURCE_TYPE};
use crate::analyze::Analyzer;

/// Longest snippet, in characters, before the ellipses.
pub const SNIPPET_CHARS: usize = 240;
/// How much text to keep before the first match, so it is read in context.
const LEAD_CHARS: usize = 40;

/// A ranked hit as the contract's result. `rerank` is the rerank stage's probability when it
/// scored this hit; `score` is the final ordering score; `plan` says whether to add context
/// and the chunk's (trimmed) text.
pub fn result(
    corpus: &Corpus,
    analyzer: &Analyzer,
    terms: &[String],
    hit: &Hit,
    score: f32,
    rerank: Option<f32>,
    plan: &Plan,
) -> SearchResult {
    let max_chars = plan.max_chars_per_chunk;
    let meta = corpus.chunk(hit.chunk);
    let doc = corpus.document(corpus.doc_of(hit.chunk));
    let (snippet, highlights) = snippet(analyzer, corpus.text(hit.chunk), terms);
    let pages = meta.location.page_span;
    SearchResult {
        document_path: doc.path.clone(),
        chunk_index: meta.chunk_index,
        chunk_id: meta.id.clone(),
        title: doc.title.clone(),
        section_path: meta.location.section_path.clone(),
        anchor: meta.location.anchor.clone(),
        line_start: meta.location.line_start,
        line_end: meta.location.line_end,
        page_start: pages.map(|p| p.start),
        page_end: pages.map(|p| p.end),
        snippet,
        highlights,
        score,
        source_type: SOURCE_TYPE.to_owned(),
        document_type: doc.doc_type.clone(),
        date: doc.date.clone(),
        created: doc.created.clone(),
        date_source: doc.date_source,
        file_size: doc.file_size,
        ranking_signals: RankingSignals {
            lexical: hit.lexical,
            semantic: hit.semantic,
            rerank,
            features: None,
        },
        citation: doc.citation.clone(),
        text: max_chars.map(|n| trim_chars(corpus.text(hit.chunk), n)),
        context: plan
            .include_context
            .then(|| context(corpus, hit.chunk, max_chars)),
    }
}

/// `text` with whitespace collapsed, cut to at most `max` characters at a word boundary
/// (within the last fifth; else mid-word) with `…` appended where it was cut.
pub fn trim_chars(text: &str, max: usize) -> String {
    let flat = collapse_whitespace(text);
    if flat.chars().count() <= max {
        return flat;
    }
    let keep = max.saturating_sub(1); // room for the ellipsis
    let chars: Vec<char> = flat.chars().collect();
    let mut end = keep;
    if let Some(p) = chars[..keep].iter().rposition(|c| *c == ' ') {
        if p >= keep - keep / 5 && p > 0 {
            end = p;
        }
    }
    let mut out: String = chars[..end].iter().collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// The chunks just before and after `chunk` in its document.
fn context(corpus: &Corpus, chunk: u32, max_chars: Option<usize>) -> Vec<ContextChunk> {
    let (first, count) = corpus.doc_span(corpus.doc_of(chunk));
    let last = first + count; // exclusive
    let mut out = Vec::new();
    let mut push = |c: u32, position: &str| {
        let m = corpus.chunk(c);
        out.push(ContextChunk {
            position: position.to_owned(),
            chunk_index: m.chunk_index,
            chunk_id: m.id.clone(),
            section_path: m.location.section_path.clone(),
            anchor: m.location.anchor.clone(),
            line_start: m.location.line_start,
            line_end: m.location.line_end,
            page_start: m.location.page_span.map(|p| p.start),
            page_end: m.location.page_span.map(|p| p.end),
            text: match max_chars {
                Some(n) => trim_chars(corpus.text(c), n),
                None => corpus.text(c).to_owned(),
            },
        });
    };
    if chunk > first {
        push(chunk - 1, "before");
    }
    if chunk + 1 < last {
        push(chunk + 1, "after");
    }
    out
}

/// Documents by type and by month.
pub fn facets(corpus: &Corpus, documents: &[u32]) -> Facets {
    if let Some((ids, types, months)) = corpus.facet_ids() {
        // Counted by number, named once.
        let mut by_type = vec![0usize; types.len()];
        let mut by_month = vec![0usize; months.len() + 1];
        for &d in documents {
            let (t, m) = ids[d as usize];
            by_type[t as usize] += 1;
            by_month[m as usize] += 1;
        }
        let named = |names: &[String], counts: &[usize]| {
            let mut out = BTreeMap::new();
            for (k, &n) in names.iter().zip(counts).filter(|(_, &n)| n > 0) {
                *out.entry(k.clone()).or_insert(0) += n;
            }
            out
        };
        return Facets {
            document_types: named(types, &by_type),
            dates: named(months, &by_month[1..]),
            undated: by_month[0],
        };
    }
    let mut document_types = Tally::default();
    let mut dates = Tally::default();
    let mut undated = 0;
    for &d in documents {
        let (doc_type, month) = corpus.facet_keys(d);
        document_types.add(doc_type);
        match month {
            Some(month) => dates.add(month),
            None => undated += 1,
        }
    }
    Facets {
        document_types: document_types.counts(),
        dates: dates.counts(),
        undated,
    }
}

/// Counts by key, for keys that come in runs (a collection has a few document types, and
/// neighbouring documents often share their month): the last key is compared first, and a
/// key is copied only the first time the map sees it.
#[derive(Default)]
struct Tally<'a> {
    last: Option<(&'a str, usize)>,
    map: BTreeMap<String, usize>,
}

impl<'a> Tally<'a> {
    fn add(&mut self, key: &'a str) {
        match &mut self.last {
            Some((k, n)) if *k == key => *n += 1,
            last => {
                if let Some((k, n)) = last.replace((key, 1)) {
                    self.flush(k, n);
                }
            }
        }
    }

    fn flush(&mut self, key: &str, n: usize) {
        match self.map.get_mut(key) {
            Some(count) => *count += n,
            None => {
                self.map.insert(key.to_owned(), n);
            }
        }
    }

    fn counts(mut self) -> BTreeMap<String, usize> {
        if let Some((k, n)) = self.last.take() {
            self.flush(k, n);
        }
        self.map
    }
}

/// The window of `text` (whitespace collapsed) that holds the most distinct query terms,
/// cut at word boundaries, with `…` where text was cut, and the matches' char offsets in it.
pub fn snippet(analyzer: &Analyzer, text: &str, terms: &[String]) -> (String, Vec<Highlight>) {
    let flat: Vec<char> = collapse_whitespace(text).chars().collect();
    let wanted: BTreeSet<&str> = terms.iter().map(String::as_str).collect();
    let flat_str: String = flat.iter().collect();
    let matches: Vec<(usize, usize, String)> = analyzer
        .tokens(&flat_str)
        .into_iter()
        .filter(|t| wanted.contains(t.term.as_str()))
        .map(|t| (t.start, t.end, t.term))
        .collect();

    let mut start = 0;
    let mut best = 0;
    for (i, m) in matches.iter().enumerate() {
        let from = m.0.saturating_sub(LEAD_CHARS);
        let distinct: BTreeSet<&str> = matches[i..]
            .iter()
            .take_while(|n| n.1 <= from + SNIPPET_CHARS)
            .map(|n| n.2.as_str())
            .collect();
        if distinct.len() > best {
            best = distinct.len();
            start = from;
        }
    }
    let mut end = (start + SNIPPET_CHARS).min(flat.len());
    if start > 0 {
        // Start after a space so the snippet does not open mid-word.
        if let Some(p) = flat[start..end].iter().position(|c| *c == ' ') {
            if p < LEAD_CHARS {
                start += p + 1;
            }
        }
    }
    if end < flat.len() {
        if let Some(p) = flat[start..end].iter().rposition(|c| *c == ' ') {
            if p > 0 {
                end = start + p;
            }
        }
    }
    let prefix = if start > 0 { "…" } else { "" };
    let suffix = if end < flat.len() { "…" } else { "" };
    let shift = prefix.chars().count();
    let snippet = format!(
        "{prefix}{}{suffix}",
        flat[start..end].iter().collect::<String>()
    );
    let highlights = matches
        .iter()
        .filter(|m| m.0 >= start && m.1 <= end)
        .map(|m| Highlight {
            start: m.0 - start + shift,
            end: m.1 - start + shift,
        })
        .collect();
    (snippet, highlights)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An entry of the final order: its position in the fused head, its score, and the second
/// stage model's probability where one scored it.
pub type Entry = (usize, f32, Option<f32>);

/// Present: the request's page of `order` (entries by position in the fused `head`, with
/// their scores and the model's probability), each made a result, with its feature row
/// where the host asked for them.
pub fn page(
    corpus: &Corpus,
    analyzer: &Analyzer,
    plan: &Plan,
    matched: &[String],
    head: &[Hit],
    (order, mut features): (Vec<Entry>, Vec<Vec<f32>>),
) -> Vec<SearchResult> {
    let page = match plan.by_document {
        false => order
            .into_iter()
            .skip(plan.offset)
            .take(plan.limit)
            .collect(),
        true => documents_page(corpus, head, order, plan.offset, plan.limit),
    };
    page.into_iter()
        .map(|(i, score, rerank)| {
            let mut r = result(corpus, analyzer, matched, &head[i], score, rerank, plan);
            r.ranking_signals.features = features.get_mut(i).map(std::mem::take);
            r
        })
        .collect()
}

/// The entries of `order` whose document is among the `limit` documents after the first
/// `offset` (documents ranked by their best entry).
fn documents_page<T>(
    corpus: &Corpus,
    hits: &[Hit],
    order: Vec<(usize, T, Option<f32>)>,
    offset: usize,
    limit: usize,
) -> Vec<(usize, T, Option<f32>)> {
    // Each document's rank, by the order of its best entry (0 = not seen yet).
    let mut rank_of = vec![0u32; corpus.n_docs()];
    let mut seen = 0u32;
    order
        .into_iter()
        .filter(|(i, _, _)| {
            let d = corpus.doc_of(hits[*i].chunk) as usize;
            if rank_of[d] == 0 {
                seen += 1;
                rank_of[d] = seen;
            }
            (offset..offset + limit).contains(&(rank_of[d] as usize - 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlights_point_at_the_matched_words() {
        let a = Analyzer::new();
        let text = "Intro words. ".repeat(30)
            + "Set the cache size in the configuration file. "
            + &"Tail. ".repeat(40);
        let (snip, hl) = snippet(&a, &text, &a.terms("cache configuration"));
        let chars: Vec<char> = snip.chars().collect();
        let words: Vec<String> = hl
            .iter()
            .map(|h| chars[h.start..h.end].iter().collect())
            .collect();
        assert_eq!(words, vec!["cache", "configuration"]);
        assert!(snip.starts_with('…') && snip.ends_with('…'));
        assert!(chars.len() <= SNIPPET_CHARS + 2);
    }

    #[test]
    fn trimmed_text_ends_at_a_word_with_an_ellipsis_and_never_exceeds_the_limit() {
        let text = "The  quick brown\nfox jumps over the lazy dog.";
        assert_eq!(
            trim_chars(text, 100),
            "The quick brown fox jumps over the lazy dog."
        );
        assert_eq!(trim_chars(text, 20), "The quick brown fox…");
        for n in 1..50 {
            assert!(trim_chars(text, n).chars().count() <= n, "{n}");
        }
        // No space near the end: cut mid-word rather than lose most of the budget.
        assert_eq!(trim_chars("a bcdefghijklmnopqrstuvwxyz", 10), "a bcdefgh…");
        assert_eq!(trim_chars("Привет мир и всем", 11), "Привет мир…");
    }

    #[test]
    fn no_match_gives_the_opening() {
        let a = Analyzer::new();
        let (snip, hl) = snippet(&a, "Short\n\ntext here.", &a.terms("nothing"));
        assert_eq!(snip, "Short text here.");
        assert!(hl.is_empty());
    }
}
